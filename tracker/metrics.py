"""The daemon's Prometheus metrics, on a registry of its own (passed to feeds' /metrics).

Counters are bumped where things happen (checks, Hub responses, failures,
events); queue depth and lag are read from storage at scrape time by a
collector, so every instance on a shared database reports the same queue and
no gauge goes stale. Per-repo lag names only the ``LAGGING_REPOS_SHOWN`` most
overdue repos: a series per tracked repo was 100,000 series at 100,000 repos,
each scrape reading every poll state, where Prometheus's guidance is to keep
label values bounded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Final

import httpx2
from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from storage import Database, due_count, most_overdue

LAGGING_REPOS_SHOWN: Final = 10


class DaemonMetrics:
    """Every metric ``serve`` exports."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self.checks = Counter(
            "neurarch_checks", "Repo checks by outcome", ["outcome"], registry=self.registry
        )
        self.hub_requests = Counter(
            "neurarch_hub_requests",
            "Hub responses by HTTP status",
            ["status"],
            registry=self.registry,
        )
        self.failures = Counter(
            "neurarch_check_failures",
            "Failed checks by error type",
            ["error"],
            registry=self.registry,
        )
        self.revisions = Counter(
            "neurarch_revisions_recorded",
            "Revisions recorded by this instance",
            registry=self.registry,
        )
        self.events = Counter(
            "neurarch_repo_events",
            "Repo events (force-push, gone, gated...)",
            ["kind"],
            registry=self.registry,
        )
        self.check_seconds = Histogram(
            "neurarch_check_seconds", "Time spent on one repo check", registry=self.registry
        )

    def observe_response(self, response: httpx2.Response) -> None:
        self.hub_requests.labels(status=str(response.status_code)).inc()

    def watch_storage(self, database: Database, clock: Callable[[], datetime]) -> None:
        """Export queue depth and lag, read from storage on each scrape."""
        self.registry.register(_StorageCollector(database, clock))


class _StorageCollector(Collector):
    def __init__(self, database: Database, clock: Callable[[], datetime]) -> None:
        self._database = database
        self._clock = clock

    def collect(self) -> Iterator[GaugeMetricFamily]:
        now = self._clock()
        with self._database.read_session() as session:
            depth = due_count(session, now)
            late = most_overdue(session, now, LAGGING_REPOS_SHOWN)
        yield GaugeMetricFamily("neurarch_queue_depth", "Repos due and not leased", value=depth)
        oldest = (now - late[0].next_check_at).total_seconds() if late else 0.0
        yield GaugeMetricFamily(
            "neurarch_queue_lag_seconds",
            "Seconds the most overdue repo's check is late (0 when none is due)",
            value=oldest,
        )
        lag = GaugeMetricFamily(
            "neurarch_repo_lag_seconds",
            f"Seconds a repo's check is late, for the {LAGGING_REPOS_SHOWN} most overdue repos",
            labels=["repo"],
        )
        for state in late:
            lag.add_metric([state.repo_id], (now - state.next_check_at).total_seconds())
        yield lag


def utc_now() -> datetime:
    return datetime.now(UTC)


__all__ = ["LAGGING_REPOS_SHOWN", "DaemonMetrics", "utc_now"]
