"""Plans stored once per content: ``estimates.plan_key`` names the plan's blob.

A plan changes only where config.json or the weight manifest does, so most
revisions share their parent's: each new estimate row keeps the sha256 of the
plan's JSON, the blob holds the JSON once (``storage/plans.py``), and
``estimates.plan`` becomes nullable (rows written before keep their plan inline
and read as before).

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-07 16:00:00.000000
"""

from __future__ import annotations

import zlib

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add ``estimates.plan_key``; rows already stored keep their plan inline."""
    with op.batch_alter_table("estimates") as batch:
        batch.add_column(sa.Column("plan_key", sa.String(length=64), nullable=True))
        batch.alter_column("plan", existing_type=sa.JSON(), nullable=True)
    op.create_index("ix_estimates_plan_key", "estimates", ["plan_key"])


def downgrade() -> None:
    """Every plan written inline again from its blob, then the key dropped."""
    connection = op.get_bind()
    rows = connection.execute(
        sa.text(
            "SELECT estimates.revision_pk, blobs.data, blobs.compression FROM estimates"
            " JOIN blobs ON blobs.content_key = estimates.plan_key WHERE estimates.plan IS NULL"
        )
    ).all()
    for revision_pk, data, compression in rows:
        text = zlib.decompress(data) if compression == "zlib" else bytes(data)
        connection.execute(
            sa.text("UPDATE estimates SET plan = :plan WHERE revision_pk = :pk"),
            {"plan": text.decode(), "pk": revision_pk},
        )
    op.drop_index("ix_estimates_plan_key", table_name="estimates")
    with op.batch_alter_table("estimates") as batch:
        batch.alter_column("plan", existing_type=sa.JSON(), nullable=False)
        batch.drop_column("plan_key")
