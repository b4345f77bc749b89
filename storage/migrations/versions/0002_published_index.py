"""Index advisories by published time: the global feed and package-less OSV queries read it.

Without it, "the newest K advisories" (``ORDER BY published DESC LIMIT K``)
sorts the whole log; with it, PostgreSQL walks the index backward and stops
after K rows (plans and timings in storage/README.md, "Indexes").

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-03 17:40:00.000000
"""

from __future__ import annotations

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_advisories_published", "advisories", ["published"])


def downgrade() -> None:
    op.drop_index("ix_advisories_published", table_name="advisories")
