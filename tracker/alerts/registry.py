"""Storing subscriptions: a SubscriptionSpec stored as its columns (``spec.columns()``).

The CLI (``subscribe``/``unsubscribe``) and the TOML file's
``[[subscriptions]]`` store through here, and the HTTP API (which cannot
import the tracker) stores the same ``columns()`` with the same storage
functions, so a subscription is written the same way whichever door it came
in by. A name is a subscription's identity: saving a
spec under a stored name replaces what that subscription asks for (and
reactivates it) while its outbox history and sequence counter stay; its
queued alerts for channels the new spec no longer lists are cancelled
(storage.outbox.cancel_unlisted_channels), the others go on to the same
channel, which a row names by identity (``storage.channel_key``).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy.orm import Session

from storage import NotFound, get_subscription, put_subscription, remove_subscription
from storage.records import Subscription
from tracker.alerts.spec import SubscriptionSpec


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
    return put_subscription(session, spec.name, spec.columns(), now=now)


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
        if stored is not None and spec.columns().held_by(stored):
            continue
        save_subscription(session, spec, now=now)
        changed.append(spec.name)
    return changed


__all__ = ["find", "remove", "save_subscription", "sync_configured"]
