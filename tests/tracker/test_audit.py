"""`neurarch-trace audit`: pip-audit for models, against the Hub emulator and a real database.

The database is filled the way the daemon fills it (backfill over the recorded
corpus through the real huggingface_hub client, advisories built from what was
stored); pins come from the command line, a lock file, an HF cache populated by
real ``hf_hub_download`` calls and a small Python project. What "affected"
means is checked against the emulator's own history: every advisory whose
transition starts at or after the pinned revision, and no other.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import huggingface_hub.constants
import jsonschema
import pytest
import yaml
from cyclonedx.schema import SchemaVersion
from cyclonedx.validation.json import JsonStrictValidator
from huggingface_hub import hf_hub_download

from estimator import Workload, plan
from feeds import PublishSettings, create_app
from storage import open_database, put_advisory
from storage.records import Advisory, Severity
from tests.daemon.harness import DaemonProcess, free_port, write_config
from tests.feeds.conftest import ServerThread
from tests.feeds.populate import build_all
from tests.storage.builders import recorded_at
from tracker.audit import Finding, Origin, OsvServerAdvisories, Pin, PinReport, Published
from tracker.audit.advisories import CHUNK_BYTES, MAX_ANSWER_BYTES, AdvisoryServerError
from tracker.audit.render import to_markdown
from tracker.cli import main
from tracker.hub.api import connect
from tracker.hub.client import Hub
from tracker.hubsim import HubEmulator, estimator_tensor_shapes
from tracker.revision.backfill import backfill
from tracker.settings import HubSettings

REPOS = ("mistralai/Mistral-7B-v0.1", "meta-llama/Llama-2-7b-hf", "openai-community/gpt2")
SARIF_SCHEMA = Path(__file__).parents[1] / "data" / "sarif" / "sarif-2.1.0.json"
ACTION = Path(__file__).parents[2] / "deploy" / "github-action"


class World:
    """The emulator, the database it was backfilled into, and its advisories."""

    def __init__(self, emulator: HubEmulator, database_url: str, published: list[Advisory]):
        self.emulator = emulator
        self.database_url = database_url
        self.published = published

    def main_history(self, repo_id: str) -> list[str]:
        return [c.sha for c in reversed(self.emulator.history(repo_id))]

    def expected(self, repo_id: str, pinned: str) -> set[str]:
        """Advisory ids whose transition starts at or after ``pinned`` on main."""
        history = self.main_history(repo_id)
        at = history.index(pinned)
        return {
            a.id
            for a in self.published
            if a.repo_id == repo_id and a.old_sha in history and history.index(a.old_sha) >= at
        }


@contextmanager
def backfilled(corpus_dir: Path, data: Path, repos: Sequence[str]) -> Iterator[World]:
    """The emulator over the corpus and a database the way the daemon fills it: ``repos``
    backfilled, their advisories published."""
    emulator = HubEmulator(corpus_dir, tensor_shapes=estimator_tensor_shapes)
    emulator.start("127.0.0.1", 0)
    url = f"sqlite:///{data / 'neurarch-trace.db'}"
    database = open_database(url)
    database.migrate()
    hub = Hub(connect(HubSettings(emulator.endpoint)), max_retries=0)
    for repo_id in repos:
        backfill(database, hub, repo_id, clock=recorded_at)
    published = build_all(database)
    with database.session() as session:
        for advisory in published:
            put_advisory(session, advisory)
    database.close()
    try:
        yield World(emulator, url, published)
    finally:
        emulator.stop()


@pytest.fixture(scope="module")
def world(corpus_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    with backfilled(corpus_dir, tmp_path_factory.mktemp("audit-data"), REPOS) as built:
        yield built


@pytest.fixture
def env(world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> World:
    monkeypatch.setenv("HF_ENDPOINT", world.emulator.endpoint)
    monkeypatch.setenv("NEURARCH_DATABASE_URL", world.database_url)
    monkeypatch.setenv("NEURARCH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("NEURARCH_CONFIG", raising=False)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "plan-cache"))
    return world


def audit_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    capsys.readouterr()
    code = main(["audit", *argv, "--format", "json"])
    out = capsys.readouterr().out
    return code, json.loads(out)


def advisory_ids(report: dict[str, Any]) -> set[str]:
    return {f["advisory"]["id"] for f in report["findings"] if f["kind"] == "advisory"}


@pytest.mark.parametrize("repo_id", REPOS)
def test_an_old_pin_reports_every_advisory_published_after_it_and_exits_1(
    repo_id: str, env: World, capsys: pytest.CaptureFixture[str]
) -> None:
    history = env.main_history(repo_id)
    pinned = history[1]
    code, document = audit_json(capsys, f"{repo_id}@{pinned}")
    (report,) = document["pins"]
    assert code == 1
    assert report["revision"] == pinned
    assert report["newest"] == history[-1]
    assert report["behind"] == len(history) - 2
    assert advisory_ids(report) == env.expected(repo_id, pinned) != set()


def test_a_pin_at_the_newest_revision_is_clean_and_exits_0(
    env: World, capsys: pytest.CaptureFixture[str]
) -> None:
    repo_id = REPOS[0]
    head = env.main_history(repo_id)[-1]
    code, document = audit_json(capsys, f"{repo_id}@{head[:10]}")
    assert code == 0
    assert document["pins"][0]["findings"] == []
    assert document["pins"][0]["revision"] == head


def test_min_severity_above_every_finding_exits_0_and_a_branch_pin_resolves_on_the_hub(
    env: World, capsys: pytest.CaptureFixture[str]
) -> None:
    repo_id = "openai-community/gpt2"
    pinned = env.main_history(repo_id)[0]
    severities = {a.severity for a in env.published if a.repo_id == repo_id}
    assert max(severities).label == "high"
    capsys.readouterr()
    assert main(["audit", f"{repo_id}@{pinned}", "--min-severity", "critical"]) == 0
    code, document = audit_json(capsys, f"{repo_id}@main")
    assert code == 0
    assert document["pins"][0]["revision"] == env.main_history(repo_id)[-1]


def test_lock_file_pins_report_the_fit_now_and_at_the_newest_revision(
    env: World, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo_id = "mistralai/Mistral-7B-v0.1"
    history = env.main_history(repo_id)
    pinned = next(s for s in history if "config.json" in env.emulator.tree(repo_id, s))
    lock = tmp_path / "models.lock"
    lock.write_text(
        "# models this service loads\n"
        "[[model]]\n"
        f'repo = "{repo_id}"\n'
        f'revision = "{pinned}"\n'
        'workload = { method = "lora", batch = 4, seq_len = 4096 }\n'
        'cards = ["L4", "h100 80gb"]\n',
        encoding="utf-8",
    )
    code, document = audit_json(capsys, "--lock", str(lock))
    (report,) = document["pins"]
    assert code == 1
    assert report["origin"] == {"where": "lock file", "path": str(lock), "line": 2}
    workload = Workload(method="lora", batch=4, seq_len=4096)
    expected = []
    for card in ("L4", "H100 80GB"):
        fits = []
        for sha in (pinned, history[-1]):
            config = json.loads(env.emulator.tree(repo_id, sha)["config.json"].text() or b"")
            result = plan(config, workload)
            fits.append(next(c for c in result.cards if c.card.name == card).method("lora").fits)
        expected.append({"card": card, "fits_pinned": fits[0], "fits_newest": fits[1]})
    assert report["cards"] == expected


def test_every_revision_in_an_hf_cache_filled_by_hf_hub_download_is_audited(
    env: World, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = tmp_path / "hf-cache"
    pinned = {}
    for repo_id in REPOS:
        history = env.main_history(repo_id)
        sha = next(s for s in history[:-1] if "config.json" in env.emulator.tree(repo_id, s))
        hf_hub_download(
            repo_id, "config.json", revision=sha, cache_dir=cache, endpoint=env.emulator.endpoint
        )
        pinned[repo_id] = sha
    code, document = audit_json(capsys, "--hf-cache", str(cache))
    assert code == 1
    found = {r["repo_id"]: r for r in document["pins"]}
    assert {r: found[r]["revision"] for r in found} == pinned
    for repo_id, sha in pinned.items():
        assert advisory_ids(found[repo_id]) == env.expected(repo_id, sha)


def sample_project(root: Path, pins: dict[str, str]) -> Path:
    """A small project whose sources pin models the ways users write it."""
    (root / "app").mkdir(parents=True)
    mistral, llama, gpt2 = (pins[r] for r in REPOS)
    (root / "app" / "model.py").write_text(
        "from transformers import AutoModelForCausalLM, AutoTokenizer, pipeline\n"
        "from huggingface_hub import hf_hub_download\n"
        "\n"
        f'MODEL = AutoModelForCausalLM.from_pretrained("{REPOS[0]}", revision="{mistral}")\n'
        "name = 'x/y'\n"
        "dynamic = AutoTokenizer.from_pretrained(name)  # not a literal: not a pin\n"
        'local = AutoTokenizer.from_pretrained("./checkpoints/final")  # a path\n'
        f'path = hf_hub_download(repo_id="{REPOS[1]}", filename="config.json", revision="{llama}")\n'
        f'generate = pipeline("text-generation", model="{REPOS[2]}", revision="{gpt2}")\n',
        encoding="utf-8",
    )
    (root / "app" / "broken.py").write_text("def broken(:\n", encoding="utf-8")
    return root


def test_scan_src_finds_literal_pins_with_their_lines(
    env: World, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pins = {r: env.main_history(r)[1] for r in REPOS}
    project = sample_project(tmp_path / "project", pins)
    code, document = audit_json(capsys, "--scan-src", str(project))
    assert code == 1
    found = [(r["repo_id"], r["revision"], r["origin"]["line"]) for r in document["pins"]]
    assert found == [
        (REPOS[0], pins[REPOS[0]], 4),
        (REPOS[1], pins[REPOS[1]], 8),
        (REPOS[2], pins[REPOS[2]], 9),
    ]
    for report in document["pins"]:
        assert advisory_ids(report) == env.expected(report["repo_id"], report["revision"])


def test_sarif_validates_against_the_sarif_2_1_0_schema_and_points_at_each_pin(
    env: World, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pins = {r: env.main_history(r)[1] for r in REPOS}
    project = sample_project(tmp_path / "project", pins)
    out = tmp_path / "audit.sarif"
    code = main(
        [
            "audit",
            "--scan-src",
            str(project),
            "--format",
            "sarif",
            "--output",
            str(out),
            "--root",
            str(project),
        ]
    )
    assert code == 1
    log = json.loads(out.read_text("utf-8"))
    jsonschema.validate(log, json.loads(SARIF_SCHEMA.read_text("utf-8")))
    results = log["runs"][0]["results"]
    expected = sum(len(env.expected(r, pins[r])) for r in REPOS)
    assert len(results) == expected
    places = {
        (
            r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            r["locations"][0]["physicalLocation"]["region"]["startLine"],
        )
        for r in results
    }
    assert places == {("app/model.py", 4), ("app/model.py", 8), ("app/model.py", 9)}
    rules = log["runs"][0]["tool"]["driver"]["rules"]
    assert {r["ruleId"] for r in results} == {rule["id"] for rule in rules}


def test_cyclonedx_vex_validates_against_cyclonedx_1_6(
    env: World, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo_id = REPOS[1]
    pinned = env.main_history(repo_id)[1]
    capsys.readouterr()
    assert main(["audit", f"{repo_id}@{pinned}", "--format", "cyclonedx-vex"]) == 1
    text = capsys.readouterr().out
    assert JsonStrictValidator(SchemaVersion.V1_6).validate_str(text) is None
    bom = json.loads(text)
    assert (
        bom["components"][0]["purl"]
        == f"pkg:huggingface/{repo_id.split('/')[0]}/{repo_id.split('/')[1]}@{pinned}"
    )
    assert {v["id"] for v in bom["vulnerabilities"]} == env.expected(repo_id, pinned)
    assert {v["analysis"]["state"] for v in bom["vulnerabilities"]} == {"in_triage"}


@pytest.mark.parametrize(
    ("argv", "lock_text", "says"),
    [
        ((), None, "nothing to audit"),
        (("--lock", "{lock}"), "[[model]\n", "not valid TOML"),
        (
            ("--lock", "{lock}"),
            '[[model]]\nrepo = "a/b"\nrevison = "main"\n',
            "unknown keys ['revison']",
        ),
        (("--lock", "{lock}"), '[[model]]\nrepo = "a/b"\ncards = ["Z80"]\n', "unknown card 'Z80'"),
        (("--lock", "{lock}"), '[[model]]\nrepo = "../../etc"\n', "repo"),
        (("--lock", "{missing}"), None, "no such file"),
        (("a/b", "--method", "lora", "--card", "Z80"), None, "unknown card"),
    ],
)
def test_bad_input_exits_2_in_one_line(
    argv: tuple[str, ...],
    lock_text: str | None,
    says: str,
    env: World,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    lock = tmp_path / "models.lock"
    if lock_text is not None:
        lock.write_text(lock_text, encoding="utf-8")
    filled = [a.format(lock=lock, missing=tmp_path / "missing.lock") for a in argv]
    capsys.readouterr()
    assert main(["audit", *filled]) == 2
    err = capsys.readouterr().err
    assert says in err
    assert err.count("\n") == 1


def test_without_a_database_or_server_audit_says_what_to_do(
    env: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("NEURARCH_DATABASE_URL", f"sqlite:///{tmp_path / 'none.db'}")
    assert main(["audit", f"{REPOS[0]}@main"]) == 2
    assert "--server URL" in capsys.readouterr().err
    assert not (tmp_path / "none.db").exists()


@pytest.fixture(scope="module")
def web_server(world: World, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A second installation: `serve --role web` over the same database, on its own port."""
    where = tmp_path_factory.mktemp("web")
    port = free_port()
    config = write_config(
        where / "web.toml",
        database_url=world.database_url,
        endpoint=world.emulator.endpoint,
        repos=(),
        port=port,
    )
    server = DaemonProcess(config, where / "web.log", args=("--role", "web")).start()
    try:
        server.wait_ready()
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()


