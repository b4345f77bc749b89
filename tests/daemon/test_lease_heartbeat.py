"""A revision slower to prepare than the lease is still recorded, once, by the worker that began it.

A lease renewed only at commit would be lost by every revision that takes longer
to fetch than ``[daemon] lease``, and such a revision would never be recorded. Here the
lease is a second or two and the emulator answers every file download late,
so preparing takes several leases: the heartbeat must keep the lease, and a
revision past its budget must be recorded partial, with a finding, followed by
the revision after it.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from datetime import UTC, datetime
from typing import Any

import pytest

import tracker.schedule.worker as worker_module
from storage import (
    Database,
    changes_of,
    claim_due_repos,
    poll_states,
    release_lease,
    revisions,
)
from tests.daemon.conftest import track_all
from tests.fixtures.hostile import llama_config
from tracker.hub.api import connect
from tracker.hub.client import Hub
from tracker.hub.discovery import HeadProbe
from tracker.hubsim import HubEmulator
from tracker.schedule.heartbeat import Heartbeat
from tracker.schedule.leases import LeaseLost, claim_due, renew
from tracker.schedule.metrics import DaemonMetrics
from tracker.schedule.worker import Worker, WorkerPolicy
from tracker.settings import HubSettings

REPO = "slow/many-files"
FILES = 20
LATENCY_S = 0.15


def many_files() -> dict[str, bytes]:
    files = {
        f"extra/part-{index:03d}.json": json.dumps({"part": index}).encode()
        for index in range(FILES)
    }
    files["config.json"] = llama_config()
    return files


def worker(database: Database, hub: HubEmulator, policy: WorkerPolicy, owner: str) -> Worker:
    return Worker(
        database,
        Hub(connect(HubSettings(hub.endpoint)), max_retries=2, timeout=10.0),
        HeadProbe(connect(HubSettings(hub.endpoint))),
        owner=owner,
        policy=policy,
        metrics=DaemonMetrics(),
        clock=lambda: datetime.now(UTC),
    )


def lease_lost(metrics: DaemonMetrics) -> float:
    return float(metrics.checks.labels(outcome="lease_lost")._value.get())


def test_a_revision_that_takes_several_leases_to_prepare_is_recorded(
    database: Database, hub_emulator: HubEmulator
) -> None:
    head = hub_emulator.publish(REPO, many_files(), title="2,000 files, in small")
    hub_emulator.faults.latency(LATENCY_S, endpoint="resolve")  # ~3 s of downloads
    track_all(database, [REPO])
    first = worker(database, hub_emulator, WorkerPolicy(lease_s=1.0), "slow/0")

    assert first.run_once()

    with database.read_session() as session:
        recorded = [r.sha for r in revisions(session, REPO)]
        state = next(s for s in poll_states(session) if s.repo_id == REPO)
    assert lease_lost(first.metrics) == 0
    assert recorded[0] == head
    assert (state.last_seen_sha, state.failures) == (head, 0)


def test_a_revision_past_its_budget_is_recorded_partial_and_the_next_one_follows(
    database: Database, hub_emulator: HubEmulator
) -> None:
    slow = hub_emulator.publish(REPO, many_files(), title="too many to fetch in time")
    after = hub_emulator.publish(
        REPO, {"config.json": llama_config(note="recover")}, title="recover"
    )
    hub_emulator.faults.latency(LATENCY_S, endpoint="resolve")
    track_all(database, [REPO])
    policy = WorkerPolicy(lease_s=1.0, revision_budget_s=1.0)
    check = worker(database, hub_emulator, policy, "slow/0")

    assert check.run_once()

    with database.read_session() as session:
        recorded = [r.sha for r in revisions(session, REPO)]
        [incomplete] = [c for c in changes_of(session, REPO, slow) if c.kind == "incomplete"]
    assert recorded[:2] == [after, slow]
    assert lease_lost(check.metrics) == 0
    skipped = incomplete.new["texts"]
    assert 0 < len(skipped) < FILES + 1
    assert all(path.endswith(".json") for path in skipped)
    assert "time budget ran out" in incomplete.message


def test_a_worker_whose_lease_was_taken_over_while_preparing_writes_nothing(
    database: Database,
    hub_emulator: HubEmulator,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    hub_emulator.publish(REPO, {"config.json": llama_config()}, title="one")
    track_all(database, [REPO])
    first = worker(database, hub_emulator, WorkerPolicy(lease_s=60.0), "first/0")
    real_prepare = worker_module.prepare

    def prepare_then_lose_the_lease(*args: Any, **kwargs: Any) -> Any:
        prepared = real_prepare(*args, **kwargs)
        with database.session() as session:  # another worker holds the repo now
            assert release_lease(session, REPO, "first/0")
            assert claim_due_repos(session, "second/0", datetime.now(UTC), 1, 60)
        return prepared

    monkeypatch.setattr(worker_module, "prepare", prepare_then_lose_the_lease)
    with caplog.at_level(logging.INFO, logger="neurarch.worker"):
        assert first.run_once()

    assert lease_lost(first.metrics) == 1
    # the commit's fence said so itself: not a failed check
    events = [
        json.loads(r.getMessage())["event"] for r in caplog.records if r.name == "neurarch.worker"
    ]
    assert events == ["lease_lost"]
    with database.read_session() as session:
        assert revisions(session, REPO) == []
        [state] = [s for s in poll_states(session) if s.repo_id == REPO]
    assert state.lease_owner == "second/0"


def test_the_heartbeat_stops_renewing_past_its_bound(database: Database) -> None:
    track_all(database, [REPO])
    [claim] = claim_due(database, "slow/0", now=datetime.now(UTC), lease_s=0.3, limit=1)
    clock = lambda: datetime.now(UTC)  # noqa: E731
    heartbeat = Heartbeat(database, lease_s=0.3, clock=clock)
    with heartbeat.renewing(claim, until=time.monotonic() + 0.6) as beat:
        time.sleep(1.5)  # past the bound and then a lease more
    heartbeat.close()
    with database.session() as session, pytest.raises(LeaseLost):
        renew(session, claim, now=datetime.now(UTC), lease_s=0.3)
    assert 3 <= beat.beats <= 7  # a beat every 0.1 s for 0.6 s, then none
    assert not beat.lost


def test_one_heartbeat_thread_renews_every_revision_of_a_worker(database: Database) -> None:
    track_all(database, [REPO])
    [claim] = claim_due(database, "reused/0", now=datetime.now(UTC), lease_s=0.3, limit=1)
    clock = lambda: datetime.now(UTC)  # noqa: E731
    heartbeat = Heartbeat(database, lease_s=0.3, clock=clock, name="heartbeat reused/0")
    beats = []
    for _ in range(3):
        with heartbeat.renewing(claim, until=time.monotonic() + 5) as beat:
            time.sleep(0.25)  # two beats are due, at 0.1 s and 0.2 s
        beats.append(beat.beats)
    threads = [t for t in threading.enumerate() if t.name == "heartbeat reused/0"]
    heartbeat.close()
    assert all(1 <= count <= 2 for count in beats)
    assert len(threads) == 1
    assert not threads[0].is_alive()
    with database.session() as session:
        renew(session, claim, now=datetime.now(UTC), lease_s=0.3)  # still ours
