"""Initial schema: history, blobs, advisories, subscriptions, outbox, poll state, inbox.

Revision ID: 0001
Revises:
Create Date: 2026-12-02 15:11:22.821777
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

# The column types of storage.models, spelled out so this file never changes with them.
JSON = sa.JSON()
TIMESTAMP = sa.DateTime(timezone=True)

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create every table of the first schema, constraints named by ``NAMING_CONVENTION``."""
    op.create_table(
        "blobs",
        sa.Column("content_key", sa.String(length=64), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("stored_size", sa.BigInteger(), nullable=False),
        sa.Column("compression", sa.String(length=8), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.CheckConstraint("compression IN ('none', 'zlib')", name=op.f("ck_blobs_compression")),
        sa.PrimaryKeyConstraint("content_key", name=op.f("pk_blobs")),
    )
    op.create_table(
        "repos",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("repo_id", sa.String(length=200), nullable=False),
        sa.Column("added_at", TIMESTAMP, nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("renamed_to", sa.String(length=200), nullable=True),
        sa.Column("tracked", sa.Boolean(), nullable=False),
        sa.Column("options", JSON, nullable=False),
        sa.CheckConstraint(
            "status IN ('active', 'gone', 'gated', 'private', 'renamed')",
            name=op.f("ck_repos_status"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_repos")),
        sa.UniqueConstraint("repo_id", name=op.f("uq_repos_repo_id")),
    )
    op.create_table(
        "subscriptions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("repo_patterns", JSON, nullable=False),
        sa.Column("spec", JSON, nullable=False),
        sa.Column("channels", JSON, nullable=False),
        sa.Column("min_severity", sa.Integer(), nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("next_sequence", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_subscriptions")),
        sa.UniqueConstraint("name", name=op.f("uq_subscriptions_name")),
    )
    op.create_table(
        "webhook_events",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("delivery_key", sa.String(length=128), nullable=False),
        sa.Column("received_at", TIMESTAMP, nullable=False),
        sa.Column("repo_id", sa.String(length=200), nullable=True),
        sa.Column("payload", JSON, nullable=False),
        sa.Column("processed_at", TIMESTAMP, nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_webhook_events")),
        sa.UniqueConstraint("delivery_key", name=op.f("uq_webhook_events_delivery_key")),
    )
    op.create_index("ix_webhook_events_processed_at", "webhook_events", ["processed_at"])

    op.create_table(
        "advisories",
        sa.Column("id", sa.String(length=128), nullable=False),
        sa.Column("repo_pk", sa.Integer(), nullable=False),
        sa.Column("old_sha", sa.String(length=64), nullable=True),
        sa.Column("new_sha", sa.String(length=64), nullable=False),
        sa.Column("published", TIMESTAMP, nullable=False),
        sa.Column("modified", TIMESTAMP, nullable=False),
        sa.Column("withdrawn", TIMESTAMP, nullable=True),
        sa.Column("summary", sa.Text(), nullable=False),
        sa.Column("severity", sa.Integer(), nullable=False),
        sa.Column("osv", JSON, nullable=False),
        sa.ForeignKeyConstraint(
            ["repo_pk"], ["repos.id"], name=op.f("fk_advisories_repo_pk_repos"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_advisories")),
    )
    op.create_index("ix_advisories_modified", "advisories", ["modified"])
    op.create_index("ix_advisories_new_sha", "advisories", ["new_sha"])
    op.create_index("ix_advisories_repo_pk_published", "advisories", ["repo_pk", "published"])

    op.create_table(
        "poll_state",
        sa.Column("repo_pk", sa.Integer(), nullable=False),
        sa.Column("next_check_at", TIMESTAMP, nullable=False),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("last_checked_at", TIMESTAMP, nullable=True),
        sa.Column("last_seen_sha", sa.String(length=64), nullable=True),
        sa.Column("last_modified", TIMESTAMP, nullable=True),
        sa.Column("lease_owner", sa.String(length=200), nullable=True),
        sa.Column("lease_expires_at", TIMESTAMP, nullable=True),
        sa.ForeignKeyConstraint(
            ["repo_pk"], ["repos.id"], name=op.f("fk_poll_state_repo_pk_repos"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("repo_pk", name=op.f("pk_poll_state")),
    )
    op.create_index("ix_poll_state_next_check_at", "poll_state", ["next_check_at"])

    op.create_table(
        "revisions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("repo_pk", sa.Integer(), nullable=False),
        sa.Column("sha", sa.String(length=64), nullable=False),
        sa.Column("parents", JSON, nullable=False),
        sa.Column("date", TIMESTAMP, nullable=False),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("author", sa.String(length=200), nullable=True),
        sa.Column("processed_at", TIMESTAMP, nullable=False),
        sa.Column("on_main", sa.Boolean(), nullable=False),
        sa.Column("off_main_since", TIMESTAMP, nullable=True),
        sa.ForeignKeyConstraint(
            ["repo_pk"], ["repos.id"], name=op.f("fk_revisions_repo_pk_repos"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_revisions")),
        sa.UniqueConstraint("repo_pk", "sha", name=op.f("uq_revisions_repo_pk_sha")),
    )
    op.create_index("ix_revisions_repo_pk_date", "revisions", ["repo_pk", "date"])

    op.create_table(
        "changes",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("revision_pk", sa.Integer(), nullable=False),
        sa.Column("ordinal", sa.Integer(), nullable=False),
        sa.Column("artifact", sa.String(length=64), nullable=False),
        sa.Column("path", sa.String(length=1024), nullable=False),
        sa.Column("kind", sa.String(length=64), nullable=False),
        sa.Column("old", JSON, nullable=False),
        sa.Column("new", JSON, nullable=False),
        sa.Column("severity", sa.Integer(), nullable=False),
        sa.Column("message", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["revision_pk"],
            ["revisions.id"],
            name=op.f("fk_changes_revision_pk_revisions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_changes")),
        sa.UniqueConstraint("revision_pk", "ordinal", name=op.f("uq_changes_revision_pk_ordinal")),
    )
    op.create_index(op.f("ix_changes_artifact"), "changes", ["artifact"])
    op.create_index(op.f("ix_changes_severity"), "changes", ["severity"])

    op.create_table(
        "deliveries",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("subscription_pk", sa.Integer(), nullable=False),
        sa.Column("sequence", sa.Integer(), nullable=False),
        sa.Column("channel", sa.String(length=64), nullable=False),
        sa.Column("event_key", sa.String(length=256), nullable=False),
        sa.Column("advisory_id", sa.String(length=128), nullable=True),
        sa.Column("revision_pk", sa.Integer(), nullable=True),
        sa.Column("payload", JSON, nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", TIMESTAMP, nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("delivered_at", TIMESTAMP, nullable=True),
        sa.CheckConstraint(
            "status IN ('pending', 'delivered', 'dead_letter')", name=op.f("ck_deliveries_status")
        ),
        sa.ForeignKeyConstraint(
            ["advisory_id"],
            ["advisories.id"],
            name=op.f("fk_deliveries_advisory_id_advisories"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["revision_pk"],
            ["revisions.id"],
            name=op.f("fk_deliveries_revision_pk_revisions"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["subscription_pk"],
            ["subscriptions.id"],
            name=op.f("fk_deliveries_subscription_pk_subscriptions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_deliveries")),
        sa.UniqueConstraint(
            "subscription_pk",
            "channel",
            "event_key",
            name=op.f("uq_deliveries_subscription_pk_channel_event_key"),
        ),
        sa.UniqueConstraint(
            "subscription_pk", "sequence", name=op.f("uq_deliveries_subscription_pk_sequence")
        ),
    )
    op.create_index(
        "ix_deliveries_status_next_attempt_at", "deliveries", ["status", "next_attempt_at"]
    )

    op.create_table(
        "estimates",
        sa.Column("revision_pk", sa.Integer(), nullable=False),
        sa.Column("plan", JSON, nullable=False),
        sa.Column("schema_version", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["revision_pk"],
            ["revisions.id"],
            name=op.f("fk_estimates_revision_pk_revisions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("revision_pk", name=op.f("pk_estimates")),
    )
    op.create_table(
        "revision_files",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("revision_pk", sa.Integer(), nullable=False),
        sa.Column("ordinal", sa.Integer(), nullable=False),
        sa.Column("path", sa.String(length=1024), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("blob_id", sa.String(length=64), nullable=False),
        sa.Column("lfs_sha256", sa.String(length=64), nullable=True),
        sa.Column("content_key", sa.String(length=64), nullable=False),
        sa.ForeignKeyConstraint(
            ["revision_pk"],
            ["revisions.id"],
            name=op.f("fk_revision_files_revision_pk_revisions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_revision_files")),
        sa.UniqueConstraint("revision_pk", "path", name=op.f("uq_revision_files_revision_pk_path")),
    )
    op.create_index(op.f("ix_revision_files_content_key"), "revision_files", ["content_key"])

    op.create_table(
        "snapshots",
        sa.Column("revision_pk", sa.Integer(), nullable=False),
        sa.Column("texts", JSON, nullable=False),
        sa.Column("oversized", JSON, nullable=False),
        sa.Column("manifest", JSON, nullable=True),
        sa.Column("card", JSON, nullable=False),
        sa.ForeignKeyConstraint(
            ["revision_pk"],
            ["revisions.id"],
            name=op.f("fk_snapshots_revision_pk_revisions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("revision_pk", name=op.f("pk_snapshots")),
    )


def downgrade() -> None:
    """Drop every table, children before the tables their foreign keys name."""
    op.drop_table("snapshots")
    op.drop_table("revision_files")
    op.drop_table("estimates")
    op.drop_table("deliveries")
    op.drop_table("changes")
    op.drop_table("revisions")
    op.drop_table("poll_state")
    op.drop_table("advisories")
    op.drop_table("webhook_events")
    op.drop_table("subscriptions")
    op.drop_table("repos")
    op.drop_table("blobs")
