"""A transient Hub fault costs one request, not the check; an answer is never retried.

The real huggingface_hub client, through ``Hub`` and ``HeadProbe``, against the Hub
emulator with its seeded transient mix (500, 503, 429, resets, cut bodies) at a high
rate over the demo histories: every injected fault is followed by the same request
again, no check fails, and the stored state equals a clean run's. Not-found, gated and
bad-request answers cost exactly one request.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx2
import pytest
from huggingface_hub.errors import HfHubHTTPError

from storage import Database, open_database, poll_states
from tests.fixtures.stored_state import canonical_state, differences, revision_count
from tracker.demo import HISTORIES
from tracker.errors import Gated, HubError, HubUnavailable, RateLimited, RepoGone
from tracker.hub.api import connect
from tracker.hub.client import Hub
from tracker.hub.discovery import HeadProbe
from tracker.hub.retry import Retrying, RetryPolicy, is_transient
from tracker.hubsim import HubEmulator, TransientMix, estimator_tensor_shapes
from tracker.schedule.leases import track
from tracker.schedule.metrics import DaemonMetrics
from tracker.schedule.worker import Worker, WorkerPolicy
from tracker.settings import HubSettings

FAST = RetryPolicy(attempts=12, base_s=0.005, cap_s=0.05, total_s=30.0)
"""Many short tries: at a 50% fault rate, twelve in a row fail once in 4,096 requests."""


def backfill(endpoint: str, database: Database, retrying: Retrying) -> None:
    """Track every demo repo and check them all with one in-process worker."""
    with database.session() as session:
        for repo_id in HubEmulator(HISTORIES).repo_ids():
            track(session, repo_id, now=datetime.now(UTC))
    worker = Worker(
        database,
        Hub(connect(HubSettings(endpoint)), retrying=retrying),
        HeadProbe(connect(HubSettings(endpoint)), retrying=retrying),
        owner="retries/0",
        policy=WorkerPolicy(),
        metrics=DaemonMetrics(),
        clock=lambda: datetime.now(UTC),
    )
    while worker.run_once():
        pass


@pytest.fixture
def demo_hub() -> Iterator[HubEmulator]:
    emulator = HubEmulator(HISTORIES, tensor_shapes=estimator_tensor_shapes)
    emulator.start()
    try:
        yield emulator
    finally:
        emulator.stop()


def stored_after_backfill(tmp_path: Path, name: str, emulator: HubEmulator) -> dict[str, Any]:
    database = open_database(f"sqlite:///{tmp_path / name}")
    database.migrate()
    try:
        retrying = Retrying(FAST, rng=random.Random(3))
        backfill(emulator.endpoint, database, retrying)
        with database.read_session() as session:
            failed = [(s.repo_id, s.last_error) for s in poll_states(session) if s.failures]
        assert failed == []
        return canonical_state(database)
    finally:
        database.close()


def test_every_injected_fault_is_retried_and_the_state_equals_the_clean_run(
    tmp_path: Path, demo_hub: HubEmulator
) -> None:
    clean = stored_after_backfill(tmp_path, "clean.db", demo_hub)
    clean_requests = demo_hub.stats.requests()

    faulty_hub = HubEmulator(HISTORIES, tensor_shapes=estimator_tensor_shapes)
    mix: TransientMix = faulty_hub.faults.transient_mix(
        0.5, seed=11, retry_after=0, slow_s=(0.0, 0.0)
    )
    faulty_hub.start()
    try:
        faulty = stored_after_backfill(tmp_path, "faulty.db", faulty_hub)
    finally:
        faulty_hub.stop()

    assert revision_count(clean) == 16
    assert differences(faulty, clean) == []
    assert faulty == clean
    failing = [i for i in mix.injected if i.kind != "slow"]
    assert len(failing) >= 0.3 * clean_requests
    assert {i.kind for i in failing} == {"500", "503", "429", "reset", "truncate"}
    not_retried = [i for i in failing if mix.sent(i.request) <= i.occurrence + 1]
    assert not_retried == []
    # Nothing but the faulted requests was sent again: each fault cost one request.
    assert faulty_hub.stats.requests() == clean_requests + len(failing)


def test_not_found_is_one_request(demo_hub: HubEmulator) -> None:
    hub = Hub(connect(HubSettings(demo_hub.endpoint)))
    with pytest.raises(RepoGone):
        hub.head_sha("nobody/nothing")
    with pytest.raises(RepoGone):
        HeadProbe(connect(HubSettings(demo_hub.endpoint))).head("nobody/nothing")
    with pytest.raises(RepoGone):
        hub.commits("nobody/nothing")
    assert demo_hub.stats.requests() == 3
    assert hub.retrying.retries == 0


def test_gated_files_are_one_request(demo_hub: HubEmulator) -> None:
    hub = Hub(connect(HubSettings(demo_hub.endpoint)))
    repo_id = demo_hub.repo_ids()[0]
    sha = hub.head_sha(repo_id)
    (entry,) = [f for f in hub.files(repo_id, sha).files if f.path == "config.json"]
    demo_hub.set_gated(repo_id, "manual")
    demo_hub.stats.reset()
    with pytest.raises(Gated):
        hub.read_text(repo_id, sha, entry, 1 << 20)
    with pytest.raises(Gated):
        hub.safetensors_header(repo_id, sha, entry)
    assert [(r.kind, r.status) for r in demo_hub.stats.records()] == [
        ("resolve", 401),
        ("resolve", 401),
    ]


def test_bad_request_is_one_request(demo_hub: HubEmulator) -> None:
    demo_hub.faults.errors(times=None, status=400, endpoint="model_info")  # type: ignore[arg-type]
    hub = Hub(connect(HubSettings(demo_hub.endpoint)))
    with pytest.raises(HubError, match="HTTP 400"):
        hub.head_sha(demo_hub.repo_ids()[0])
    assert demo_hub.stats.by_status() == {400: 1}


def test_a_429_waits_its_retry_after_then_succeeds(demo_hub: HubEmulator) -> None:
    slept: list[float] = []
    hub = Hub(
        connect(HubSettings(demo_hub.endpoint)),
        retrying=Retrying(RetryPolicy(), sleep=slept.append),
    )
    demo_hub.faults.rate_limit(times=2, retry_after=7, endpoint="commits")
    assert hub.commits(demo_hub.repo_ids()[0])
    assert len(slept) == 2 and all(7 <= s < 7.5 for s in slept)
    assert demo_hub.stats.by_status()[429] == 2


def test_a_retry_after_past_the_budget_gives_up_at_once_with_the_hint(
    demo_hub: HubEmulator,
) -> None:
    slept: list[float] = []
    policy = RetryPolicy(total_s=5.0)
    hub = Hub(
        connect(HubSettings(demo_hub.endpoint)), retrying=Retrying(policy, sleep=slept.append)
    )
    demo_hub.faults.rate_limit(times=1, retry_after=60, endpoint="model_info")
    with pytest.raises(RateLimited) as caught:
        hub.head_sha(demo_hub.repo_ids()[0])
    assert caught.value.retry_after == 60
    assert slept == [] and demo_hub.stats.requests() == 1


def test_a_persistent_outage_stops_after_the_attempts(demo_hub: HubEmulator) -> None:
    slept: list[float] = []
    policy = RetryPolicy(attempts=4, base_s=1.0, cap_s=3.0)
    hub = Hub(
        connect(HubSettings(demo_hub.endpoint)), retrying=Retrying(policy, sleep=slept.append)
    )
    demo_hub.faults.error_rate(1.0, status=503, endpoint="model_info")
    with pytest.raises(HubUnavailable, match="HTTP 503"):
        hub.head_sha(demo_hub.repo_ids()[0])
    assert demo_hub.stats.by_status() == {503: 4}
    # Full jitter: each wait is drawn below its window, 1 s then 2 s then 3 s (the cap).
    assert len(slept) == 3
    assert all(0 <= wait < window for wait, window in zip(slept, (1.0, 2.0, 3.0), strict=True))


def test_the_total_budget_bounds_one_request() -> None:
    now = [0.0]
    calls = []

    def sleep(seconds: float) -> None:
        now[0] += seconds

    def request() -> None:
        calls.append(now[0])
        now[0] += 4.0  # each try takes 4 s
        raise httpx2.ReadTimeout("slow")

    retrying = Retrying(
        RetryPolicy(attempts=100, base_s=1.0, cap_s=1.0, total_s=10.0),
        sleep=sleep,
        clock=lambda: now[0],
    )
    with pytest.raises(httpx2.ReadTimeout):
        retrying.call(request)
    assert len(calls) == 3  # 0 s, ~4-5 s, ~8-10 s; a fourth would start past 10 s
    assert now[0] <= 10.0 + 4.0


def test_answers_are_not_transient_and_outages_are() -> None:
    def http_error(status: int) -> HfHubHTTPError:
        request = httpx2.Request("GET", "http://hub.invalid/api/models/a/b")
        return HfHubHTTPError("x", response=httpx2.Response(status, request=request))

    assert [s for s in (400, 401, 403, 404, 409, 416) if is_transient(http_error(s))] == []
    assert all(is_transient(http_error(s)) for s in (408, 429, 500, 502, 503, 504))
    assert is_transient(httpx2.RemoteProtocolError("peer closed connection"))
    assert is_transient(httpx2.ReadError("connection reset"))
    assert not is_transient(ValueError("not JSON"))
