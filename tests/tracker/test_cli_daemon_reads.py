"""``history`` and ``diff`` print the same bytes whether a running daemon answers or storage does.

The daemon is the real app (``Daemon.build_app``) on a real uvicorn server on a free
loopback port, over a database the real CLI backfilled from the Hub emulator. Each
command runs twice with the same arguments: once configured for a port nothing listens
on (storage is read directly), once for the daemon's port.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import uvicorn

from tests.daemon.harness import REPO_ROOT, free_port
from tracker.cli import main
from tracker.daemon import Daemon
from tracker.hubsim import HubEmulator
from tracker.reads.local_daemon import DATABASE_HEADER, PATH, ask, database_digest
from tracker.settings import Settings

REPO = "meta-llama/Llama-2-7b-hf"
HEAVY = ("sqlalchemy", "storage", "huggingface_hub", "fastapi", "alembic", "feeds", "estimator")


@contextlib.contextmanager
def daemon_app(settings: Settings, port: int) -> Iterator[str]:
    """The daemon's HTTP app over ``settings``' database, served on ``port`` until the block ends."""
    daemon = Daemon.open(settings)
    config = uvicorn.Config(
        daemon.build_app(), host="127.0.0.1", port=port, log_level="warning", lifespan="off"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
        daemon.stop()


def config_for(path: Path, port: int) -> Path:
    path.write_text(f'[server]\nhost = "127.0.0.1"\nport = {port}\n')
    return path


def printed(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def recorded(
    monkeypatch: pytest.MonkeyPatch,
    hub_emulator: HubEmulator,
    database_url: str,
    capsys: pytest.CaptureFixture[str],
) -> list[str]:
    """Shas of REPO, newest first, recorded through ``track --backfill``."""
    monkeypatch.setenv("HF_ENDPOINT", hub_emulator.endpoint)
    monkeypatch.setenv("NEURARCH_DATABASE_URL", database_url)
    monkeypatch.delenv("NEURARCH_CONFIG", raising=False)
    assert main(["track", REPO, "--backfill"]) == 0
    capsys.readouterr()
    return [revision.sha for revision in hub_emulator.history(REPO)]


def test_both_ways_print_the_same_bytes_and_exit_codes(
    recorded: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    newest, parent, oldest = recorded[0], recorded[1], recorded[-1]
    argvs = [
        ["history", REPO],
        ["history", REPO, "--json"],
        ["diff", REPO, parent[:9], newest],  # stored changes
        ["diff", REPO, parent, newest, "--json"],
        ["diff", REPO, oldest[:10], newest[:10]],  # recomputed from snapshots
        ["diff", REPO, oldest, newest, "--json"],
        ["diff", REPO, newest[:10], oldest[:10]],  # reversed: refused, exit 2
        ["diff", REPO, "0000000", newest],  # no such revision
        ["history", "never/tracked"],
        ["history", "not a repo"],
    ]
    direct = config_for(tmp_path / "direct.toml", free_port())
    served_port = free_port()
    served = config_for(tmp_path / "served.toml", served_port)
    by_storage = [printed(capsys, ["--config", str(direct), *argv]) for argv in argvs]
    with daemon_app(Settings.load(served), served_port):
        by_daemon = [printed(capsys, ["--config", str(served), *argv]) for argv in argvs]
        answer = ask(Settings.load(served), "history", {"repo": REPO})
    assert answer is not None and answer[0]["sha"] == newest  # the daemon did answer
    assert by_daemon == by_storage
    codes = [code for code, _, _ in by_storage]
    assert codes == [0, 0, 1, 1, 1, 1, 2, 2, 2, 2]
    assert by_storage[0][1].startswith(newest[:12])
    assert json.loads(by_storage[3][1])["new"] == newest


def test_an_answered_command_imports_no_storage_and_prints_what_storage_prints(
    recorded: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    port = free_port()
    config = config_for(tmp_path / "served.toml", port)
    argv = ["--config", str(config), "diff", REPO, recorded[1], recorded[0]]
    probe = (
        "import json, sys\n"
        "import tracker.cli\n"
        f"code = tracker.cli.main({argv!r})\n"
        "print(json.dumps([code, sorted(sys.modules)]))"
    )
    with daemon_app(Settings.load(config), port):
        child = subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO_ROOT, check=True
        )
    *lines, last = child.stdout.splitlines()
    code, modules = json.loads(last)
    loaded = {name.split(".")[0] for name in modules}
    assert sorted(loaded.intersection(HEAVY)) == []
    assert (code, "".join(line + "\n" for line in lines)) == printed(capsys, argv)[:2]


def test_a_daemon_of_another_database_is_not_asked(
    recorded: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    port = free_port()
    config = config_for(tmp_path / "served.toml", port)
    other = Settings.load(config, {"NEURARCH_DATABASE_URL": f"sqlite:///{tmp_path / 'other.db'}"})
    with daemon_app(other, port) as url:
        answered = httpx.get(
            url + PATH + "history",
            params={"repo": REPO},
            headers={DATABASE_HEADER: database_digest(Settings.load(config).storage.database_url)},
        )
        code, out, _ = printed(capsys, ["--config", str(config), "history", REPO])
    assert answered.status_code == 409
    assert code == 0 and out.startswith(recorded[0][:12])  # read from its own database


def test_only_a_direct_loopback_request_is_answered(recorded: list[str], tmp_path: Path) -> None:
    port = free_port()
    config = config_for(tmp_path / "served.toml", port)
    settings = Settings.load(config)
    digest = {DATABASE_HEADER: database_digest(settings.storage.database_url)}
    with daemon_app(settings, port) as url:
        direct = httpx.get(url + PATH + "history", params={"repo": REPO}, headers=digest)
        proxied = httpx.get(
            url + PATH + "history",
            params={"repo": REPO},
            headers={**digest, "X-Forwarded-For": "203.0.113.7"},
        )
        unknown = httpx.get(url + PATH + "track", params={"repo": REPO}, headers=digest)
    assert direct.status_code == 200 and direct.json()[0]["sha"] == recorded[0]
    assert proxied.status_code == 403
    assert unknown.status_code == 404
