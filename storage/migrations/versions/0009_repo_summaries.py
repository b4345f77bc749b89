"""``repo_summaries``: one row per repo that the index and model pages read.

The index and a model page's siblings used to be derived per request from
every tracked repo's revisions, plans and advisories, a cost that grows with
the number of repos. This table holds the derived values, kept current by
``storage.summary_upkeep`` in each write transaction; here it is filled once
for the rows already stored, in SQL (the plan's family and total read with
the backend's own JSON functions).

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-07 16:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

_FILL = """
INSERT INTO repo_summaries (repo_pk, latest_revision_pk, advisories, family, total_parameters)
SELECT r.id,
       (SELECT v.id FROM revisions v WHERE v.repo_pk = r.id AND v.on_main
        ORDER BY v.position DESC, v.id DESC LIMIT 1),
       (SELECT count(*) FROM advisories a WHERE a.repo_pk = r.id),
       NULL, NULL
FROM repos r
"""

_FAMILY = {
    "sqlite": """
UPDATE repo_summaries SET
  family = (SELECT CASE WHEN json_type(e.plan, '$.model.family') = 'text'
                         AND length(json_extract(e.plan, '$.model.family')) <= 128
                        THEN json_extract(e.plan, '$.model.family') END
            FROM estimates e WHERE e.revision_pk = repo_summaries.latest_revision_pk),
  total_parameters = (SELECT CASE WHEN json_type(e.plan, '$.parameters.total') = 'integer'
                                  THEN json_extract(e.plan, '$.parameters.total') END
                      FROM estimates e WHERE e.revision_pk = repo_summaries.latest_revision_pk)
""",
    "postgresql": """
UPDATE repo_summaries s SET
  family = CASE WHEN json_typeof(e.plan -> 'model' -> 'family') = 'string'
                 AND length(e.plan -> 'model' ->> 'family') <= 128
                THEN e.plan -> 'model' ->> 'family' END,
  total_parameters = CASE WHEN json_typeof(e.plan -> 'parameters' -> 'total') = 'number'
                           AND (e.plan -> 'parameters' ->> 'total') ~ '^[0-9]{1,18}$'
                          THEN (e.plan -> 'parameters' ->> 'total')::bigint END
FROM estimates e WHERE e.revision_pk = s.latest_revision_pk
""",
}


def upgrade() -> None:
    """Create ``repo_summaries`` and fill it from the repos, revisions, plans and advisories."""
    op.create_table(
        "repo_summaries",
        sa.Column(
            "repo_pk",
            sa.Integer(),
            sa.ForeignKey("repos.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column(
            "latest_revision_pk",
            sa.Integer(),
            sa.ForeignKey("revisions.id", ondelete="SET NULL"),
            nullable=True,
        ),
        sa.Column("advisories", sa.Integer(), nullable=False),
        sa.Column("family", sa.String(128), nullable=True),
        sa.Column("total_parameters", sa.BigInteger(), nullable=True),
    )
    op.create_index(
        "ix_repo_summaries_family_total",
        "repo_summaries",
        ["family", "total_parameters", "repo_pk"],
    )
    op.execute(_FILL)
    op.execute(_FAMILY[op.get_bind().dialect.name])


def downgrade() -> None:
    """Drop ``repo_summaries``; pages then have nothing to read (downgrade the code too)."""
    op.drop_index("ix_repo_summaries_family_total", table_name="repo_summaries")
    op.drop_table("repo_summaries")
