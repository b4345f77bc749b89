"""The daemon's publisher table: entries run in order inside the revision's transaction.

Each entry receives the revision's outcome record and what the entries
before it wrote (the advisory id, the outbox rows), so a later publisher can
be registered without touching the others; one that raises takes the whole
revision with it, and the retry records it once.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from storage import Database, advisories, deliveries, has_revision
from storage.models import Base, UTCDateTime
from storage.records import Publication, RevisionOutcome
from tests.daemon.conftest import run_until_idle, track_all
from tracker.alerts.registry import save_subscription
from tracker.alerts.spec import parse_subscription
from tracker.daemon import Daemon, publisher
from tracker.demo import HISTORIES
from tracker.hub.api import connect
from tracker.hub.client import Hub
from tracker.hub.discovery import HeadProbe
from tracker.hubsim import HubEmulator
from tracker.revision.process import Publishers
from tracker.schedule.metrics import DaemonMetrics
from tracker.schedule.worker import Worker, WorkerPolicy
from tracker.settings import HubSettings, Settings

pytestmark = pytest.mark.parametrize("hub_emulator", [{"corpus": None}], indirect=True)

REPO = "publish/llama2-7b"
LLAMA2 = HISTORIES / "neurarch-demo" / "llama2-7b" / "7dba8667ad27534931d66b826bbdc7b31fad885c"
START = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)


def config(**override: object) -> bytes:
    document = json.loads((LLAMA2 / "config.json").read_text())
    return json.dumps({**document, **override}, indent=2).encode()


class Clock:
    def __init__(self) -> None:
        self.now = datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.now


class Audit:
    """A later publisher: notes what it was handed and writes nothing."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, Publication]] = []

    def __call__(
        self, session: Session, outcome: RevisionOutcome, publication: Publication
    ) -> Publication:
        self.seen.append((outcome.revision.sha, publication))
        return publication


