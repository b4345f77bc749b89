"""Tables the daemon runs on: per-repo poll state with row leases, and the webhook inbox.

Scheduling state lives here rather than in a scheduler's job store so that
any number of instances can share it: a lease (owner, expiry) on a poll row
says who is checking that repo, and an expired lease is free to take.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from storage.models.base import Base, Json, StorableText, UTCDateTime
from storage.models.history import REPO_ID_LENGTH, SHA_LENGTH


class PollStateRow(Base):
    """When a repo is checked next, its failures, and which instance holds its lease until when."""

    __tablename__ = "poll_state"
    __table_args__ = (Index("ix_poll_state_next_check_at", "next_check_at"),)

    repo_pk: Mapped[int] = mapped_column(
        ForeignKey("repos.id", ondelete="CASCADE"), primary_key=True
    )
    next_check_at: Mapped[datetime] = mapped_column(UTCDateTime)
    failures: Mapped[int] = mapped_column(Integer, default=0)
    last_error: Mapped[str | None] = mapped_column(StorableText)
    last_checked_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    last_seen_sha: Mapped[str | None] = mapped_column(String(SHA_LENGTH))
    last_modified: Mapped[datetime | None] = mapped_column(UTCDateTime)
    lease_owner: Mapped[str | None] = mapped_column(String(200))
    lease_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class WebhookEventRow(Base):
    """A received Hub webhook, unique by delivery key so a redelivery is processed once."""

    __tablename__ = "webhook_events"
    __table_args__ = (Index("ix_webhook_events_processed_at", "processed_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    delivery_key: Mapped[str] = mapped_column(String(128), unique=True)
    received_at: Mapped[datetime] = mapped_column(UTCDateTime)
    repo_id: Mapped[str | None] = mapped_column(String(REPO_ID_LENGTH))
    payload: Mapped[dict[str, Any]] = mapped_column(Json)
    processed_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
