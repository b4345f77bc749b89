"""One hostile repo must never stop the daemon: a real ``serve`` over a hostile corpus.

Every template, config and webhook body of ``tests.fixtures.hostile`` is
published to (or sent at) a daemon backfilling from the emulator, while a
prober asks /healthz four times a second. The promises: /healthz answers
within a second throughout, every published revision is recorded (with a
finding where its content could not be evaluated), and every hostile webhook
body is refused with a 4xx while stored data stays intact.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from storage import (
    Database,
    advisories,
    changes_of,
    latest_revision,
    open_database,
    revision_log,
    revisions,
    snapshot_at,
    tracked_repos,
    tracking_summary,
)
from storage.publishing import model_page
from tests.daemon.conftest import MakeWorker, run_until_idle, track_all
from tests.daemon.harness import START, DaemonProcess, caught_up, free_port, wait_for, write_config
from tests.fixtures.hostile import (
    HOSTILE_CONFIGS,
    HOSTILE_REVISIONS,
    HOSTILE_TEMPLATES,
    HOSTILE_WEBHOOK_BODIES,
    llama_config,
    oversized_body,
)
from tracker.hubsim import HubEmulator, estimator_tensor_shapes
from tracker.reads.documents import history_document

SECRET = "hostile-secret"
TEMPLATE_REPOS = 3
HEALTH_BUDGET_S = 1.0


def published_corpus(hub: HubEmulator) -> dict[str, int]:
    """Publish the hostile corpus; how many commits each repo holds (its upload included)."""
    date = START
    commits: dict[str, int] = {}

    def commit(repo_id: str, files: dict[str, bytes], title: str) -> None:
        nonlocal date
        date += timedelta(minutes=1)
        hub.publish(repo_id, files, title=title, date=date, author="mallory")
        commits[repo_id] = commits.get(repo_id, 1) + 1

    names = sorted(HOSTILE_TEMPLATES)
    for index, name in enumerate(names):
        repo_id = f"hostile/templates-{index % TEMPLATE_REPOS}"
        template = {"chat_template": HOSTILE_TEMPLATES[name], "eos_token": "</s>"}
        files = {"tokenizer_config.json": json.dumps(template).encode()}
        if repo_id not in commits:
            files["config.json"] = llama_config()
        commit(repo_id, files, f"template: {name}")
    for name, body in sorted(HOSTILE_CONFIGS.items()):
        commit("hostile/configs", {"config.json": body}, f"config: {name}")
    return commits


class HealthProber:
    """Asks /healthz on a fixed beat and keeps every answer's latency (None: no answer)."""

    def __init__(self, url: str, every_s: float = 0.25) -> None:
        self.url = url
        self.every_s = every_s
        self.latencies: list[float | None] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with httpx.Client(timeout=10) as client:
            while not self._stop.is_set():
                started = time.monotonic()
                try:
                    ok = client.get(self.url).status_code == 200
                except httpx.HTTPError:
                    ok = False
                self.latencies.append(time.monotonic() - started if ok else None)
                self._stop.wait(self.every_s)

    def __enter__(self) -> HealthProber:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(timeout=15)


def refused_status(url: str, body: bytes | Iterator[bytes]) -> int:
    """The status a hostile body gets; a receiver that hangs up mid-upload counts as 413."""
    headers = {"X-Webhook-Secret": SECRET, "Content-Type": "application/json"}
    try:
        return httpx.post(url, content=body, headers=headers, timeout=30).status_code
    except (httpx.RemoteProtocolError, httpx.WriteError, httpx.ReadError):
        if isinstance(body, bytes):
            raise
        return 413


@pytest.fixture
def hub() -> Iterator[HubEmulator]:
    emulator = HubEmulator(None, tensor_shapes=estimator_tensor_shapes, seed=11)
    emulator.start()
    try:
        yield emulator
    finally:
        emulator.stop()


