"""Fixtures of the daemon suites: an in-process worker against the emulator."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import event

from storage import Database
from tracker.hub.api import connect
from tracker.hub.client import Hub
from tracker.hub.discovery import HeadProbe
from tracker.hubsim import HubEmulator
from tracker.schedule.leases import track
from tracker.schedule.metrics import DaemonMetrics
from tracker.schedule.worker import Worker, WorkerPolicy
from tracker.settings import HubSettings

MakeWorker = Callable[..., Worker]


@pytest.fixture
def make_worker(database: Database, hub_emulator: HubEmulator) -> MakeWorker:
    """Workers on the test database, pointed at the emulator, with a clock the test controls."""

    def build(
        owner: str = "test/0",
        *,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        interval_s: float = 3600.0,
        metrics: DaemonMetrics | None = None,
    ) -> Worker:
        return Worker(
            database,
            Hub(connect(HubSettings(hub_emulator.endpoint)), max_retries=2, timeout=5.0),
            HeadProbe(connect(HubSettings(hub_emulator.endpoint))),
            owner=owner,
            policy=WorkerPolicy(interval_s=interval_s, max_backoff_s=600.0, lease_s=60.0),
            metrics=metrics or DaemonMetrics(),
            clock=clock,
        )

    return build


def track_all(database: Database, repos: list[str], now: datetime | None = None) -> None:
    with database.session() as session:
        for repo_id in repos:
            track(session, repo_id, now=now or datetime.now(UTC))


def run_until_idle(worker: Worker, limit: int = 10_000) -> int:
    """Check due repos until none is due; how many checks ran."""
    checks = 0
    while worker.run_once():
        checks += 1
        assert checks < limit, "the worker never ran out of due work"
    return checks


@dataclass
class Transactions:
    """The transactions the engine began since the last ``take``, each as the verbs of the
    statements it ran (SQLite's own ``BEGIN`` left out, so both backends count alike)."""

    began: list[list[str]] = field(default_factory=list)

    def take(self) -> list[list[str]]:
        taken = list(self.began)
        self.began.clear()
        return taken


@pytest.fixture
def transactions(database: Database) -> Iterator[Transactions]:
    counted = Transactions()

    def on_begin(conn: Any) -> None:
        counted.began.append([])

    def on_execute(
        conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool
    ) -> None:
        verb = statement.split(None, 1)[0].upper()
        if verb != "BEGIN":
            counted.began[-1].append(verb)

    event.listen(database.engine, "begin", on_begin)
    event.listen(database.engine, "before_cursor_execute", on_execute)
    try:
        yield counted
    finally:
        event.remove(database.engine, "before_cursor_execute", on_execute)
        event.remove(database.engine, "begin", on_begin)
