"""A person at a terminal: the real CLI, a daemon's own check loop and webhook intake, one emulator.

``Person`` runs ``neurarch-trace`` commands in-process (``tracker.cli.main``, the
function the console script calls) against a fresh database (SQLite or PostgreSQL)
and the Hub emulator through the real huggingface_hub client, and reads what the
person would read: stdout, stderr, the exit code. ``serve`` is the daemon's own
parts, not a copy of them: its check workers (``tracker.schedule.worker.Worker``) with the
publisher table ``serve`` registers, the webhook endpoint of the feeds app on a
loopback server, and the inbox drain, run until nothing is due.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import huggingface_hub.constants
import pytest
import uvicorn
from fastapi import FastAPI

from feeds.webhooks import PATH, create_webhook_router
from storage import Database, open_database
from tests.daemon.harness import free_port
from tracker.cli import main
from tracker.daemon import revision_publishers, utc_now
from tracker.hub.api import connect
from tracker.hub.client import Hub
from tracker.hub.discovery import HeadProbe
from tracker.hubsim import HubEmulator
from tracker.schedule.inbox import drain
from tracker.schedule.leases import track as follow
from tracker.schedule.metrics import DaemonMetrics
from tracker.schedule.worker import Worker, WorkerPolicy
from tracker.settings import HubSettings, Settings

WEBHOOK_SECRET = "journey-webhook-secret"
MISTRAL = "mistralai/Mistral-7B-Instruct-v0.3"
"""The repo whose `track` then `serve` published a false 'everything removed' advisory."""


@dataclass(frozen=True)
class Said:
    """What one command printed and returned."""

    code: int
    out: str
    err: str


@dataclass
class Person:
    """One user's terminal and daemon over one database and one emulator."""

    emulator: HubEmulator
    database_url: str
    config: Path
    capsys: pytest.CaptureFixture[str]
    days: int = 0
    """Each ``serve`` runs a day after the last, so every tracked repo is due again."""
    _database: Database | None = field(default=None, repr=False)

    @property
    def database(self) -> Database:
        if self._database is None:
            self._database = open_database(self.database_url)
            self._database.migrate()
        return self._database

    def run(self, *argv: str) -> Said:
        """``neurarch-trace ARGV`` as typed, in this process."""
        self.capsys.readouterr()
        code = main(list(argv))
        captured = self.capsys.readouterr()
        return Said(code, captured.out, captured.err)

    def serve(self, *, track: tuple[str, ...] = (), stop_after: int | None = None) -> int:
        """The daemon until nothing is due (or, with ``stop_after``, shut down after that
        many revisions, as SIGTERM stops a backfill); how many revisions it recorded.
        ``track`` is ``serve --track REPO``: followed without the CLI recording anything."""
        self.days += 1
        now = datetime.now(UTC) + timedelta(days=self.days)
        with self.database.session() as session:
            for repo_id in track:
                follow(session, repo_id, now=now)
        drain(self.database, now=now)
        stop = threading.Event()
        recorded: list[str] = []
        table = revision_publishers(Settings.load(self.config), utc_now).plus(
            "count", _counting(recorded, stop, stop_after)
        )
        worker = Worker(
            self.database,
            Hub(connect(HubSettings(self.emulator.endpoint)), max_retries=1, timeout=10.0),
            HeadProbe(connect(HubSettings(self.emulator.endpoint))),
            owner=f"journey/{self.days}",
            policy=WorkerPolicy(interval_s=3600.0, max_backoff_s=600.0, lease_s=120.0),
            metrics=DaemonMetrics(),
            clock=lambda: now,
            publish=table,
            stop=stop,
        )
        checks = 0
        while not stop.is_set() and worker.run_once():
            checks += 1
            assert checks < 1000, "the daemon never ran out of due work"
        return len(recorded)

    def webhook(self, repo_id: str) -> int:
        """The Hub's webhook for a push to ``repo_id``'s main, posted to the daemon's endpoint."""
        head = self.emulator.head(repo_id)
        body = {
            "event": {"action": "update", "scope": "repo.content"},
            "repo": {"type": "model", "name": repo_id, "id": f"id-{repo_id}", "headSha": head},
            "updatedRefs": [{"ref": "refs/heads/main", "oldSha": "0" * 40, "newSha": head}],
            "webhook": {"id": "6521f0e3a1b2c3d4e5f60719", "version": 3},
        }
        with _webhook_endpoint(self.database) as url:
            response = httpx.post(url, json=body, headers={"X-Webhook-Secret": WEBHOOK_SECRET})
        return response.status_code


def _counting(recorded: list[str], stop: threading.Event, stop_after: int | None) -> Any:
    """A last publisher entry that writes nothing: it counts the revisions committed and, at
    ``stop_after``, asks the worker to stop (it finishes this revision, releases the rest)."""

    def count(session: Any, outcome: Any, publication: Any) -> Any:
        recorded.append(outcome.revision.sha)
        if stop_after is not None and len(recorded) >= stop_after:
            stop.set()
        return publication

    return count


@contextlib.contextmanager
def _webhook_endpoint(database: Database) -> Iterator[str]:
    app = FastAPI()
    app.include_router(create_webhook_router(database, secret=WEBHOOK_SECRET))
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}{PATH}"
    finally:
        server.should_exit = True
        thread.join(10)


def write_config(path: Path, database_url: str, endpoint: str) -> Path:
    path.write_text(
        f"""
[storage]
database_url = {json.dumps(database_url)}

[hub]
endpoint = {json.dumps(endpoint)}

[server]
host = "127.0.0.1"
port = 8080
public_url = "https://trace.example.org"
webhook_secret = {json.dumps(WEBHOOK_SECRET)}
""",
        encoding="utf-8",
    )
    return path


@pytest.fixture
def person(
    hub_emulator: HubEmulator,
    database_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> Iterator[Person]:
    config = write_config(tmp_path / "neurarch.toml", database_url, hub_emulator.endpoint)
    monkeypatch.setenv("NEURARCH_CONFIG", str(config))
    monkeypatch.setenv("HF_ENDPOINT", hub_emulator.endpoint)
    monkeypatch.setenv("NEURARCH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("NEURARCH_DATABASE_URL", raising=False)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    someone = Person(hub_emulator, database_url, config, capsys)
    try:
        yield someone
    finally:
        if someone._database is not None:
            someone._database.close()


__all__ = ["MISTRAL", "WEBHOOK_SECRET", "Person", "Said", "write_config"]
