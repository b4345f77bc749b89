"""Process one revision exactly once: read outside, write everything in one transaction.

The read half (snapshot, diff, estimate: network and CPU, outside any write
lock) is ``prepare``; ``commit`` then writes blobs, revision, the published
rows (through the ``Publisher`` the daemon passes in: feeds builds
advisories, tracker may not import it) and the lease renewal in ONE
transaction keyed by (repo, sha). ``tracker.backfill.record_one`` is the
same two steps with no lease and no publisher. A crash before the commit leaves
nothing; a retry after it finds (repo, sha) recorded and writes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.orm import Session

from storage import (
    Database,
    get_blob,
    has_revision,
    known_content_keys,
    latest_revision,
    plan_at,
    put_blob,
    record_revision,
    snapshot_at,
)
from storage.records import Change, Revision, Snapshot
from tracker.diff.common import by_severity
from tracker.diff.plan_delta import diff_plans
from tracker.diff.revision import Parsed, RevisionContent, diff_revisions
from tracker.estimate import estimate
from tracker.hub import Hub
from tracker.snapshot import LazyBlobs, take_snapshot


class SessionBlobs:
    """The blob store seen through one session, as snapshots and differs need it."""

    def __init__(self, session: Session) -> None:
        self._session = session

    def known(self, keys: Iterable[str]) -> set[str]:
        return known_content_keys(self._session, keys)

    def read(self, key: str) -> bytes:
        return get_blob(self._session, key)


@dataclass(frozen=True)
class Processed:
    """What a revision produced, handed to the publisher inside the recording transaction."""

    snapshot: Snapshot
    changes: tuple[Change, ...]
    plan: dict[str, Any] | None
    previous: Revision | None
    previous_plan: dict[str, Any] | None


Publisher = Callable[[Session, Processed], object]
"""Writes advisories and outbox rows for a new revision, in the caller's transaction."""

InTransaction = Callable[[Session], None]
"""Runs first inside the recording transaction (the lease fence); raising aborts the commit."""


@dataclass(frozen=True)
class Prepared:
    """A revision read from the Hub and diffed, not yet written."""

    processed: Processed
    fetched: dict[str, bytes]


def prepare(
    database: Database,
    hub: Hub,
    revision: Revision,
    cache: dict[tuple[str, str], Parsed],
) -> Prepared | None:
    """Snapshot, diff and estimate ``revision``; None if it is already recorded."""
    with database.read_session() as session:
        if has_revision(session, revision.repo_id, revision.sha):
            return None
        blobs = SessionBlobs(session)
        previous = _previous(session, revision)
        result = take_snapshot(hub, revision, previous, blobs, parse_cache=cache)
        new = result.content(blobs)
        old = content_of(previous, blobs, cache) if previous else None
        found = diff_revisions(old, new) + list(result.problems)
        plan, problem = estimate(new)
        if problem is not None:
            found.append(problem)
        old_plan = plan_at(session, revision.repo_id, previous.revision.sha) if previous else None
        found = by_severity(found + diff_plans(old_plan, plan))
    processed = Processed(
        snapshot=result.snapshot,
        changes=tuple(found),
        plan=plan,
        previous=previous.revision if previous else None,
        previous_plan=old_plan,
    )
    return Prepared(processed, dict(result.fetched))


def commit(
    database: Database,
    prepared: Prepared,
    *,
    fence: InTransaction,
    publish: Publisher | None,
) -> bool:
    """Write the revision, its blobs and its published rows in one transaction; True if new."""
    processed = prepared.processed
    with database.session() as session:
        fence(session)
        for key, data in prepared.fetched.items():
            put_blob(session, key, data)
        if not record_revision(
            session,
            processed.snapshot,
            list(processed.changes),
            processed.plan,
            processed_at=datetime.now(UTC),
        ):
            return False
        if publish is not None:
            publish(session, processed)
    return True


def content_of(
    snapshot: Snapshot, blobs: SessionBlobs, cache: dict[tuple[str, str], Parsed]
) -> RevisionContent:
    """A recorded snapshot as the differs see it, its texts read from the blob store on demand."""
    return RevisionContent(snapshot, LazyBlobs(snapshot.texts, blobs.read), cache)


def _previous(session: Session, revision: Revision) -> Snapshot | None:
    """The snapshot to diff against: the parent if recorded, else the latest recorded one."""
    for parent in revision.parents:
        if has_revision(session, revision.repo_id, parent):
            return snapshot_at(session, revision.repo_id, parent)
    latest = latest_revision(session, revision.repo_id)
    return snapshot_at(session, revision.repo_id, latest.sha) if latest else None


__all__ = [
    "InTransaction",
    "Prepared",
    "Processed",
    "Publisher",
    "SessionBlobs",
    "commit",
    "content_of",
    "prepare",
]
