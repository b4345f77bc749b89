"""How PostgreSQL is coping with the write load: dead tuples per table and WAL written.

A long backfill rewrites the lease rows (``poll_state``) on every claim,
renewal and check, and the Hub budget row on every request; each rewrite
leaves a dead tuple for autovacuum. ``pg_stat_user_tables`` says how many are
waiting per table, and ``pg_current_wal_lsn()`` how many bytes of WAL the
server has written since it was created, so two readings a while apart give
WAL per revision (the revisions' insert counter from the same view). Both
are cheap catalogue reads, fit for every /metrics scrape. SQLite has neither:
``database_health`` is None there.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.orm import Session


@dataclass(frozen=True)
class TableHealth:
    """One table's row of ``pg_stat_user_tables``: how far autovacuum lags behind its writes."""

    table: str
    live_tuples: int
    dead_tuples: int
    inserted: int
    """Rows inserted since the statistics were reset (cumulative)."""
    autovacuums: int


@dataclass(frozen=True)
class DatabaseHealth:
    """One reading of the server's write load; two readings apart give WAL per revision."""

    wal_bytes: int
    """The server's WAL position in bytes: grows by what every session writes."""
    tables: tuple[TableHealth, ...]
    """Every table of this database's schema, by name."""

    def table(self, name: str) -> TableHealth | None:
        """The reading for ``name``; None when the schema has no such table."""
        return next((t for t in self.tables if t.table == name), None)


_TABLES = text(
    "SELECT relname, n_live_tup, n_dead_tup, n_tup_ins, autovacuum_count"
    " FROM pg_stat_user_tables WHERE schemaname = current_schema() ORDER BY relname"
)
_WAL = text("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')")


def database_health(session: Session) -> DatabaseHealth | None:
    """Dead tuples per table and the WAL position on PostgreSQL; None on SQLite."""
    if session.get_bind().dialect.name != "postgresql":
        return None
    wal = session.execute(_WAL).scalar_one()
    tables = tuple(
        TableHealth(str(name), int(live), int(dead), int(inserted), int(vacuums))
        for name, live, dead, inserted, vacuums in session.execute(_TABLES)
    )
    return DatabaseHealth(wal_bytes=int(wal), tables=tables)


def table_options(session: Session, table: str) -> dict[str, str]:
    """A table's storage parameters (``ALTER TABLE ... SET``) on PostgreSQL; {} on SQLite."""
    if session.get_bind().dialect.name != "postgresql":
        return {}
    options = session.execute(
        text(
            "SELECT c.reloptions FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = current_schema() AND c.relname = :table"
        ),
        {"table": table},
    ).scalar_one_or_none()
    return dict(option.split("=", 1) for option in options or ())


__all__ = ["DatabaseHealth", "TableHealth", "database_health", "table_options"]
