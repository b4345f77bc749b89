"""Storing subscriptions: the one place a SubscriptionSpec becomes storage's arguments.

The CLI (``subscribe``/``unsubscribe``), the TOML file's ``[[subscriptions]]``
and the API all store through here, so a subscription is written the same way
whichever door it came in by. A name is a subscription's identity: saving a
spec under a stored name replaces what that subscription asks for (and
reactivates it) while its outbox history and sequence counter stay.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.orm import Session

from storage import (
    NotFound,
    add_subscription,
    get_subscription,
    remove_subscription,
    update_subscription,
)
from storage.records import JsonValue, Severity, Subscription
from tracker.alerts.spec import SubscriptionSpec


@dataclass(frozen=True)
class StoredFields:
    """What storage keeps of a spec: the columns add/update_subscription take."""

    repo_patterns: tuple[str, ...]
    spec: Mapping[str, JsonValue]
    channels: tuple[Mapping[str, JsonValue], ...]
    min_severity: Severity

    @classmethod
    def of(cls, spec: SubscriptionSpec) -> StoredFields:
        return cls(
            repo_patterns=spec.repos,
            spec=spec.spec_json(),
            channels=tuple(channel.to_json() for channel in spec.channels),
            min_severity=spec.min_severity,
        )

    def matches(self, record: Subscription) -> bool:
        """True if ``record`` already stores exactly this (and is active)."""
        return (
            record.active
            and tuple(record.repo_patterns) == self.repo_patterns
            and dict(record.spec) == dict(self.spec)
            and [dict(c) for c in record.channels] == [dict(c) for c in self.channels]
            and record.min_severity == self.min_severity
        )


def find(session: Session, name: str) -> Subscription | None:
    """The stored subscription named ``name`` (active or removed), or None."""
    try:
        return get_subscription(session, name)
    except NotFound:
        return None


def save_subscription(
    session: Session, spec: SubscriptionSpec, *, now: datetime
) -> tuple[Subscription, bool]:
    """Store ``spec``: add it, or replace the stored one of that name; True when added."""
    fields = StoredFields.of(spec)
    if find(session, spec.name) is None:
        added = add_subscription(
            session,
            spec.name,
            fields.repo_patterns,
            fields.spec,
            fields.channels,
            created_at=now,
            min_severity=fields.min_severity,
        )
        return added, True
    replaced = update_subscription(
        session,
        spec.name,
        fields.repo_patterns,
        fields.spec,
        fields.channels,
        min_severity=fields.min_severity,
    )
    return replaced, False


def remove(session: Session, name: str) -> bool:
    """Deactivate the subscription ``name``; False if no active one has that name."""
    return remove_subscription(session, name)


def sync_configured(
    session: Session, specs: Sequence[SubscriptionSpec], *, now: datetime
) -> list[str]:
    """Make storage hold the configuration file's subscriptions; the names it changed.

    Missing ones are added, ones that differ (or were removed) are replaced,
    identical ones are left alone so their rows are not rewritten at every
    start, and subscriptions the file does not name (made with ``subscribe``
    or the API) are never touched.
    """
    changed: list[str] = []
    for spec in specs:
        stored = find(session, spec.name)
        if stored is not None and StoredFields.of(spec).matches(stored):
            continue
        save_subscription(session, spec, now=now)
        changed.append(spec.name)
    return changed


__all__ = ["StoredFields", "find", "remove", "save_subscription", "sync_configured"]
