"""Indexes of the published reads: advisories by published time, repo ids by prefix.

Without the first, "the newest K advisories" (``ORDER BY published DESC
LIMIT K``: the global feed, and the log version) sorts or scans the whole
log; with it, PostgreSQL walks the index backward and stops after K rows.
The second serves org feeds' ``repo_id LIKE 'org/%'`` on PostgreSQL, whose
plain unique index cannot under a non-C collation (plans and timings in
storage/README.md, "Indexes").

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
    """Add the published-time index and, on PostgreSQL, the repo id prefix index."""
    op.create_index("ix_advisories_published", "advisories", ["published"])
    op.create_index(
        "ix_repos_repo_id_pattern",
        "repos",
        ["repo_id"],
        postgresql_ops={"repo_id": "varchar_pattern_ops"},
    )


def downgrade() -> None:
    """Drop both indexes."""
    op.drop_index("ix_repos_repo_id_pattern", table_name="repos")
    op.drop_index("ix_advisories_published", table_name="advisories")
