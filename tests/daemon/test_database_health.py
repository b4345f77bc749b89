"""PostgreSQL under a backfill: the lease tables' autovacuum settings, dead tuples and WAL in /metrics."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime

import pytest
from prometheus_client import generate_latest

from storage import Database
from storage.health import database_health, table_options
from tests.daemon.conftest import MakeWorker, run_until_idle, track_all
from tracker.demo import HISTORIES
from tracker.hubsim import HubEmulator
from tracker.schedule.metrics import DaemonMetrics


def gauge(text: str, name: str, labels: str = "") -> float:
    match = re.search(rf"^{name}{re.escape(labels)} (\S+)$", text, re.MULTILINE)
    assert match is not None, f"{name}{labels} not in /metrics"
    return float(match[1])


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
def test_migrate_sets_the_lease_tables_storage_parameters(database: Database) -> None:
    with database.read_session() as session:
        poll = table_options(session, "poll_state")
        budget = table_options(session, "hub_budget")
    assert poll == {
        "fillfactor": "70",
        "autovacuum_vacuum_scale_factor": "0.02",
        "autovacuum_vacuum_threshold": "200",
        "autovacuum_analyze_scale_factor": "0.05",
        "autovacuum_vacuum_cost_delay": "0",
    }
    assert budget["fillfactor"] == "50" and budget["autovacuum_vacuum_threshold"] == "1000"
    database.downgrade("0004")
    with database.read_session() as session:
        assert table_options(session, "poll_state") == {}
    database.migrate()
    with database.read_session() as session:
        assert table_options(session, "poll_state")["fillfactor"] == "70"


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_sqlite_has_no_storage_parameters_and_reports_no_health(database: Database) -> None:
    with database.read_session() as session:
        assert table_options(session, "poll_state") == {}
        assert database_health(session) is None
    metrics = DaemonMetrics()
    metrics.watch_storage(database, lambda: datetime.now(UTC))
    scraped = generate_latest(metrics.registry).decode()
    assert "neurarch_queue_depth" in scraped and "neurarch_db_" not in scraped


@pytest.mark.parametrize("hub_emulator", [{"corpus": HISTORIES}], indirect=True)
@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
def test_metrics_report_dead_tuples_and_wal_per_revision_after_a_backfill(
    database: Database, hub_emulator: HubEmulator, make_worker: MakeWorker
) -> None:
    metrics = DaemonMetrics()
    metrics.watch_storage(database, lambda: datetime.now(UTC))
    generate_latest(metrics.registry)  # the first scrape: WAL per revision counts from here
    repos = hub_emulator.repo_ids()
    track_all(database, repos)
    run_until_idle(make_worker(metrics=metrics))
    # a backend reports its statistics when idle (at most every second, or at exit):
    # close the worker's connections and read until the revisions' inserts are counted
    database.engine.dispose()
    deadline = time.monotonic() + 20
    scraped = generate_latest(metrics.registry).decode()
    while "neurarch_db_wal_bytes_per_revision" not in scraped and time.monotonic() < deadline:
        time.sleep(0.5)
        scraped = generate_latest(metrics.registry).decode()
    recorded = gauge(scraped, "neurarch_revisions_recorded_total")
    dead = gauge(scraped, "neurarch_db_dead_tuples", '{table="poll_state"}')
    wal = gauge(scraped, "neurarch_db_wal_bytes")
    per_revision = gauge(scraped, "neurarch_db_wal_bytes_per_revision")
    revisions_dead = gauge(scraped, "neurarch_db_dead_tuples", '{table="revisions"}')
    print(
        f"{recorded:.0f} revisions: dead tuples poll_state {dead:.0f}, revisions"
        f" {revisions_dead:.0f}; WAL position {wal:.0f} B, WAL per revision {per_revision:.0f} B"
    )
    assert recorded > 0
    assert dead >= 0 and wal > 0
    # a revision writes its rows, changes, snapshot and blobs: kilobytes of WAL, not bytes
    assert 1_000 < per_revision < 50_000_000
