"""Draining the webhook inbox: each delivery becomes an immediate check of its repo.

A delivery is a hint, not the truth (the Hub caps webhooks at 1,000 a day
and may repeat or reorder them): draining only makes the repo due now, and
the check reads the Hub itself. A delivery for a repo whose check is running
right now stays in the inbox until that check ends (the running check may
have read the head before the push), so no push is lost between the two.
Marking a delivery processed happens in the transaction that scheduled the
check, so a crash re-drains it, which is harmless; deliveries about repos we
do not track are marked and dropped. A rename (``movedTo``) is checked under
the old name, where the check reports it as an event.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from storage import (
    Database,
    mark_webhook_events_processed,
    pending_webhook_events,
    poll_states,
    schedule_check,
)


@dataclass(frozen=True)
class Drained:
    """What one drain did: deliveries marked processed (dropped ones too), checks made due, and
    deliveries left in the inbox because their repo's check was running."""

    deliveries: int
    checks_requested: int
    deferred: int


def drain(database: Database, *, now: datetime, batch: int = 500) -> Drained:
    """Turn unprocessed deliveries into due checks; returns what it did."""
    with database.session() as session:
        events = pending_webhook_events(session, batch)
        if not events:
            return Drained(0, 0, 0)
        wanted = {event.repo_id for event in events if event.repo_id}
        states = {state.repo_id: state for state in poll_states(session, wanted)}
        done: list[int] = []
        requested: set[str] = set()
        deferred = 0
        for event in events:
            state = None if event.repo_id is None else states.get(event.repo_id)
            if state is None:
                done.append(event.id)
                continue
            if state.lease_expires_at is not None and state.lease_expires_at > now:
                deferred += 1
                continue
            if state.repo_id not in requested:
                schedule_check(session, state.repo_id, now)
                requested.add(state.repo_id)
            done.append(event.id)
        mark_webhook_events_processed(session, done, now)
        return Drained(deliveries=len(done), checks_requested=len(requested), deferred=deferred)


__all__ = ["Drained", "drain"]
