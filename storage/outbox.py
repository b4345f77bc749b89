"""The delivery outbox: alerts queued in the revision's transaction.

Subscriptions themselves (the records the queue delivers for) are stored by
``storage.subscription_rows``; this module only bumps a subscription row's
sequence counter.

Order: each subscription hands out gapless-by-lock sequence numbers (the
subscription row is the counter, so concurrent writers queue behind one
another), and only the oldest undelivered row of a subscription's channel is
ever due, so a receiver that is down holds back what comes after it on that
channel rather than seeing it out of order, while the subscription's other
channels go on. A claim pushes ``next_attempt_at`` forward by a
lease, so a worker that dies mid-delivery leaves the row to be retried.

A row names its channel by identity, ``channel_key(kind, url)`` (or ``feed``),
never by its position in the subscription's list: a queued alert goes to the
destination it was queued for or nowhere. Replacing a subscription
(``storage.subscription_rows.put_subscription``) keeps the queued alerts of every
channel the new version still lists (same kind and URL; a new secret signs
them) and cancels the others explicitly (``cancel_unlisted_channels``): they
become dead letters saying so, visible and never sent.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta

from sqlalchemy import Select, exists, select, update
from sqlalchemy.orm import Session, aliased

from storage.dialect import insert_returning_id
from storage.errors import NotFound
from storage.history import revision_row
from storage.models import DeliveryRow, RepoRow, RevisionRow, SubscriptionRow
from storage.records import Delivery, DeliveryStatus, JsonValue
from storage.repo_ids import RepoId
from storage.values import require_aware, require_text, storable_text

MAX_ERROR_LENGTH = 2000
FEED_CHANNEL = "feed"
CHANNEL_KEY_DIGITS = 16
"""Hex digits of the URL's SHA-256 in a channel key (64 bits: no two URLs of one subscription meet)."""
CANCELLED = "cancelled: the subscription was replaced without this channel"


def channel_key(kind: str, url: str) -> str:
    """A channel's identity in the outbox: its kind and a digest of its URL.

    A digest, not the URL: a webhook or apprise URL may carry a token, and the
    key is shown with the row (and sent as part of the ``webhook-id`` header).
    """
    return f"{kind}:{hashlib.sha256(url.encode('utf-8')).hexdigest()[:CHANNEL_KEY_DIGITS]}"


def listed_channel_keys(channels: Sequence[Mapping[str, JsonValue]]) -> set[str]:
    """The keys of a subscription's stored channels (``{"type", "url", ...}``), plus the feed."""
    keys = {FEED_CHANNEL}
    for channel in channels:
        kind, url = channel.get("type"), channel.get("url")
        if isinstance(kind, str) and isinstance(url, str):
            keys.add(channel_key(kind, url))
    return keys


def cancel_unlisted_channels(
    session: Session, subscription_id: int, channels: Sequence[Mapping[str, JsonValue]]
) -> int:
    """Cancel the pending rows whose channel ``channels`` no longer lists; how many."""
    result = session.execute(
        update(DeliveryRow)
        .where(
            DeliveryRow.subscription_pk == subscription_id,
            DeliveryRow.status == DeliveryStatus.PENDING.value,
            DeliveryRow.channel.not_in(sorted(listed_channel_keys(channels))),
        )
        .values(status=DeliveryStatus.DEAD_LETTER.value, last_error=CANCELLED)
        .execution_options(synchronize_session=False)
    )
    return int(getattr(result, "rowcount", 0) or 0)


def enqueue_delivery(
    session: Session,
    subscription_id: int,
    channel: str,
    event_key: str,
    payload: Mapping[str, JsonValue],
    *,
    now: datetime,
    advisory_id: str | None = None,
    repo_id: RepoId | None = None,
    sha: str | None = None,
) -> Delivery | None:
    """Queue one alert; None if this (subscription, channel, event_key) was queued before."""
    require_aware(now, "enqueue_delivery now")
    require_text([channel, event_key], f"delivery {event_key}")
    payload = storable_text(dict(payload))  # an alert quotes upstream text
    duplicate = select(DeliveryRow.id).where(
        DeliveryRow.subscription_pk == subscription_id,
        DeliveryRow.channel == channel,
        DeliveryRow.event_key == event_key,
    )
    if session.scalar(duplicate) is not None:
        return None
    sequence = session.scalar(
        update(SubscriptionRow)
        .where(SubscriptionRow.id == subscription_id)
        .values(next_sequence=SubscriptionRow.next_sequence + 1)
        .returning(SubscriptionRow.next_sequence - 1)
        .execution_options(synchronize_session=False)
    )
    if sequence is None:
        raise NotFound(f"no subscription has the id {subscription_id}")
    revision_pk = None
    if repo_id is not None and sha is not None:
        revision_pk = revision_row(session, repo_id, sha).id
    new_id = insert_returning_id(
        session,
        DeliveryRow,
        {
            "subscription_pk": subscription_id,
            "sequence": sequence,
            "channel": channel,
            "event_key": event_key,
            "advisory_id": advisory_id,
            "revision_pk": revision_pk,
            "payload": dict(payload),
            "status": DeliveryStatus.PENDING.value,
            "attempts": 0,
            "next_attempt_at": now,
            "created_at": now,
        },
        ["subscription_pk", "channel", "event_key"],
    )
    return None if new_id is None else _deliveries(session, _by_ids([new_id]))[0]


