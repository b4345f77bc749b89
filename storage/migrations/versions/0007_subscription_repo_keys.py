"""Subscriptions are found by the repos their patterns name, through an index.

Each recorded revision used to read every active subscription and match its
patterns in Python, inside the revision's transaction. ``subscription_repo_keys``
holds one key per pattern (storage.repo_patterns: the exact repo id, ``ORG/``
for a pattern whose org is literal, ``*`` for any other), indexed, so a
revision reads only the subscriptions keyed by its repo, its org or ``*``.
Subscriptions stored before it get their keys here.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-07 16:10:00.000000
"""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

_GLOB = frozenset("*?[")


def _key(pattern: str) -> str:
    """storage.repo_patterns.repo_key, frozen here as this migration wrote it."""
    if not _GLOB.intersection(pattern):
        return pattern
    org, slash, _ = pattern.partition("/")
    return f"{org}/" if slash and not _GLOB.intersection(org) else "*"


def _patterns(value: Any) -> list[str]:
    loaded = json.loads(value) if isinstance(value, str) else value
    return [p for p in loaded if isinstance(p, str)] if isinstance(loaded, list) else []


def upgrade() -> None:
    """Create ``subscription_repo_keys`` and key every stored subscription's repo patterns."""
    keys = op.create_table(
        "subscription_repo_keys",
        sa.Column("subscription_pk", sa.Integer(), nullable=False),
        sa.Column("key", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["subscription_pk"],
            ["subscriptions.id"],
            name=op.f("fk_subscription_repo_keys_subscription_pk_subscriptions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("subscription_pk", "key", name=op.f("pk_subscription_repo_keys")),
    )
    op.create_index(
        op.f("ix_subscription_repo_keys_key"), "subscription_repo_keys", ["key"], unique=False
    )
    rows = op.get_bind().execute(sa.text("SELECT id, repo_patterns FROM subscriptions"))
    values = [
        {"subscription_pk": row.id, "key": key}
        for row in rows
        for key in sorted({_key(pattern) for pattern in _patterns(row.repo_patterns)})
    ]
    if values:
        op.bulk_insert(keys, values)


def downgrade() -> None:
    """Drop the keys; revisions then read no subscription (downgrade the code too)."""
    op.drop_index(op.f("ix_subscription_repo_keys_key"), table_name="subscription_repo_keys")
    op.drop_table("subscription_repo_keys")
