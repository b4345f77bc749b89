"""Walk a repo's main history oldest to newest and record every revision not yet stored.

Each new revision is snapshotted (fetching only unseen blobs), diffed against
its parent on main (read from the Hub when it is not recorded), estimated, and
written with ``record_revision`` in one transaction together with the blobs it
fetched and what the publishers wrote: the same path as the daemon's
(``tracker.revision.process``), so a revision recorded here is published here, once.
A crash loses at most the revision in flight: a rerun skips every (repo,
sha) already recorded, so backfills resume where they stopped. Network
reads happen outside the write transaction, so a slow Hub never holds a
SQLite write lock.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Never

from sqlalchemy.orm import Session
from tqdm import tqdm

from storage import (
    Database,
    RepoId,
    ensure_repo,
    has_revision,
    latest_revision,
    mark_missing_revisions,
    place_on_main,
    snapshot_at,
)
from storage.records import Change, Revision
from tracker.diff.revision import Parsed, RevisionContent
from tracker.hub.client import Hub
from tracker.hub.repo_id import validate_repo_id
from tracker.revision.process import Publishers, commit, prepare, remember
from tracker.revision.session_blobs import SessionBlobs, content_of
from tracker.revision.walk import Walk


@dataclass(frozen=True)
class BackfillReport:
    """What one backfill did."""

    repo_id: RepoId
    revisions: int
    recorded: int
    changes: int
    seconds: float
    off_main: tuple[str, ...] = ()
    advisories: int = 0


def backfill(
    database: Database,
    hub: Hub,
    repo_id: RepoId,
    *,
    progress: tqdm[Never] | None = None,
    newest_only: bool = False,
    publish: Publishers | None = None,
    clock: Callable[[], datetime],
) -> BackfillReport:
    """Record (and publish, with ``publish``) every revision of main that is not stored yet.

    With ``newest_only`` only the head is recorded when it is new (what
    ``track`` without ``--backfill`` does), diffed against its parent; the
    older history is left to the daemon's first check. ``publish`` is the
    daemon's table (``tracker.daemon.revision_publishers``); without it
    nothing is published, which only tests that fill a database use.
    ``clock`` stamps what is stored. ``progress`` (the caller's bar, which it closes) gets
    this repo's revisions added to its total and counts each one as it is done.
    """
    validate_repo_id(repo_id)
    started = time.monotonic()
    history = hub.commits(repo_id)
    off_main: list[str] = []
    with database.session() as session:
        ensure_repo(session, repo_id, now=clock())
        todo = [r for r in history if not has_revision(session, repo_id, r.sha)]
        if latest_revision(session, repo_id) is not None:
            shas = [r.sha for r in history]
            off_main = mark_missing_revisions(session, repo_id, shas, at=clock())
    if newest_only:
        todo = [r for r in todo if r.sha == history[-1].sha]
    walk = Walk()
    listed = {r.sha: r for r in history}
    recorded = changes = published = 0
    if progress is not None:
        progress.total = (progress.total or 0) + len(todo)
    for revision in todo:
        found = _record(database, hub, revision, walk, listed, publish, clock)
        if found is not None:
            recorded += 1
            changes += len(found.changes)
            published += found.advisory is not None
        if progress is not None:
            progress.update()
    if recorded:
        with database.session() as session:
            place_on_main(session, repo_id, [r.sha for r in history])
    return BackfillReport(
        repo_id,
        len(history),
        recorded,
        changes,
        time.monotonic() - started,
        tuple(off_main),
        published,
    )


def record_one(
    database: Database,
    hub: Hub,
    revision: Revision,
    cache: dict[tuple[str, str], Parsed] | None = None,
    *,
    clock: Callable[[], datetime],
) -> list[Change] | None:
    """Snapshot, diff, estimate and record one revision; its changes, or None if already stored.

    The same outcome record as the daemon's path (``tracker.revision.process.prepare``)
    is built and recorded; the repo must be tracked already
    (``storage.ensure_repo``; ``backfill`` does it). Nothing is published:
    tests use it to fill a database; ``backfill`` with ``publish`` is what
    commands call.
    """
    found = _record(
        database, hub, revision, Walk({} if cache is None else cache), None, None, clock
    )
    return None if found is None else list(found.changes)


@dataclass(frozen=True)
class _Recorded:
    changes: tuple[Change, ...]
    advisory: str | None


def _record(
    database: Database,
    hub: Hub,
    revision: Revision,
    walk: Walk,
    listed: Mapping[str, Revision] | None,
    publish: Publishers | None,
    clock: Callable[[], datetime],
) -> _Recorded | None:
    prepared = prepare(database, hub, revision, walk, listed)
    if prepared is None:
        return None
    # a command-line backfill holds no lease: nothing to check before writing
    publication = commit(database, prepared, fence=None, publish=publish, clock=clock)
    if publication is None:  # another process recorded (and published) it first
        return None
    remember(walk, prepared)
    return _Recorded(prepared.outcome.changes, publication.advisory_id)


def stored_content(session: Session, repo_id: RepoId, sha: str) -> RevisionContent:
    """A recorded revision as the differs see it, read from storage alone (no Hub)."""
    return content_of(snapshot_at(session, repo_id, sha), SessionBlobs(session), {})


__all__ = ["BackfillReport", "backfill", "record_one", "stored_content"]
