"""Scheduling arithmetic, the configuration file, and the global rate limiter."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.daemon.harness import REPO_ROOT
from tracker.config_file import ConfigFileError, load_daemon_config, parse_daemon_config
from tracker.hub.ratelimit import RateLimiter, pause_from_headers
from tracker.schedule.ticker import (
    JITTER_FRACTION,
    backoff_s,
    jitter_fraction,
    next_check_after_failure,
    next_check_after_success,
)

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def test_jitter_is_stable_per_repo_and_spreads_repos_over_the_window() -> None:
    fractions = [jitter_fraction(f"org/model-{i}") for i in range(1000)]
    assert fractions == [jitter_fraction(f"org/model-{i}") for i in range(1000)]
    assert all(0 <= f < 1 for f in fractions)
    # Ten equal buckets each get roughly a tenth: the checks do not bunch up.
    buckets = [sum(1 for f in fractions if k / 10 <= f < (k + 1) / 10) for k in range(10)]
    assert min(buckets) > 60


def test_next_routine_check_is_one_interval_plus_at_most_a_tenth() -> None:
    for i in range(50):
        delay = next_check_after_success(f"o/r{i}", NOW, 3600) - NOW
        assert timedelta(hours=1) <= delay < timedelta(hours=1) * (1 + JITTER_FRACTION)


def test_backoff_doubles_from_a_minute_and_stops_at_the_cap() -> None:
    assert [backoff_s(n, 3600, 1800) for n in range(1, 8)] == [60, 120, 240, 480, 960, 1800, 1800]
    assert backoff_s(10_000, 3600, 1800) == 1800
    retry = next_check_after_failure("o/r", NOW, 3, 3600, 1800) - NOW
    assert timedelta(seconds=240) <= retry < timedelta(seconds=240 * 1.1)


def test_example_configuration_parses_with_its_documented_values() -> None:
    config = load_daemon_config(REPO_ROOT / "deploy" / "neurarch-trace.example.toml")
    assert [(r.repo_id, r.interval_s) for r in config.repos] == [
        ("meta-llama/Llama-3.1-8B-Instruct", 900.0),
        ("mistralai/Mistral-7B-Instruct-v0.3", None),
        ("Qwen/Qwen2.5-7B-Instruct", 86400.0),
    ]
    assert (config.interval_s, config.max_backoff_s, config.discovery_s) == (3600, 21600, 300)
    assert (config.host, config.port, config.webhook_secret) == ("127.0.0.1", 8080, "change-me")
    alerts = config.alerts
    assert (alerts.tick_s, alerts.retry_base_s, alerts.retry_max_delay_s) == (5, 30, 3600)
    assert alerts.give_up_after_s == 86400


@pytest.mark.parametrize(
    ("document", "named"),
    [
        ({"daemon": {"interval": "soon"}}, "daemon.interval"),
        ({"daemon": {"interval": 0}}, "daemon.interval"),
        ({"daemon": {"workers": 0}}, "daemon.workers"),
        ({"server": {"port": 70000}}, "server.port"),
        ({"server": {"webhook_secret": ""}}, "webhook_secret"),
        ({"repos": [{"id": "no-slash"}]}, "repos[0]"),
        ({"repos": [{"id": "a/b"}, {"id": "a/b"}]}, "listed twice"),
        ({"repos": [{"id": "a/b", "interval": "5 parsecs"}]}, "repos[0].interval"),
        ({"alerts": {"retry_base": "-1s"}}, "alerts.retry_base"),
        ({"alerts": {"retries": 3}}, "[alerts] has no setting 'retries'"),
    ],
)
def test_bad_configuration_values_are_refused_naming_the_field(
    document: dict[str, object], named: str
) -> None:
    with pytest.raises(ConfigFileError, match=named.replace("[", r"\[").replace("]", r"\]")):
        parse_daemon_config(document, "test.toml")


def test_missing_configuration_file_is_a_one_line_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigFileError, match="not found"):
        load_daemon_config(tmp_path / "absent.toml")


def test_retry_after_and_ratelimit_headers_set_the_pause() -> None:
    assert pause_from_headers(429, {"Retry-After": "7"}) == 7
    assert pause_from_headers(429, {"RateLimit": '"api";r=0;t=55'}) == 55
    assert pause_from_headers(429, {"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}) is None
    assert pause_from_headers(200, {"RateLimit": '"api";r=12;t=55'}) is None
    assert pause_from_headers(200, {"RateLimit": '"api";r=0;t=30'}) == 30
    assert pause_from_headers(429, {"Retry-After": "999999"}) == 300


def test_one_429_pauses_every_thread_sharing_the_limiter() -> None:
    limiter = RateLimiter(1000.0)
    limiter.observe(429, {"Retry-After": "0.4"})
    started = time.monotonic()
    waits: list[float] = []
    threads = [threading.Thread(target=lambda: waits.append(limiter.acquire())) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(waits) == 4
    assert all(wait >= 0.35 for wait in waits)
    assert time.monotonic() - started >= 0.35


def test_token_bucket_spaces_requests_after_the_burst() -> None:
    clock = [0.0]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        clock[0] += seconds

    limiter = RateLimiter(2.0, burst=2, clock=lambda: clock[0], sleep=sleep)
    for _ in range(4):
        limiter.acquire()
    assert clock[0] == pytest.approx(1.0)  # two free, then two at 0.5 s each