def test_audit_against_a_second_running_serve_equals_the_local_database(
    env: World, web_server: str, capsys: pytest.CaptureFixture[str]
) -> None:
    pins = [f"{r}@{env.main_history(r)[1]}" for r in REPOS]
    local = audit_json(capsys, *pins)
    remote = audit_json(capsys, *pins, "--server", web_server)
    assert remote == local
    assert local[0] == 1
    assert sum(len(advisory_ids(r)) for r in local[1]["pins"]) > 0


def action_step_environment(action: dict[str, Any], inputs: dict[str, str]) -> dict[str, str]:
    """The audit step's env as GitHub would fill it from ``inputs`` and the inputs' defaults."""
    values = {name: spec.get("default", "") for name, spec in action["inputs"].items()}
    values.update(inputs)
    (step,) = [s for s in action["runs"]["steps"] if s.get("name") == "Audit model pins"]
    assert step["run"] == 'bash "${{ github.action_path }}/audit.sh"'
    filled = {}
    for key, template in step["env"].items():
        name = template.removeprefix("${{ inputs.").removesuffix(" }}")
        filled[key] = values[name]
    return filled


def test_the_github_action_audit_step_writes_valid_sarif_and_fails_on_findings(
    env: World, web_server: str, tmp_path: Path
) -> None:
    action = yaml.safe_load((ACTION / "action.yml").read_text("utf-8"))
    assert action["runs"]["using"] == "composite"
    pins = {r: env.main_history(r)[1] for r in REPOS}
    project = sample_project(tmp_path / "checkout", pins)
    (project / "models.lock").write_text(
        f'[[model]]\nrepo = "{REPOS[0]}"\nrevision = "{pins[REPOS[0]]}"\n', encoding="utf-8"
    )
    step_env = action_step_environment(action, {"server": web_server, "min-severity": "high"})
    run_env = {
        **os.environ,
        **step_env,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "HF_ENDPOINT": env.emulator.endpoint,
        "NEURARCH_DATA_DIR": str(tmp_path / "data"),
    }
    run_env.pop("NEURARCH_DATABASE_URL", None)
    done = subprocess.run(
        ["bash", str(ACTION / "audit.sh")],
        cwd=project,
        env=run_env,
        capture_output=True,
        timeout=300,
    )
    assert done.returncode == 1, done.stderr
    log = json.loads((project / "neurarch-trace.sarif").read_text("utf-8"))
    jsonschema.validate(log, json.loads(SARIF_SCHEMA.read_text("utf-8")))
    uris = {
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        for r in log["runs"][0]["results"]
    }
    assert uris == {"app/model.py", "models.lock"}

    clean = {r: env.main_history(r)[-1] for r in REPOS}
    sample_project(tmp_path / "clean", clean)
    done = subprocess.run(
        ["bash", str(ACTION / "audit.sh")],
        cwd=tmp_path / "clean",
        env=run_env,
        capture_output=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    clean_log = json.loads((tmp_path / "clean" / "neurarch-trace.sarif").read_text("utf-8"))
    assert clean_log["runs"][0]["results"] == []


def test_markdown_cells_keep_arrows_and_neutralise_markup() -> None:
    hostile = Published(
        "x_1", "a/b", "1" * 40, "2" * 40, Severity.HIGH, "<script>x</script> | `a` -> b"
    )
    report = PinReport(
        Pin("a/b", "1" * 40, Origin("command line")),
        "1" * 40,
        "2" * 40,
        1,
        (Finding("advisory", Severity.HIGH, hostile.summary, hostile),),
    )
    text = to_markdown([report])
    assert "<script>" not in text
    assert "&lt;script>x&lt;/script> \\| \\`a\\` -> b" in text
    assert text.count("\n") == 3


def test_the_osv_client_follows_next_page_tokens_to_every_advisory(world: World) -> None:
    database = open_database(world.database_url)
    app = create_app(database, settings=PublishSettings(batch_page_size=2, query_page_size=2))
    try:
        with ServerThread().mount(app) as server:
            found = OsvServerAdvisories(server.url).for_repos(REPOS)
    finally:
        database.close()
    for repo_id in REPOS:
        expected = {a.id for a in world.published if a.repo_id == repo_id}
        assert len(expected) > 2
        assert {p.id for p in found[repo_id]} == expected


class HostileOsvHandler(BaseHTTPRequestHandler):
    """An OSV server that answers every way a client should not trust."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        if self.path == "/huge/v1/querybatch":
            self._send_chunked(b"[" + b" " * (MAX_ANSWER_BYTES + CHUNK_BYTES) + b"]")
        elif self.path == "/drip/v1/querybatch":
            self._send_chunked(b'{"results": [', pause=0.2)
        elif self.path == "/loop/v1/querybatch":
            page = {"vulns": [{"id": "NT-1"}], "next_page_token": "again"}
            self._send_chunked(json.dumps({"results": [page]}).encode())
        elif self.path == "/deep/v1/querybatch":
            self._send_chunked(b"[" * 10_000 + b"]" * 10_000)

    def _send_chunked(self, body: bytes, pause: float = 0.0) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        step = 1 if pause else 1 << 20
        try:
            for start in range(0, len(body), step):
                piece = body[start : start + step]
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                self.wfile.flush()
                time.sleep(pause)
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def hostile_osv() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), HostileOsvHandler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(
    ("path", "says"),
    [
        ("huge", f"the answer passed {MAX_ANSWER_BYTES:,} bytes"),
        ("drip", "the answer took over 1 s"),
        ("loop", "gave a/b the page token 'again' twice"),
        ("deep", "the answer is not JSON (nested more than 128 levels deep)"),
    ],
)
def test_a_hostile_osv_server_is_refused_in_bounded_time(
    hostile_osv: str, path: str, says: str
) -> None:
    started = time.monotonic()
    with pytest.raises(AdvisoryServerError, match=re.escape(says)):
        OsvServerAdvisories(f"{hostile_osv}/{path}", timeout=1.0).for_repos(["a/b"])
    assert time.monotonic() - started < 5