@pytest.mark.slow  # corpus-wide: over 20 s
def test_hostile_corpus_never_stalls_the_daemon_and_every_revision_is_recorded(
    tmp_path: Path, hub: HubEmulator
) -> None:
    commits = published_corpus(hub)
    repos = sorted(commits)
    url = f"sqlite:///{tmp_path / 'hostile.db'}"
    port = free_port()
    config = write_config(
        tmp_path / "daemon.toml",
        database_url=url,
        endpoint=hub.endpoint,
        repos=repos,
        port=port,
        secret=SECRET,
    )
    database = open_database(url)
    database.migrate()
    daemon = DaemonProcess(config, tmp_path / "daemon.log").start()
    base = f"http://127.0.0.1:{port}"
    try:
        daemon.wait_ready()
        with HealthProber(f"{base}/healthz") as prober:
            statuses = {
                name: refused_status(f"{base}/webhooks/huggingface", body)
                for name, body in HOSTILE_WEBHOOK_BODIES.items()
            }
            statuses["200 MB body"] = refused_status(
                f"{base}/webhooks/huggingface", oversized_body(200 * 1024 * 1024)
            )
            wait_for(lambda: caught_up(database, hub, repos), 600, "the hostile backfill", [daemon])
        assert daemon.terminate() == 0
        with database.read_session() as session:
            recorded = {
                r.repo_id: len(revision_log(session, r.repo_id)) for r in tracked_repos(session)
            }
            stored_repos = {r.repo_id for r in tracked_repos(session)}
    finally:
        if daemon.alive():
            daemon.kill()
        database.close()

    answered = [latency for latency in prober.latencies if latency is not None]
    print(
        f"\n/healthz: {len(prober.latencies)} probes, {len(answered)} answered, "
        f"max {max(answered):.3f}s; webhook statuses {statuses}"
    )
    assert len(answered) == len(prober.latencies) > 10
    assert max(answered) < HEALTH_BUDGET_S
    assert recorded == commits
    assert stored_repos == set(repos)
    assert {name: 400 <= status < 500 for name, status in statuses.items()} == dict.fromkeys(
        statuses, True
    )
    assert statuses["200 MB body"] == 413


def published_revisions(hub: HubEmulator) -> dict[str, tuple[str, list[str]]]:
    """Each hostile revision in a repo of its own: clean commit, hostile commit, "recover".

    name -> (repo id, its shas oldest first).
    """
    repos: dict[str, tuple[str, list[str]]] = {}
    date = START
    for index, (name, hostile) in enumerate(sorted(HOSTILE_REVISIONS.items())):
        repo_id = f"hostile/revision-{index:02d}"
        shas = []
        for files, title, when in (
            ({"config.json": llama_config()}, "initial", None),
            (hostile.files, hostile.title, hostile.date),
            ({"config.json": llama_config(note=f"recover {index}")}, "recover", None),
        ):
            date += timedelta(minutes=1)
            shas.append(hub.publish(repo_id, files, title=title, date=when or date, author="eve"))
        repos[name] = (repo_id, shas)
    return repos


def test_every_hostile_revision_and_the_recover_revision_after_it_are_recorded(
    database: Database, hub_emulator: HubEmulator, make_worker: MakeWorker
) -> None:
    repos = published_revisions(hub_emulator)
    track_all(database, [repo_id for repo_id, _ in repos.values()])
    run_until_idle(make_worker())

    recorded: dict[str, list[str]] = {}
    newest: dict[str, str | None] = {}
    with database.read_session() as session:
        summary = tracking_summary(session)
        for name, (repo_id, _) in repos.items():
            recorded[name] = [r.sha for r in revisions(session, repo_id)]
            latest = latest_revision(session, repo_id)
            newest[name] = None if latest is None else latest.sha
            # Every reader of what was stored answers, in text any client can print.
            page = model_page(session, repo_id)
            assert page.summary.latest is not None
            json.dumps(page.card, ensure_ascii=False).encode()
            for advisory in advisories(session, repo_id=repo_id):
                json.dumps(dict(advisory.osv), ensure_ascii=False).encode()
    for repo_id, _ in repos.values():
        json.dumps(history_document(database, repo_id), ensure_ascii=False).encode()

    # newest first by main's chain, whatever date a commit carries; below them the
    # repo's creation commit
    assert {name: shas[:3] for name, shas in recorded.items()} == {
        name: shas[::-1] for name, (_, shas) in repos.items()
    }
    assert {len(shas) for shas in recorded.values()} == {4}
    assert newest == {name: shas[-1] for name, (_, shas) in repos.items()}
    assert (summary.backfill_pending, summary.failing) == (0, 0)


def test_a_repaired_revision_says_what_was_repaired(
    database: Database, hub_emulator: HubEmulator, make_worker: MakeWorker
) -> None:
    repos = published_revisions(hub_emulator)
    track_all(database, [repo_id for repo_id, _ in repos.values()])
    run_until_idle(make_worker())
    found: dict[str, Any] = {}
    with database.read_session() as session:
        for name in ("NUL in the commit title", "lone surrogate as the card's license"):
            repo_id, shas = repos[name]
            stored = snapshot_at(session, repo_id, shas[1])
            [finding] = [
                c for c in changes_of(session, repo_id, shas[1]) if c.kind == "unstorable_text"
            ]
            found[name] = (stored.revision.title, stored.card.get("license"), finding.new)
        repo_id, shas = repos["path over 1,024 characters"]
        long_paths = [f.path for f in snapshot_at(session, repo_id, shas[1]).files]
    assert found == {
        "NUL in the commit title": (
            "fix\ufffd the config",
            None,
            {"repaired": ["commit title"], "dropped_paths": []},
        ),
        "lone surrogate as the card's license": (
            "hostile",
            "\ufffd",
            {"repaired": ["model card"], "dropped_paths": []},
        ),
    }
    assert "notes/" + "n" * 1100 + ".txt" in long_paths
