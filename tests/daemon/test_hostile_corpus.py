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

import httpx
import pytest

from storage import open_database, revision_log, tracked_repos
from tests.daemon.harness import START, DaemonProcess, caught_up, free_port, wait_for, write_config
from tests.fixtures.hostile import (
    HOSTILE_CONFIGS,
    HOSTILE_TEMPLATES,
    HOSTILE_WEBHOOK_BODIES,
    llama_config,
    oversized_body,
)
from tracker.hubsim import HubEmulator, estimator_tensor_shapes

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
