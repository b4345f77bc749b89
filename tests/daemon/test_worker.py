"""Checks against the emulator: new revisions recorded once, unchanged repos cost one request,
and repo events (force-push, deletion, gating) reported and stored, never lost or crashed on."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import event

from storage import Database, RepoStatus, get_repo, poll_state, revision_log
from tests.daemon.conftest import MakeWorker, run_until_idle, track_all
from tracker.demo import HISTORIES
from tracker.hubsim import HubEmulator
from tracker.schedule.metrics import LAGGING_REPOS_SHOWN, DaemonMetrics

pytestmark = pytest.mark.parametrize("hub_emulator", [{"corpus": HISTORIES}], indirect=True)


class Clock:
    def __init__(self) -> None:
        self.now = datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


def recorded(database: Database, repo_id: str, on_main: bool = True) -> list[str]:
    with database.read_session() as session:
        return [r.revision.sha for r in revision_log(session, repo_id) if r.on_main == on_main]


def test_backfill_records_every_main_commit_of_every_repo_once(
    database: Database, hub_emulator: HubEmulator, make_worker: MakeWorker
) -> None:
    repos = hub_emulator.repo_ids()
    track_all(database, repos)
    worker = make_worker()
    assert run_until_idle(worker) == len(repos)
    for repo_id in repos:
        expected = {c.sha for c in hub_emulator.history(repo_id)}
        assert set(recorded(database, repo_id)) == expected
        with database.read_session() as session:
            assert poll_state(session, repo_id).last_seen_sha == hub_emulator.head(repo_id)
    assert worker.metrics.revisions._value.get() == sum(len(hub_emulator.history(r)) for r in repos)


def test_unchanged_repo_costs_exactly_one_request(
    database: Database, hub_emulator: HubEmulator, make_worker: MakeWorker
) -> None:
    clock = Clock()
    repo_id = hub_emulator.repo_ids()[0]
    track_all(database, [repo_id], clock.now)
    worker = make_worker(clock=clock, interval_s=60)
    run_until_idle(worker)
    hub_emulator.stats.reset()
    clock.advance(120)
    assert run_until_idle(worker) == 1
    assert hub_emulator.stats.requests() == 1
    assert hub_emulator.stats.by_kind() == {"model_info": 1}


def test_new_revision_is_recorded_on_the_next_check(
    database: Database, hub_emulator: HubEmulator, make_worker: MakeWorker
) -> None:
    clock = Clock()
    repo_id = hub_emulator.repo_ids()[0]
    track_all(database, [repo_id], clock.now)
    worker = make_worker(clock=clock, interval_s=60)
    run_until_idle(worker)
    before = len(recorded(database, repo_id))
    sha = hub_emulator.publish(repo_id, {"generation_config.json": b'{"eos_token_id": [1, 9]}'})
    clock.advance(120)
    run_until_idle(worker)
    assert sha in recorded(database, repo_id)
    assert len(recorded(database, repo_id)) == before + 1


def test_a_new_commit_on_a_recorded_history_costs_five_transactions_however_long_it_is(
    database: Database, hub_emulator: HubEmulator, make_worker: MakeWorker
) -> None:
    clock = Clock()
    repo_id = hub_emulator.repo_ids()[0]
    track_all(database, [repo_id], clock.now)
    worker = make_worker(clock=clock, interval_s=60)
    run_until_idle(worker)
    assert len(recorded(database, repo_id)) > 1
    sha = hub_emulator.publish(repo_id, {"generation_config.json": b'{"eos_token_id": [1, 9]}'})
    clock.advance(120)
    began: list[object] = []
    listener = began.append
    event.listen(database.engine, "begin", listener)
    try:
        run_until_idle(worker)
    finally:
        event.remove(database.engine, "begin", listener)
    assert recorded(database, repo_id)[0] == sha
    # claim; status and history check; the revision's read session and its write; the
    # check's end; then the claim that finds nothing more due. The recorded revisions
    # before the new one are skipped without a read.
    assert len(began) == 5 + 1


def test_force_push_is_reported_and_keeps_the_dropped_revision_off_main(
    database: Database,
    hub_emulator: HubEmulator,
    make_worker: MakeWorker,
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = Clock()
    repo_id = hub_emulator.repo_ids()[0]
    track_all(database, [repo_id], clock.now)
    metrics = DaemonMetrics()
    worker = make_worker(clock=clock, interval_s=60, metrics=metrics)
    doomed = hub_emulator.publish(repo_id, {"config.json": b'{"model_type": "llama"}'})
    run_until_idle(worker)
    new_head = hub_emulator.force_push(repo_id, drop=1)
    clock.advance(120)
    with caplog.at_level(logging.WARNING, logger="neurarch.events"):
        run_until_idle(worker)
    assert doomed in recorded(database, repo_id, on_main=False)
    assert new_head in recorded(database, repo_id)
    events = [json.loads(r.getMessage()) for r in caplog.records if r.name == "neurarch.events"]
    assert [(e["event"], e["shas"]) for e in events] == [("repo_force_push", [doomed])]
    assert metrics.events.labels(kind="force_push")._value.get() == 1


def test_deleted_repo_is_reported_once_and_its_history_kept(
    database: Database, hub_emulator: HubEmulator, make_worker: MakeWorker
) -> None:
    clock = Clock()
    repo_id = hub_emulator.repo_ids()[0]
    track_all(database, [repo_id], clock.now)
    metrics = DaemonMetrics()
    worker = make_worker(clock=clock, interval_s=60, metrics=metrics)
    run_until_idle(worker)
    kept = recorded(database, repo_id)
    hub_emulator.delete_repo(repo_id)
    for _ in range(3):
        clock.advance(120)
        run_until_idle(worker)
    with database.read_session() as session:
        assert get_repo(session, repo_id).status is RepoStatus.GONE
        assert poll_state(session, repo_id).failures == 0
    assert recorded(database, repo_id) == kept
    assert metrics.events.labels(kind="gone")._value.get() == 1


def test_gated_repo_is_reported_and_nothing_is_lost_when_access_returns(
    database: Database, hub_emulator: HubEmulator, make_worker: MakeWorker
) -> None:
    clock = Clock()
    repo_id = hub_emulator.repo_ids()[0]
    track_all(database, [repo_id], clock.now)
    worker = make_worker(clock=clock, interval_s=60)
    run_until_idle(worker)
    hub_emulator.set_gated(repo_id, "manual")
    while_gated = hub_emulator.publish(repo_id, {"config.json": b'{"model_type": "mistral"}'})
    clock.advance(120)
    run_until_idle(worker)
    with database.read_session() as session:
        assert get_repo(session, repo_id).status is RepoStatus.GATED
    hub_emulator.set_gated(repo_id, False)
    clock.advance(120)
    run_until_idle(worker)
    with database.read_session() as session:
        assert get_repo(session, repo_id).status is RepoStatus.ACTIVE
    assert while_gated in recorded(database, repo_id)


def test_hub_failure_backs_off_and_counts_the_error(
    database: Database, hub_emulator: HubEmulator, make_worker: MakeWorker
) -> None:
    clock = Clock()
    repo_id = hub_emulator.repo_ids()[0]
    track_all(database, [repo_id], clock.now)
    worker = make_worker(clock=clock)
    hub_emulator.faults.error_rate(1.0, status=500)
    run_until_idle(worker)
    with database.read_session() as session:
        state = poll_state(session, repo_id)
    assert state.failures == 1
    assert state.last_error is not None and "500" in state.last_error
    assert state.next_check_at - clock.now >= timedelta(seconds=60)
    assert state.lease_owner is None


def test_metrics_count_checks_hub_statuses_queue_depth_and_lag(
    database: Database, hub_emulator: HubEmulator, make_worker: MakeWorker
) -> None:
    from huggingface_hub.utils import set_client_factory
    from huggingface_hub.utils._http import default_client_factory
    from prometheus_client import generate_latest

    from tracker.hub.ratelimit import RateLimiter, install

    clock = Clock()
    repos = hub_emulator.repo_ids()
    track_all(database, repos, clock.now)
    metrics = DaemonMetrics()
    metrics.watch_storage(database, clock)
    install(RateLimiter(1000.0), observers=(metrics.observe_response,))
    try:
        clock.advance(90)
        before = generate_latest(metrics.registry).decode()
        assert f"neurarch_queue_depth {float(len(repos))}" in before
        assert "neurarch_queue_lag_seconds 90.0" in before
        assert before.count("neurarch_repo_lag_seconds{") == min(len(repos), LAGGING_REPOS_SHOWN)
        run_until_idle(make_worker(clock=clock, metrics=metrics))
    finally:
        set_client_factory(default_client_factory)  # the limiter is process-wide
    text = generate_latest(metrics.registry).decode()
    assert f'neurarch_checks_total{{outcome="ok"}} {float(len(repos))}' in text
    assert 'neurarch_hub_requests_total{status="200"}' in text
    assert "neurarch_queue_depth 0.0" in text
    assert "neurarch_queue_lag_seconds 0.0" in text
    assert "neurarch_repo_lag_seconds{" not in text  # no repo is late