def claim_due_deliveries(
    session: Session,
    now: datetime,
    limit: int,
    lease_seconds: float,
    *,
    lane: tuple[int, str] | None = None,
) -> list[Delivery]:
    """Take up to ``limit`` due deliveries, each the oldest undelivered of its channel.

    Each claim counts an attempt and hides the row for ``lease_seconds``.
    ``lane`` (subscription id, channel) keeps the claim to that one channel.
    """
    require_aware(now, "claim_due_deliveries now")
    earlier = aliased(DeliveryRow)
    blocked = exists().where(
        earlier.subscription_pk == DeliveryRow.subscription_pk,
        earlier.channel == DeliveryRow.channel,
        earlier.status == DeliveryStatus.PENDING.value,
        earlier.sequence < DeliveryRow.sequence,
    )
    chosen = (
        select(DeliveryRow.id)
        .join(SubscriptionRow, SubscriptionRow.id == DeliveryRow.subscription_pk)
        .where(
            SubscriptionRow.active,
            DeliveryRow.status == DeliveryStatus.PENDING.value,
            DeliveryRow.next_attempt_at <= now,
            ~blocked,
            *(
                ()
                if lane is None
                else (DeliveryRow.subscription_pk == lane[0], DeliveryRow.channel == lane[1])
            ),
        )
        .order_by(DeliveryRow.next_attempt_at, DeliveryRow.id)
        .limit(limit)
        .with_for_update(skip_locked=True, of=DeliveryRow)
        .scalar_subquery()
    )
    ids = session.scalars(
        update(DeliveryRow)
        .where(DeliveryRow.id.in_(chosen), DeliveryRow.next_attempt_at <= now)
        .values(
            attempts=DeliveryRow.attempts + 1,
            next_attempt_at=now + timedelta(seconds=lease_seconds),
        )
        .returning(DeliveryRow.id)
        .execution_options(synchronize_session=False)
    ).all()
    return _deliveries(session, _by_ids(list(ids))) if ids else []


def record_delivery_success(session: Session, delivery_id: int, at: datetime) -> Delivery:
    """Mark a delivery done."""
    require_aware(at, "delivered at")
    return _settle(
        session, delivery_id, {"status": DeliveryStatus.DELIVERED.value, "delivered_at": at}
    )


def record_delivery_failure(
    session: Session, delivery_id: int, error: str, *, retry_at: datetime | None
) -> Delivery:
    """Record a failed attempt: retry at ``retry_at``, or dead-letter it when that is None."""
    require_aware(retry_at, "retry_at")
    message = error.replace("\x00", "")[:MAX_ERROR_LENGTH]
    values: dict[str, object] = {"last_error": message}
    if retry_at is None:
        values["status"] = DeliveryStatus.DEAD_LETTER.value
    else:
        values["next_attempt_at"] = retry_at
    return _settle(session, delivery_id, values)


def deliveries(
    session: Session, subscription_id: int, *, status: DeliveryStatus | None = None
) -> list[Delivery]:
    """A subscription's deliveries in sequence order, optionally of one status."""
    query = _base().where(DeliveryRow.subscription_pk == subscription_id)
    if status is not None:
        query = query.where(DeliveryRow.status == status.value)
    return _deliveries(session, query)


def dead_letters(session: Session) -> list[Delivery]:
    """Every delivery given up on, oldest first: shown in the API and on the page."""
    return _deliveries(
        session, _base().where(DeliveryRow.status == DeliveryStatus.DEAD_LETTER.value)
    )


def _settle(session: Session, delivery_id: int, values: Mapping[str, object]) -> Delivery:
    session.execute(
        update(DeliveryRow)
        .where(DeliveryRow.id == delivery_id)
        .values(**values)
        .execution_options(synchronize_session=False)
    )
    found = _deliveries(session, _by_ids([delivery_id]))
    if not found:
        raise NotFound(f"no delivery has the id {delivery_id}")
    return found[0]


def _base() -> Select[DeliveryRow, str | None, str | None]:
    return (
        select(DeliveryRow, RepoRow.repo_id, RevisionRow.sha)
        .outerjoin(RevisionRow, RevisionRow.id == DeliveryRow.revision_pk)
        .outerjoin(RepoRow, RepoRow.id == RevisionRow.repo_pk)
        .order_by(DeliveryRow.subscription_pk, DeliveryRow.sequence)
        .execution_options(populate_existing=True)
    )


def _by_ids(ids: list[int]) -> Select[DeliveryRow, str | None, str | None]:
    return _base().where(DeliveryRow.id.in_(ids))


def _deliveries(
    session: Session, query: Select[DeliveryRow, str | None, str | None]
) -> list[Delivery]:
    return [
        Delivery(
            id=row.id,
            subscription_id=row.subscription_pk,
            sequence=row.sequence,
            channel=row.channel,
            event_key=row.event_key,
            payload=dict(row.payload),
            status=DeliveryStatus(row.status),
            attempts=row.attempts,
            next_attempt_at=row.next_attempt_at,
            created_at=row.created_at,
            advisory_id=row.advisory_id,
            repo_id=None if repo_id is None else RepoId(repo_id),
            sha=sha,
            last_error=row.last_error,
            delivered_at=row.delivered_at,
        )
        for row, repo_id, sha in session.execute(query)
    ]


__all__ = [
    "CANCELLED",
    "CHANNEL_KEY_DIGITS",
    "FEED_CHANNEL",
    "MAX_ERROR_LENGTH",
    "cancel_unlisted_channels",
    "channel_key",
    "claim_due_deliveries",
    "dead_letters",
    "deliveries",
    "enqueue_delivery",
    "listed_channel_keys",
    "record_delivery_failure",
    "record_delivery_success",
]
