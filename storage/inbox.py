"""The webhook inbox: a delivery answered 2xx is in the database before the answer goes out.

The HTTP endpoint writes each delivery with a key (the Hub's delivery id, or
a hash of the body); a redelivery with the same key is a no-op. The tracker
drains the inbox; on PostgreSQL concurrent drainers skip each other's rows.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import datetime

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from storage.dialect import insert_ignoring_duplicates
from storage.errors import InvalidRecord
from storage.models import WebhookEventRow
from storage.records import JsonValue, WebhookEvent
from storage.repo_ids import RepoId
from storage.values import require_aware, require_text

MAX_KEY_LENGTH = 128


def record_webhook_event(
    session: Session,
    delivery_key: str,
    payload: Mapping[str, JsonValue],
    received_at: datetime,
    *,
    repo_id: RepoId | None = None,
) -> bool:
    """Put a delivery in the inbox; False if that ``delivery_key`` was received before."""
    if not delivery_key or len(delivery_key) > MAX_KEY_LENGTH:
        raise InvalidRecord(f"webhook delivery key must be 1 to {MAX_KEY_LENGTH} characters")
    require_aware(received_at, "webhook received_at")
    require_text([delivery_key, repo_id, dict(payload)], "webhook event")
    return insert_ignoring_duplicates(
        session,
        WebhookEventRow,
        {
            "delivery_key": delivery_key,
            "received_at": received_at,
            "repo_id": repo_id,
            "payload": dict(payload),
            "processed_at": None,
        },
        ["delivery_key"],
    )


def pending_webhook_events(session: Session, limit: int = 100) -> list[WebhookEvent]:
    """Unprocessed deliveries, oldest first, locked for this transaction on PostgreSQL."""
    rows = session.scalars(
        select(WebhookEventRow)
        .where(WebhookEventRow.processed_at.is_(None))
        .order_by(WebhookEventRow.id)
        .limit(limit)
        .with_for_update(skip_locked=True)
    )
    return [_event(row) for row in rows]


def mark_webhook_events_processed(
    session: Session, event_ids: Collection[int], processed_at: datetime
) -> None:
    """Record that the deliveries were acted on, in the transaction that acted on them."""
    require_aware(processed_at, "webhook processed_at")
    if event_ids:
        session.execute(
            update(WebhookEventRow)
            .where(WebhookEventRow.id.in_(list(event_ids)))
            .values(processed_at=processed_at)
            .execution_options(synchronize_session=False)
        )


def _event(row: WebhookEventRow) -> WebhookEvent:
    return WebhookEvent(
        id=row.id,
        delivery_key=row.delivery_key,
        received_at=row.received_at,
        payload=dict(row.payload),
        repo_id=None if row.repo_id is None else RepoId(row.repo_id),
        processed_at=row.processed_at,
    )
