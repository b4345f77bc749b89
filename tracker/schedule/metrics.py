"""The daemon's Prometheus metrics, on a registry of its own (passed to feeds' /metrics).

Counters are bumped where things happen (checks, Hub responses, failures,
events); queue depth and lag are read from storage at scrape time by a
collector, so every instance on a shared database reports the same queue and
no gauge goes stale. Per-repo lag names only the ``LAGGING_REPOS_SHOWN`` most
overdue repos: a series per tracked repo would be 100,000 series at 100,000
repos, each scrape reading every poll state, where Prometheus's guidance is to
keep label values bounded.

On PostgreSQL the same collector reads the database's own health
(``storage.health``): dead tuples per table, the WAL position, and WAL bytes
per revision recorded since the first scrape (both counters are
the server's, so every instance reports the cluster's figure). With a shared
Hub budget (``[daemon] hub_budget``) it reports the budget, what a check
costs in requests, and how late a round of checks runs when the budget
cannot cover the interval.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Final

import httpx2
from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from storage import Database, due_count, most_overdue, tracking_summary
from storage.health import DatabaseHealth, database_health
from tracker.hub.budget import schedule_lag

if TYPE_CHECKING:
    from tracker.hub.ratelimit import RateLimiter
    from tracker.hub.shared_budget import SharedBudget

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
        """Count one Hub response by status code; the paced Hub transport calls it on each."""
        self.hub_requests.labels(status=str(response.status_code)).inc()

    def watch_storage(self, database: Database, clock: Callable[[], datetime]) -> None:
        """Export queue depth and lag (and PostgreSQL's health), read on each scrape."""
        self.registry.register(_StorageCollector(database, clock))

    def watch_budget(self, watch: BudgetWatch) -> None:
        """Export the shared Hub budget and the schedule's lag behind it, read on each scrape."""
        self.registry.register(_BudgetCollector(watch))

    def requests_per_check(self) -> float | None:
        """Hub requests this instance sent per repo check so far (None before any check)."""
        checks = _total(self.checks)
        return _total(self.hub_requests) / checks if checks else None


def _total(counter: Counter) -> float:
    return sum(
        sample.value
        for metric in counter.collect()
        for sample in metric.samples
        if sample.name.endswith("_total")
    )


@dataclass(frozen=True)
class BudgetReport:
    """The shared budget as the schedule meets it."""

    budget: str
    requests_per_second: float
    """The shared bucket's rate now (the Hub's RateLimit-Policy may have lowered it)."""
    tokens: float
    paused_s: float
    waited_s: float
    """Seconds this instance's requests waited on the shared budget."""
    tracked: int
    requests_per_check: float
    schedule_lag_s: float
    """How late one round of every tracked repo's check runs at this rate (0: in time)."""

    def to_json(self) -> dict[str, object]:
        """Every field by name, for the /healthz ``hub_budget`` block and the start-up warning."""
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


@dataclass(frozen=True)
class BudgetWatch:
    """What the budget report reads: the pacer, the bucket, the database and the interval."""

    metrics: DaemonMetrics
    limiter: RateLimiter
    shared: SharedBudget
    database: Database
    interval_s: float
    wall_clock: Callable[[], float]

    def report(self) -> BudgetReport | None:
        """The budget as the schedule meets it now (one database read); None before the
        shared bucket's row exists."""
        state = self.shared.state()
        if state is None:
            return None
        with self.database.read_session() as session:
            tracked = tracking_summary(session).tracked
        # before any check, assume one request per check: the cheapest a check can be
        per_check = self.metrics.requests_per_check() or 1.0
        return BudgetReport(
            budget=str(self.shared.budget),
            requests_per_second=state.rate,
            tokens=state.tokens,
            paused_s=max(state.paused_until - self.wall_clock(), 0.0),
            waited_s=self.limiter.budget_waited_s,
            tracked=tracked,
            requests_per_check=per_check,
            schedule_lag_s=schedule_lag(tracked, self.interval_s, per_check, state.rate),
        )


class _BudgetCollector(Collector):
    def __init__(self, watch: BudgetWatch) -> None:
        self._watch = watch

    def collect(self) -> Iterator[GaugeMetricFamily]:
        report = self._watch.report()
        if report is None:
            return
        for name, help_text, value in (
            (
                "neurarch_hub_budget_requests_per_second",
                "The shared Hub budget's refill rate, for every instance together",
                report.requests_per_second,
            ),
            ("neurarch_hub_budget_tokens", "Requests the shared budget holds now", report.tokens),
            (
                "neurarch_hub_budget_paused_seconds",
                "Seconds until the Hub's pause ends (429 or RateLimit r=0), 0 when none",
                report.paused_s,
            ),
            (
                "neurarch_hub_budget_waited_seconds",
                "Seconds this instance's requests waited on the shared budget",
                report.waited_s,
            ),
            (
                "neurarch_hub_requests_per_check",
                "Hub requests per repo check, as this instance measured them",
                report.requests_per_check,
            ),
            (
                "neurarch_schedule_budget_lag_seconds",
                "How late a round of every tracked repo's check runs at the budget's rate "
                "(0 when the budget covers the interval)",
                report.schedule_lag_s,
            ),
        ):
            yield GaugeMetricFamily(name, help_text, value=value)


class _StorageCollector(Collector):
    def __init__(self, database: Database, clock: Callable[[], datetime]) -> None:
        self._database = database
        self._clock = clock
        self._first: DatabaseHealth | None = None

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
        yield from self._health()

    def _health(self) -> Iterator[GaugeMetricFamily]:
        """PostgreSQL's dead tuples and WAL; nothing on SQLite."""
        with self._database.read_session() as session:
            health = database_health(session)
        if health is None:
            return
        first = self._first = self._first or health
        dead = GaugeMetricFamily(
            "neurarch_db_dead_tuples",
            "Dead row versions waiting for autovacuum, per table (pg_stat_user_tables)",
            labels=["table"],
        )
        for table in health.tables:
            dead.add_metric([table.table], table.dead_tuples)
        yield dead
        yield GaugeMetricFamily(
            "neurarch_db_wal_bytes",
            "The server's WAL position in bytes (pg_current_wal_lsn)",
            value=health.wal_bytes,
        )
        now, then = health.table("revisions"), first.table("revisions")
        recorded = 0 if now is None or then is None else now.inserted - then.inserted
        if recorded > 0:
            yield GaugeMetricFamily(
                "neurarch_db_wal_bytes_per_revision",
                "WAL bytes the server wrote per revision recorded since this process first "
                "reported it (every session's WAL, every instance's revisions)",
                value=(health.wal_bytes - first.wal_bytes) / recorded,
            )


__all__ = ["LAGGING_REPOS_SHOWN", "BudgetReport", "BudgetWatch", "DaemonMetrics"]
