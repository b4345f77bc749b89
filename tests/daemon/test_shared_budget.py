"""One Hub budget shared by every instance: two pacers on one database stay within it."""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from bisect import bisect_left
from dataclasses import replace
from pathlib import Path

import pytest
from prometheus_client import generate_latest

from storage import Database, open_database
from tests.daemon.conftest import track_all
from tracker.daemon import Daemon
from tracker.errors import ConfigFileError
from tracker.hub.budget import HubBudget, budget_key, schedule_lag
from tracker.hub.ratelimit import RateLimiter
from tracker.hub.shared_budget import SharedBudget
from tracker.settings import Settings

KEY = budget_key("http://127.0.0.1:1", "hf_secret_token")


class FakeClock:
    """Wall and monotonic time at once; sleeping advances it."""

    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def most_in_any_window(times: list[float], window_s: float) -> int:
    ordered = sorted(times)
    return max(bisect_left(ordered, t + window_s) - i for i, t in enumerate(ordered))


def test_the_budget_setting_reads_requests_per_window() -> None:
    budget = HubBudget.parse("1000/5m", "daemon.hub_budget")
    assert (budget.requests, budget.window_s, budget.burst) == (1000, 300.0, 10)
    assert budget.burst + budget.rate * budget.window_s == pytest.approx(1000)
    assert HubBudget.parse("500 / 300s", "x") == HubBudget(500, 300.0)
    assert HubBudget.parse("20/1h", "x").window_s == 3600.0
    for bad in ("1000", "1000/5x", "1/5m", 1000, "-5/5m"):
        with pytest.raises(ConfigFileError, match=r"daemon\.hub_budget"):
            HubBudget.parse(bad, "daemon.hub_budget")


def test_the_key_names_the_host_and_never_holds_the_token() -> None:
    assert KEY.startswith("127.0.0.1:1/api/") and "hf_secret_token" not in KEY
    assert budget_key("https://huggingface.co", None) == "huggingface.co/api/anonymous"


def test_two_pacers_on_one_database_share_the_budget_on_a_fake_clock(
    database: Database,
) -> None:
    """Two instances, each free to send 100 requests a second on its own, alternate for
    6 simulated minutes; the account's 60 per minute holds in every minute."""
    clock = FakeClock()
    budget = HubBudget.parse("60/1m", "test")
    pacers = [
        RateLimiter(
            100.0,
            clock=clock,
            sleep=clock.sleep,
            shared=SharedBudget(database, KEY, budget, clock=clock),
        )
        for _ in range(2)
    ]
    sent: list[float] = []
    per_instance = [0, 0]
    start = clock.now
    while clock.now - start < 360:
        for index, pacer in enumerate(pacers):
            pacer.acquire()
            sent.append(clock.now)
            per_instance[index] += 1
    assert most_in_any_window(sent, 60.0) <= 60
    # the whole budget is used: burst + rate x 360 s, give or take a token
    assert len(sent) == pytest.approx(budget.burst + budget.rate * 360, abs=2)
    print(
        f"fake clock: {len(sent)} requests in 360 s, busiest minute {most_in_any_window(sent, 60.0)}"
    )
    assert min(per_instance) >= len(sent) // 2 - 1
    assert pacers[0].budget_waited_s > 0 and pacers[1].budget_waited_s > 0


def test_a_429_seen_by_one_instance_pauses_the_other(database: Database) -> None:
    clock = FakeClock()
    budget = HubBudget(1000, 300.0)
    shared = [SharedBudget(database, KEY, budget, clock=clock) for _ in range(2)]
    first, second = (RateLimiter(100.0, clock=clock, sleep=clock.sleep, shared=s) for s in shared)
    first.observe(
        429, {"RateLimit": '"api";r=0;t=55', "RateLimit-Policy": '"fixed window";"api";q=500;w=300'}
    )
    before = clock.now
    waited = second.acquire()
    assert clock.now - before == pytest.approx(55.0, abs=0.05)
    assert waited == pytest.approx(55.0, abs=0.05)
    state = shared[1].state()
    assert state is not None
    # the Hub's policy (500 per 300 s) was below the configured 1000: the shared rate follows it
    assert state.rate == pytest.approx(HubBudget(500, 300.0).rate)


@pytest.mark.postgres
def test_two_instances_with_real_threads_on_postgresql_stay_within_the_budget(
    postgres_schema_url: str,
) -> None:
    """Two instances (each its own engine and pool), two worker threads each, real time:
    every request they let through in 3.5 s, counted in every 2-second window."""
    first = open_database(postgres_schema_url)
    first.migrate()
    second = open_database(postgres_schema_url)
    budget = HubBudget.parse("20/2s", "test")
    granted: list[float] = []
    lock = threading.Lock()
    clocks = threading.local()

    def clock() -> float:
        clocks.last = time.time()
        return float(clocks.last)

    pacers = [
        RateLimiter(1000.0, shared=SharedBudget(db, KEY, budget, clock=clock))
        for db in (first, second)
    ]
    stop = time.monotonic() + 3.5

    def work(pacer: RateLimiter) -> None:
        while time.monotonic() < stop:
            pacer.acquire()
            with lock:
                granted.append(clocks.last)  # the time the token was taken at

    threads = [threading.Thread(target=work, args=(p,)) for p in pacers for _ in range(2)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
    finally:
        first.close()
        second.close()
    busiest = most_in_any_window(granted, 2.0)
    print(f"granted {len(granted)} in 3.5 s; busiest 2 s window {busiest} (budget 20)")
    assert busiest <= 20
    # the budget is used, not starved: burst + rate x 3.5 s is 33.5 tokens at most
    assert len(granted) >= 20


def test_the_schedule_lag_when_the_budget_cannot_cover_the_interval() -> None:
    rate = HubBudget.parse("1000/5m", "x").rate  # 3.3 requests per second
    assert schedule_lag(1000, 3600.0, 1.0, rate) == 0.0
    # 100,000 repos at one request each take 30,000 s at 3.3/s: 26,400 s late per round
    assert schedule_lag(100_000, 3600.0, 1.0, rate) == pytest.approx(100_000 / rate - 3600)


def test_the_daemon_reports_the_schedule_lag_when_the_budget_is_short(
    database: Database, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """100 repos every minute at 18 requests a minute: a round takes 333 s, 273 s late."""
    settings = Settings.in_dir(tmp_path)
    config = replace(settings.daemon, interval_s=60.0, hub_budget=HubBudget.parse("20/1m", "x"))
    track_all(database, [f"org/model-{n}" for n in range(100)])
    daemon = Daemon(settings=settings, config=config, database=database)
    with caplog.at_level(logging.WARNING, logger="neurarch.daemon"):
        limiter = daemon.rate_limiter()
    assert limiter.acquire() == 0.0  # a token of the shared budget, at once
    report = daemon.health()["hub_budget"]
    assert report["tracked"] == 100 and report["requests_per_check"] == 1.0
    assert report["schedule_lag_s"] == pytest.approx(100 / 0.3 - 60, rel=1e-6)
    scraped = generate_latest(daemon.metrics.registry).decode()
    lag = re.search(r"^neurarch_schedule_budget_lag_seconds (\S+)$", scraped, re.MULTILINE)
    assert lag is not None and float(lag[1]) == pytest.approx(100 / 0.3 - 60, rel=1e-6)
    assert "neurarch_hub_budget_requests_per_second 0.3" in scraped
    warned = [json.loads(r.getMessage()) for r in caplog.records]
    assert [w["event"] for w in warned] == ["hub_budget_short"]
    assert warned[0]["schedule_lag_s"] == pytest.approx(273.3, abs=0.1)
