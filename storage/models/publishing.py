"""Tables of what is published and sent: advisories, subscriptions, the delivery outbox.

The outbox is written in the same transaction as the revision that caused
it; ``(subscription, channel, event_key)`` is unique, so re-processing a
revision can never queue an alert twice, and ``sequence`` orders the
deliveries of one subscription.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    Boolean,
    CheckConstraint,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from storage.models.base import Base, Json, StorableText, UTCDateTime
from storage.models.history import REPO_ID_LENGTH, SHA_LENGTH

ADVISORY_ID_LENGTH = 128


class AdvisoryRow(Base):
    """One published advisory with its OSV document; ``withdrawn`` is set, never deleted, on a
    force-push."""

    __tablename__ = "advisories"
    __table_args__ = (
        Index("ix_advisories_repo_pk_published", "repo_pk", "published"),
        # an org feed's newest-K walks its org's entries backward (0003_advisory_org)
        Index("ix_advisories_org_published", "org", "published"),
        # the global feed's newest-K and OSV queries without a package (0002_published_index)
        Index("ix_advisories_published", "published"),
        Index("ix_advisories_modified", "modified"),
        Index("ix_advisories_new_sha", "new_sha"),
    )

    id: Mapped[str] = mapped_column(String(ADVISORY_ID_LENGTH), primary_key=True)
    repo_pk: Mapped[int] = mapped_column(ForeignKey("repos.id", ondelete="CASCADE"))
    # the ORG of the repo's ORG/NAME, stored so that org feeds need no join to filter
    org: Mapped[str] = mapped_column(String(REPO_ID_LENGTH))
    old_sha: Mapped[str | None] = mapped_column(String(SHA_LENGTH))
    new_sha: Mapped[str] = mapped_column(String(SHA_LENGTH))
    published: Mapped[datetime] = mapped_column(UTCDateTime)
    modified: Mapped[datetime] = mapped_column(UTCDateTime)
    withdrawn: Mapped[datetime | None] = mapped_column(UTCDateTime)
    summary: Mapped[str] = mapped_column(StorableText)
    severity: Mapped[int] = mapped_column(Integer)
    osv: Mapped[dict[str, Any]] = mapped_column(Json)


class SubscriptionRow(Base):
    """A named alert subscription: which repos, which changes, which channels."""

    __tablename__ = "subscriptions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    repo_patterns: Mapped[list[str]] = mapped_column(Json)
    spec: Mapped[dict[str, Any]] = mapped_column(Json)
    channels: Mapped[list[dict[str, Any]]] = mapped_column(Json)
    min_severity: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    active: Mapped[bool] = mapped_column(Boolean, default=True)
    # The next sequence number handed to a delivery of this subscription.
    next_sequence: Mapped[int] = mapped_column(Integer, default=1)


class SubscriptionRepoKeyRow(Base):
    """One key a subscription's repo patterns are found by (storage.repo_patterns.repo_key)."""

    __tablename__ = "subscription_repo_keys"
    __table_args__ = (Index("ix_subscription_repo_keys_key", "key"),)

    subscription_pk: Mapped[int] = mapped_column(
        ForeignKey("subscriptions.id", ondelete="CASCADE"), primary_key=True
    )
    key: Mapped[str] = mapped_column(Text, primary_key=True)


class DeliveryRow(Base):
    """One alert queued for one channel of a subscription (the outbox), with its retry state."""

    __tablename__ = "deliveries"
    __table_args__ = (
        UniqueConstraint("subscription_pk", "sequence"),
        UniqueConstraint("subscription_pk", "channel", "event_key"),
        Index("ix_deliveries_status_next_attempt_at", "status", "next_attempt_at"),
        CheckConstraint("status IN ('pending', 'delivered', 'dead_letter')", name="status"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    subscription_pk: Mapped[int] = mapped_column(ForeignKey("subscriptions.id", ondelete="CASCADE"))
    sequence: Mapped[int] = mapped_column(Integer)
    channel: Mapped[str] = mapped_column(String(64))
    event_key: Mapped[str] = mapped_column(String(256))
    advisory_id: Mapped[str | None] = mapped_column(
        ForeignKey("advisories.id", ondelete="SET NULL")
    )
    revision_pk: Mapped[int | None] = mapped_column(ForeignKey("revisions.id", ondelete="SET NULL"))
    payload: Mapped[dict[str, Any]] = mapped_column(Json)
    status: Mapped[str] = mapped_column(String(16), default="pending")
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime] = mapped_column(UTCDateTime)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    last_error: Mapped[str | None] = mapped_column(Text)
    delivered_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
