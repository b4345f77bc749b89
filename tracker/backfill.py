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

import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy.orm import Session
from tqdm import tqdm

from storage import (
    Database,
    ensure_repo,
    get_blob,
    has_revision,
    known_content_keys,
    latest_revision,
    mark_missing_revisions,
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
from tracker.repo_id import validate_repo_id
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
    progress: bool = False,
    newest_only: bool = False,
) -> BackfillReport:
    """Record every revision of ``repo_id``'s main branch that is not stored yet.

    With ``newest_only`` only the head is recorded when it is new (what
    ``track`` without ``--backfill`` does); the older history is left alone.
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
    bar = tqdm(todo, desc=repo_id, unit="rev", file=sys.stderr, disable=not progress)
    for revision in bar:
        found = record_one(database, hub, revision, cache)
        if found is not None:
            recorded += 1
            changes += len(found)
    bar.close()
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

    The repo must be tracked already (``storage.ensure_repo``; ``backfill`` does it).
    """
    cache = {} if cache is None else cache
    with database.read_session() as session:
        if has_revision(session, revision.repo_id, revision.sha):
            return None
        blobs = SessionBlobs(session)
        previous = _previous(session, revision)
        result = take_snapshot(hub, revision, previous, blobs, parse_cache=cache)
        new = result.content(blobs)
        old = _content(previous, blobs, cache) if previous else None
        found = diff_revisions(old, new) + list(result.problems)
        plan, problem = estimate(new)
        if problem is not None:
            found.append(problem)
        old_plan = plan_at(session, revision.repo_id, previous.revision.sha) if previous else None
        found = by_severity(found + diff_plans(old_plan, plan))
    with database.session() as session:
        for key, data in result.fetched.items():
            put_blob(session, key, data)
        if not record_revision(session, result.snapshot, found, plan):
            return None
    return found


def _previous(session: Session, revision: Revision) -> Snapshot | None:
    """The snapshot to diff against: the parent if recorded, else the latest recorded one."""
    for parent in revision.parents:
        if has_revision(session, revision.repo_id, parent):
            return snapshot_at(session, revision.repo_id, parent)
    latest = latest_revision(session, revision.repo_id)
    return snapshot_at(session, revision.repo_id, latest.sha) if latest else None


def _content(
    snapshot: Snapshot, blobs: SessionBlobs, cache: dict[tuple[str, str], Parsed]
) -> RevisionContent:
    return RevisionContent(snapshot, LazyBlobs(snapshot.texts, blobs.read), cache)


def stored_content(session: Session, repo_id: str, sha: str) -> RevisionContent:
    """A recorded revision as the differs see it, read from storage alone (no Hub)."""
    return _content(snapshot_at(session, repo_id, sha), SessionBlobs(session), {})


__all__ = ["BackfillReport", "SessionBlobs", "backfill", "record_one", "stored_content"]
