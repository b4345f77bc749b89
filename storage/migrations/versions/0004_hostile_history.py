"""History that holds anything upstream can commit: long paths, chain order, shared manifests.

- ``revision_files.path``, ``changes.path`` and ``revisions.author`` become unbounded text:
  git sets no length on a path, and one over 1,024 characters fails the revision's write on
  PostgreSQL (VARCHAR(1024)) on every retry, holding back every later revision of the repo.
  A btree cannot key text of any length, so ``revision_files`` keeps (revision, ordinal)
  unique instead of (revision, path); storage keeps a revision's paths distinct itself.
- ``revisions.position``: the place on main's parent chain. Ordered by ``date``, which
  the pusher's clock writes, a commit dated 9999-12-31 would stay the headline forever.
  Existing rows are numbered in the order they were recorded (workers record oldest
  first along the chain); the next history check renumbers them from main's list.
- ``snapshots.manifest_key``: the weight manifest as a blob stored once per content,
  instead of a copy in every revision's row (the largest thing a snapshot holds).
  Rows from before keep their inline ``manifest``, which readers still accept; a
  downgrade drops the key, so manifests written since are no longer read (their blobs stay).

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-07 13:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Unbound paths and authors; number existing revisions in recorded order; add manifest keys."""
    with op.batch_alter_table("revision_files") as batch:
        batch.drop_constraint("uq_revision_files_revision_pk_path", type_="unique")
        batch.alter_column(
            "path", existing_type=sa.String(length=1024), type_=sa.Text(), existing_nullable=False
        )
        batch.create_unique_constraint(
            "uq_revision_files_revision_pk_ordinal", ["revision_pk", "ordinal"]
        )
    with op.batch_alter_table("changes") as batch:
        batch.alter_column(
            "path", existing_type=sa.String(length=1024), type_=sa.Text(), existing_nullable=False
        )
    with op.batch_alter_table("revisions") as batch:
        batch.alter_column(
            "author", existing_type=sa.String(length=200), type_=sa.Text(), existing_nullable=True
        )
        batch.add_column(sa.Column("position", sa.Integer(), nullable=True))
    op.execute(
        "UPDATE revisions SET position = (SELECT count(*) FROM revisions AS earlier"
        " WHERE earlier.repo_pk = revisions.repo_pk AND earlier.id < revisions.id)"
    )
    op.create_index("ix_revisions_repo_pk_position", "revisions", ["repo_pk", "position"])
    with op.batch_alter_table("snapshots") as batch:
        batch.add_column(sa.Column("manifest_key", sa.String(length=64), nullable=True))
    op.create_index("ix_snapshots_manifest_key", "snapshots", ["manifest_key"])


def downgrade() -> None:
    """Drop positions and manifest keys; fails where a stored path or author exceeds the old
    lengths."""
    op.drop_index("ix_snapshots_manifest_key", table_name="snapshots")
    with op.batch_alter_table("snapshots") as batch:
        batch.drop_column("manifest_key")
    op.drop_index("ix_revisions_repo_pk_position", table_name="revisions")
    with op.batch_alter_table("revisions") as batch:
        batch.drop_column("position")
        batch.alter_column(
            "author", existing_type=sa.Text(), type_=sa.String(length=200), existing_nullable=True
        )
    with op.batch_alter_table("changes") as batch:
        batch.alter_column(
            "path", existing_type=sa.Text(), type_=sa.String(length=1024), existing_nullable=False
        )
    with op.batch_alter_table("revision_files") as batch:
        batch.drop_constraint("uq_revision_files_revision_pk_ordinal", type_="unique")
        batch.alter_column(
            "path", existing_type=sa.Text(), type_=sa.String(length=1024), existing_nullable=False
        )
        batch.create_unique_constraint(
            "uq_revision_files_revision_pk_path", ["revision_pk", "path"]
        )
