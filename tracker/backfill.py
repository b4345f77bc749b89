"""Walk a repo's main history oldest to newest and record every revision not yet stored.

Each new revision is snapshotted (fetching only unseen blobs), diffed against
the previous recorded snapshot, estimated, and written with
``record_revision`` in one transaction together with the blobs it fetched.
A crash loses at most the revision in flight: a rerun skips every (repo,
sha) already recorded, so backfills resume where they stopped. Network
reads happen outside the write transaction, so a slow Hub never holds a
SQLite write lock.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from sqlalchemy.orm import Session

from storage import (
    Database,
    ensure_repo,
    has_revision,
    latest_revision,
    mark_missing_revisions,
    snapshot_at,
)
from storage.records import Change, Revision
from tracker.diff.revision import Parsed, RevisionContent
from tracker.hub import Hub
from tracker.process import SessionBlobs, commit, content_of, prepare
from tracker.progress import Progress
from tracker.repo_id import validate_repo_id


@dataclass(frozen=True)
class BackfillReport:
    """What one backfill did."""

    repo_id: str
    revisions: int
    recorded: int
    changes: int
    seconds: float
    off_main: tuple[str, ...] = ()


def backfill(
    database: Database,
    hub: Hub,
    repo_id: str,
    *,
    progress: Progress | None = None,
    newest_only: bool = False,
) -> BackfillReport:
    """Record every revision of ``repo_id``'s main branch that is not stored yet.

    With ``newest_only`` only the head is recorded when it is new (what
    ``track`` without ``--backfill`` does); the older history is left alone.
    ``progress`` (the caller's, it closes it) counts this repo's revisions
    into its total and each one as it is done, then the repo.
    """
    validate_repo_id(repo_id)
    started = time.monotonic()
    history = hub.commits(repo_id)
    off_main: list[str] = []
    with database.session() as session:
        ensure_repo(session, repo_id)
        todo = [r for r in history if not has_revision(session, repo_id, r.sha)]
        if latest_revision(session, repo_id) is not None:
            off_main = mark_missing_revisions(session, repo_id, [r.sha for r in history])
    if newest_only:
        todo = [r for r in todo if r.sha == history[-1].sha]
    cache: dict[tuple[str, str], Parsed] = {}
    recorded = changes = 0
    if progress is not None:
        progress.revisions_total = (progress.revisions_total or 0) + len(todo)
    for revision in todo:
        found = record_one(database, hub, revision, cache)
        if found is not None:
            recorded += 1
            changes += len(found)
        if progress is not None:
            progress.revision_done()
    if progress is not None:
        progress.repo_done()
    return BackfillReport(
        repo_id, len(history), recorded, changes, time.monotonic() - started, tuple(off_main)
    )


def record_one(
    database: Database,
    hub: Hub,
    revision: Revision,
    cache: dict[tuple[str, str], Parsed] | None = None,
) -> list[Change] | None:
    """Snapshot, diff, estimate and record one revision; its changes, or None if already stored.

    The same outcome record as the daemon's path (``tracker.process.prepare``)
    is built and recorded; the repo must be tracked already
    (``storage.ensure_repo``; ``backfill`` does it). Nothing is published:
    advisories and alerts belong to the daemon's path.
    """
    prepared = prepare(database, hub, revision, {} if cache is None else cache)
    if prepared is None or commit(database, prepared, fence=_no_fence, publish=None) is None:
        return None
    return list(prepared.outcome.changes)


def _no_fence(session: Session) -> None:
    """A command-line backfill holds no lease, so there is nothing to check before writing."""


def stored_content(session: Session, repo_id: str, sha: str) -> RevisionContent:
    """A recorded revision as the differs see it, read from storage alone (no Hub)."""
    return content_of(snapshot_at(session, repo_id, sha), SessionBlobs(session), {})


__all__ = ["BackfillReport", "backfill", "record_one", "stored_content"]
