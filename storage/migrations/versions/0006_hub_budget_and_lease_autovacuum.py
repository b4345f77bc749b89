"""The shared Hub budget table; the hot lease tables tuned for autovacuum on PostgreSQL.

- ``hub_budget``: one token bucket row per account and endpoint that every
  instance takes its Hub requests from (``storage/hub_budget.py``).
- ``poll_state`` is the lease table: claimed with ``FOR UPDATE SKIP LOCKED``
  and rewritten on every claim, renewal and check, so a long backfill leaves
  dead tuples behind it at the rate it works. With the defaults autovacuum
  waits for 20% of the table to be dead (20,000 rows at 100,000 repos) and the
  claim's index walk steps over them meanwhile. ``fillfactor=70`` leaves room on
  each page for HOT updates (a lease renewal changes no indexed column, so its
  new version stays on the page and needs no index entry); the scale factor
  of 0.02 plus a threshold of 200 vacuums after a few hundred dead rows, with
  no cost delay because the table is small. ``hub_budget`` is one row
  rewritten per Hub request: the same, with room for more HOT versions.
- SQLite has no such settings: there the migration only creates the table.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-07 14:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

HOT_TABLES = {
    "poll_state": {
        "fillfactor": "70",
        "autovacuum_vacuum_scale_factor": "0.02",
        "autovacuum_vacuum_threshold": "200",
        "autovacuum_analyze_scale_factor": "0.05",
        "autovacuum_vacuum_cost_delay": "0",
    },
    "hub_budget": {
        "fillfactor": "50",
        "autovacuum_vacuum_scale_factor": "0.0",
        "autovacuum_vacuum_threshold": "1000",
        "autovacuum_vacuum_cost_delay": "0",
    },
}
"""Storage parameters per table (PostgreSQL ``ALTER TABLE ... SET``)."""


def upgrade() -> None:
    """Create ``hub_budget``; on PostgreSQL, tune the hot tables' fillfactor and autovacuum."""
    op.create_table(
        "hub_budget",
        sa.Column("key", sa.String(length=200), nullable=False),
        sa.Column("capacity", sa.Float(), nullable=False),
        sa.Column("rate", sa.Float(), nullable=False),
        sa.Column("tokens", sa.Float(), nullable=False),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.Column("paused_until", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_hub_budget")),
    )
    if op.get_bind().dialect.name != "postgresql":
        return
    for table, options in HOT_TABLES.items():
        settings = ", ".join(f"{name} = {value}" for name, value in options.items())
        op.execute(f"ALTER TABLE {table} SET ({settings})")


def downgrade() -> None:
    """Reset the lease table's storage options on PostgreSQL and drop ``hub_budget``."""
    if op.get_bind().dialect.name == "postgresql":
        op.execute(f"ALTER TABLE poll_state RESET ({', '.join(HOT_TABLES['poll_state'])})")
    op.drop_table("hub_budget")
