"""Advisories carry their repo's org, indexed with the publication time, for org feeds.

An org feed is "this org's newest K advisories". Filtered through the repos
join (``repo_id LIKE 'org/%'``, served by 0002's pattern index), the plan
rests on the planner's guess of the prefix's selectivity, and a wrong guess
walks the whole log's ``published`` index backward, joining every row to
filter it. ``org`` on the advisory row with ``(org, published)`` makes it one
backward walk of the org's own entries that stops after K rows, whatever the
guess; the pattern index has no other reader and goes.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-04 17:30:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

# Every stored repo id is ORG/NAME (storage.repo_ids), so the org is the text before the '/'.
_ORG_OF_REPO = {
    "postgresql": "split_part(repos.repo_id, '/', 1)",
    "sqlite": "substr(repos.repo_id, 1, instr(repos.repo_id, '/') - 1)",
}


def upgrade() -> None:
    """Fill ``org`` from each advisory's repo, index it with ``published`` and drop the prefix
    index."""
    with op.batch_alter_table("advisories") as batch:
        batch.add_column(sa.Column("org", sa.String(length=200), nullable=True))
    org_of_repo = _ORG_OF_REPO[op.get_bind().dialect.name]
    op.execute(
        f"UPDATE advisories SET org = (SELECT {org_of_repo} FROM repos"
        " WHERE repos.id = advisories.repo_pk)"
    )
    with op.batch_alter_table("advisories") as batch:
        batch.alter_column("org", existing_type=sa.String(length=200), nullable=False)
    op.create_index("ix_advisories_org_published", "advisories", ["org", "published"])
    op.drop_index("ix_repos_repo_id_pattern", table_name="repos")


def downgrade() -> None:
    """Restore the prefix index and drop ``org`` with its index."""
    op.create_index(
        "ix_repos_repo_id_pattern",
        "repos",
        ["repo_id"],
        postgresql_ops={"repo_id": "varchar_pattern_ops"},
    )
    op.drop_index("ix_advisories_org_published", table_name="advisories")
    with op.batch_alter_table("advisories") as batch:
        batch.drop_column("org")