class FailsOnce:
    """A publisher whose first call raises, as a database error inside the transaction would."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(
        self, session: Session, outcome: RevisionOutcome, publication: Publication
    ) -> Publication:
        self.calls += 1
        if self.calls == 1:
            raise RuntimeError("publisher failed")
        return publication


def worker(
    database: Database, hub: HubEmulator, tmp_path: Path, clock: Clock, table: Publishers
) -> Worker:
    return Worker(
        database,
        Hub(connect(HubSettings(hub.endpoint)), max_retries=2, timeout=5.0),
        HeadProbe(connect(HubSettings(hub.endpoint))),
        owner="publish/0",
        policy=WorkerPolicy(interval_s=60.0, max_backoff_s=600.0, lease_s=60.0),
        metrics=DaemonMetrics(),
        clock=clock,
        publish=table,
    )


def daemon_table(database: Database, tmp_path: Path, clock: Clock) -> Publishers:
    settings = Settings.in_dir(tmp_path)
    daemon = Daemon(settings=settings, config=settings.daemon, database=database, clock=clock)
    return daemon.with_alerts(publisher(clock))


def subscribe(database: Database, at: datetime = START) -> int:
    document: dict[str, Any] = {
        "name": "fit",
        "repos": [REPO],
        "method": "serve",
        "batch": 4,
        "seq_len": "max",
        "cards": ["L4"],
        "alert_on": ["fit"],
    }
    with database.session() as session:
        return save_subscription(session, parse_subscription(document), now=at)[0].id


def test_a_later_publisher_sees_the_advisory_and_alerts_written_before_it(
    database: Database, hub_emulator: HubEmulator, tmp_path: Path
) -> None:
    subscription = subscribe(database)
    audit = Audit()
    clock = Clock()
    table = daemon_table(database, tmp_path, clock).plus("audit", audit)
    hub_emulator.publish(REPO, {"config.json": config()}, date=START)
    track_all(database, [REPO], clock.now)
    checks = worker(database, hub_emulator, tmp_path, clock, table)
    run_until_idle(checks)
    longer = hub_emulator.publish(
        REPO, {"config.json": config(max_position_embeddings=4096)}, date=START + timedelta(1)
    )
    clock.now += timedelta(minutes=2)
    run_until_idle(checks)

    assert table.names == ("advisories", "alerts", "audit")
    sha, publication = audit.seen[-1]
    with database.read_session() as session:
        (advisory,) = [a for a in advisories(session, repo_id=REPO) if a.new_sha == longer]
        queued = [d for d in deliveries(session, subscription) if d.sha == longer]
    assert sha == longer and publication.advisory_id == advisory.id
    assert publication.deliveries == tuple(d.id for d in queued) and len(queued) == 1
    assert queued[0].advisory_id == advisory.id
    assert [p.advisory_id for _, p in audit.seen[:-1]] == [None, None]  # initial commit, upload


def test_a_failing_publisher_leaves_nothing_and_the_retry_records_the_revision_once(
    database: Database, hub_emulator: HubEmulator, tmp_path: Path
) -> None:
    subscription = subscribe(database)
    clock = Clock()
    hub_emulator.publish(REPO, {"config.json": config()}, date=START)
    track_all(database, [REPO], clock.now)
    fails = FailsOnce()
    table = daemon_table(database, tmp_path, clock)
    checks = worker(database, hub_emulator, tmp_path, clock, table)
    run_until_idle(checks)
    longer = hub_emulator.publish(
        REPO, {"config.json": config(max_position_embeddings=4096)}, date=START + timedelta(1)
    )
    checks.publish = table.plus("fails-once", fails)
    clock.now += timedelta(minutes=2)
    run_until_idle(checks)

    with database.read_session() as session:
        assert not has_revision(session, REPO, longer)
        assert [a.new_sha for a in advisories(session, repo_id=REPO)] == []
        assert deliveries(session, subscription) == []
    clock.now += timedelta(hours=1)  # past the backoff
    run_until_idle(checks)

    assert fails.calls == 2
    with database.read_session() as session:
        assert has_revision(session, REPO, longer)
        assert [a.new_sha for a in advisories(session, repo_id=REPO)] == [longer]
        assert [d.event_key for d in deliveries(session, subscription)] == [f"{REPO}@{longer}/fit"]


FAKE = datetime(2031, 5, 6, 7, 8, 9, tzinfo=UTC)
STEP = timedelta(minutes=2)
HUB_TIMES = {"revisions.date", "poll_state.last_modified"}
"""Timestamps the Hub reported (commit dates, Last-Modified), stored as they came."""


def stored_times(database: Database) -> dict[str, set[datetime]]:
    """Every timestamp stored in any table, by ``table.column``."""
    found: dict[str, set[datetime]] = {}
    with database.read_session() as session:
        for table in Base.metadata.sorted_tables:
            for column in table.columns:
                if isinstance(column.type, UTCDateTime):
                    values = {v for v in session.scalars(select(column)) if v is not None}
                    if values:
                        found[f"{table.name}.{column.name}"] = values
    return found


def test_a_processed_revision_stores_only_the_fake_clocks_times(
    database: Database, hub_emulator: HubEmulator, tmp_path: Path
) -> None:
    clock = Clock()
    clock.now = FAKE  # years from the wall clock, so one reading of it would show
    subscribe(database, at=FAKE)
    hub_emulator.publish(REPO, {"config.json": config()}, date=START)
    track_all(database, [REPO], clock.now)
    checks = worker(
        database, hub_emulator, tmp_path, clock, daemon_table(database, tmp_path, clock)
    )
    run_until_idle(checks)
    hub_emulator.publish(
        REPO, {"config.json": config(max_position_embeddings=4096)}, date=START + timedelta(1)
    )
    clock.now += STEP
    run_until_idle(checks)

    stored = stored_times(database)
    # what each revision's transaction wrote is the clock's reading when it was processed
    assert stored["revisions.processed_at"] == {FAKE, FAKE + STEP}
    assert stored["blobs.created_at"] == {FAKE, FAKE + STEP}
    assert stored["advisories.published"] == stored["advisories.modified"] == {FAKE + STEP}
    assert stored["deliveries.created_at"] == {FAKE + STEP}
    # and nothing else the daemon stored came from another clock
    earlier = {
        name: sorted(values)
        for name, values in stored.items()
        if name not in HUB_TIMES and min(values) < FAKE
    }
    assert earlier == {}
