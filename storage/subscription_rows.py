"""Stored subscriptions: add, read, replace and remove the records alerts are queued for.

A name is a subscription's identity (it appears in URLs); removing one only
deactivates it, so its outbox history (storage.outbox) stays on record and a
later add of the name replaces what it asks for. Each repo pattern is also
stored as a lookup key (storage.repo_patterns), so the subscriptions naming
a repo are read by an index, not found by reading every subscription.

Storage keeps the record, its columns (``SubscriptionColumns``) and its
document form (``subscription_document``), shared by the tracker and feeds.
The table of the document's fields is tracker.alerts.fields, not here: the
CLI builds its flags from it when the parser is built, which must not load
SQLAlchemy (that module's docstring gives the whole decision).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from sqlalchemy import delete, insert, select, update
from sqlalchemy.orm import Session

from storage.errors import IntegrityConflict, InvalidRecord, NotFound
from storage.models import SubscriptionRepoKeyRow, SubscriptionRow
from storage.outbox import cancel_unlisted_channels
from storage.recording import forget_unsubscribed, no_subscription_names
from storage.records import JsonValue, Severity, Subscription
from storage.repo_ids import RepoId
from storage.repo_patterns import lookup_keys, names_repo, repo_key
from storage.values import require_aware, require_text

MASK: Final = "********"
"""How a stored secret is shown (CLI, API): the same mask everywhere, never the secret."""


@dataclass(frozen=True)
class SubscriptionColumns:
    """What a subscription asks for, as storage keeps it beside its name.

    The tracker's spec builds it (``SubscriptionSpec.columns``) for the CLI,
    the configuration file and the HTTP API alike, so a subscription is
    stored the same way whichever door it came in by.
    """

    repo_patterns: tuple[str, ...]
    spec: Mapping[str, JsonValue]
    channels: tuple[Mapping[str, JsonValue], ...]
    min_severity: Severity = Severity.INFO

    def held_by(self, record: Subscription) -> bool:
        """True if ``record`` is active and stores exactly these columns."""
        return (
            record.active
            and tuple(record.repo_patterns) == self.repo_patterns
            and dict(record.spec) == dict(self.spec)
            and [dict(c) for c in record.channels] == [dict(c) for c in self.channels]
            and record.min_severity == self.min_severity
        )


def put_subscription(
    session: Session, name: str, columns: SubscriptionColumns, *, now: datetime
) -> tuple[Subscription, bool]:
    """Store ``columns`` under ``name``: add it, or replace (and reactivate) the stored one.

    True when added. A replaced subscription keeps its outbox history and
    sequence counter; its queued alerts for channels ``columns`` no longer
    lists are cancelled (storage.outbox.cancel_unlisted_channels).
    """
    exists = session.scalar(select(SubscriptionRow.id).where(SubscriptionRow.name == name))
    arguments = (name, columns.repo_patterns, columns.spec, columns.channels)
    if exists is None:
        added = add_subscription(
            session, *arguments, created_at=now, min_severity=columns.min_severity
        )
        return added, True
    replaced = update_subscription(session, *arguments, min_severity=columns.min_severity)
    cancel_unlisted_channels(session, replaced.id, columns.channels)
    return replaced, False


def add_subscription(
    session: Session,
    name: str,
    repo_patterns: Sequence[str],
    spec: Mapping[str, JsonValue],
    channels: Sequence[Mapping[str, JsonValue]],
    *,
    created_at: datetime,
    min_severity: Severity = Severity.INFO,
) -> Subscription:
    """Store a new subscription; a name already in use (active or not) is a conflict."""
    require_aware(created_at, "subscription created_at")
    require_text([name, list(repo_patterns), dict(spec), [dict(c) for c in channels]], name)
    if not name or not repo_patterns:
        raise InvalidRecord("a subscription needs a name and at least one repo pattern")
    if session.scalar(select(SubscriptionRow.id).where(SubscriptionRow.name == name)):
        raise IntegrityConflict(f"a subscription named {name!r} exists; pick another name")
    row = SubscriptionRow(
        name=name,
        repo_patterns=list(repo_patterns),
        spec=dict(spec),
        channels=[dict(channel) for channel in channels],
        min_severity=int(min_severity),
        created_at=created_at,
        active=True,
        next_sequence=1,
    )
    session.add(row)
    session.flush()
    _store_keys(session, row.id, repo_patterns)
    return _subscription(row)


def get_subscription(session: Session, name: str) -> Subscription:
    """The subscription with that name."""
    row = session.scalars(select(SubscriptionRow).where(SubscriptionRow.name == name)).first()
    if row is None:
        raise NotFound(f"no subscription is named {name!r}")
    return _subscription(row)


def subscriptions(session: Session, *, include_inactive: bool = False) -> list[Subscription]:
    """Subscriptions by name; removed ones only if asked."""
    query = select(SubscriptionRow).order_by(SubscriptionRow.name)
    if not include_inactive:
        query = query.where(SubscriptionRow.active)
    return [_subscription(row) for row in session.scalars(query)]


def update_subscription(
    session: Session,
    name: str,
    repo_patterns: Sequence[str],
    spec: Mapping[str, JsonValue],
    channels: Sequence[Mapping[str, JsonValue]],
    *,
    min_severity: Severity = Severity.INFO,
) -> Subscription:
    """Replace what a subscription asks for (and reactivate it); its outbox history stays."""
    require_text([name, list(repo_patterns), dict(spec), [dict(c) for c in channels]], name)
    if not repo_patterns:
        raise InvalidRecord("a subscription needs at least one repo pattern")
    row = session.scalars(select(SubscriptionRow).where(SubscriptionRow.name == name)).first()
    if row is None:
        raise NotFound(f"no subscription is named {name!r}")
    row.repo_patterns = list(repo_patterns)
    row.spec = dict(spec)
    row.channels = [dict(channel) for channel in channels]
    row.min_severity = int(min_severity)
    row.active = True
    session.flush()
    _store_keys(session, row.id, repo_patterns)
    return _subscription(row)


def subscriptions_naming(session: Session, repo_id: RepoId) -> list[Subscription]:
    """Active subscriptions with a pattern naming ``repo_id``, by name.

    Only rows keyed by the repo, its org or ``*`` are read (an index lookup);
    a subscription to other repos or orgs is never loaded, and none at all when
    recording the revision in this transaction found that none can name the repo
    (``storage.recording``).
    """
    if no_subscription_names(session, repo_id):
        return []
    keyed = select(SubscriptionRepoKeyRow.subscription_pk).where(
        SubscriptionRepoKeyRow.key.in_(lookup_keys(repo_id))
    )
    query = (
        select(SubscriptionRow)
        .where(SubscriptionRow.active, SubscriptionRow.id.in_(keyed))
        .order_by(SubscriptionRow.name)
    )
    rows = session.scalars(query)
    return [_subscription(row) for row in rows if names_repo(row.repo_patterns, repo_id)]


def subscriptions_by_id(session: Session, ids: Sequence[int]) -> dict[int, Subscription]:
    """The subscriptions with these ids (removed ones too), keyed by id; unknown ids are absent."""
    if not ids:
        return {}
    query = select(SubscriptionRow).where(SubscriptionRow.id.in_(sorted(set(ids))))
    return {row.id: _subscription(row) for row in session.scalars(query)}


def remove_subscription(session: Session, name: str) -> bool:
    """Deactivate a subscription (its outbox history stays); False if none was active."""
    result = session.execute(
        update(SubscriptionRow)
        .where(SubscriptionRow.name == name, SubscriptionRow.active)
        .values(active=False)
        .execution_options(synchronize_session=False)
    )
    return bool(getattr(result, "rowcount", 0))


def subscription_document(record: Subscription) -> dict[str, JsonValue]:
    """A stored subscription as the document it was made from (secrets as stored).

    The tracker's parser reads it back (``SubscriptionSpec.from_record``) and
    the HTTP API answers it redacted, so the record's columns map to the
    document's fields in this one place.
    """
    return {
        "name": record.name,
        "repos": list(record.repo_patterns),
        **record.spec,
        "min_severity": record.min_severity.label,
        "channels": [dict(channel) for channel in record.channels],
    }


def _store_keys(session: Session, subscription_pk: int, repo_patterns: Sequence[str]) -> None:
    """The lookup keys of ``repo_patterns``, replacing the subscription's stored ones."""
    session.execute(
        delete(SubscriptionRepoKeyRow).where(
            SubscriptionRepoKeyRow.subscription_pk == subscription_pk
        )
    )
    keys = sorted({repo_key(pattern) for pattern in repo_patterns})
    forget_unsubscribed(session)
    session.execute(
        insert(SubscriptionRepoKeyRow),
        [{"subscription_pk": subscription_pk, "key": key} for key in keys],
    )


def _subscription(row: SubscriptionRow) -> Subscription:
    return Subscription(
        id=row.id,
        name=row.name,
        repo_patterns=tuple(row.repo_patterns),
        spec=dict(row.spec),
        channels=tuple(dict(channel) for channel in row.channels),
        created_at=row.created_at,
        min_severity=Severity(row.min_severity),
        active=row.active,
    )


__all__ = [
    "MASK",
    "SubscriptionColumns",
    "add_subscription",
    "get_subscription",
    "put_subscription",
    "remove_subscription",
    "subscription_document",
    "subscriptions",
    "subscriptions_by_id",
    "subscriptions_naming",
    "update_subscription",
]
