"""Which repos we follow, and what the Hub last said about each."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from storage.dialect import insert_ignoring_duplicates
from storage.errors import RepoNotFound
from storage.models import PollStateRow, RepoRow
from storage.records import JsonValue, RepoStatus, TrackedRepo
from storage.repo_ids import RepoId
from storage.values import require_aware, require_text


def ensure_repo(
    session: Session,
    repo_id: RepoId,
    *,
    now: datetime,
    options: Mapping[str, JsonValue] | None = None,
) -> TrackedRepo:
    """Track ``repo_id`` (again, if it was untracked); a new repo is due for a check at once.

    ``options`` (interval, ...) replace the stored ones when given.
    """
    moment = now
    require_aware(moment, "ensure_repo now")
    if options is not None:
        require_text(options, "repo options")
    # Insert-or-ignore, so two instances tracking the same new repo at once both succeed.
    insert_ignoring_duplicates(
        session,
        RepoRow,
        {
            "repo_id": repo_id,
            "added_at": moment,
            "status": RepoStatus.ACTIVE.value,
            "renamed_to": None,
            "tracked": True,
            "options": dict(options or {}),
        },
        ["repo_id"],
    )
    row = repo_row(session, repo_id)
    if not row.tracked:
        row.tracked = True
    if options is not None:
        row.options = dict(options)
    insert_ignoring_duplicates(
        session,
        PollStateRow,
        {"repo_pk": row.id, "next_check_at": moment, "failures": 0},
        ["repo_pk"],
    )
    session.flush()
    return to_tracked_repo(row)


def get_repo(session: Session, repo_id: RepoId) -> TrackedRepo:
    """The stored repo, tracked or not."""
    return to_tracked_repo(repo_row(session, repo_id))


def tracked_repos(session: Session) -> list[TrackedRepo]:
    """Every repo being followed, by repo id."""
    rows = session.scalars(select(RepoRow).where(RepoRow.tracked).order_by(RepoRow.repo_id))
    return [to_tracked_repo(row) for row in rows]


def untrack(session: Session, repo_id: RepoId, *, purge: bool = False) -> bool:
    """Stop following ``repo_id``; True if it was followed.

    Its history stays (feeds and advisories keep pointing at it) unless
    ``purge`` deletes the repo with everything recorded about it.
    """
    row = session.scalars(select(RepoRow).where(RepoRow.repo_id == repo_id)).one_or_none()
    if row is None:
        return False
    was_tracked = row.tracked
    if purge:
        session.execute(delete(RepoRow).where(RepoRow.id == row.id))
        session.expunge(row)
        session.info.get(_PKS, {}).pop(repo_id, None)
    else:
        row.tracked = False
        session.execute(delete(PollStateRow).where(PollStateRow.repo_pk == row.id))
    session.flush()
    return was_tracked


def set_repo_status(
    session: Session, repo_id: RepoId, status: RepoStatus, *, renamed_to: str | None = None
) -> RepoStatus:
    """Record what the Hub says about the repo now; returns the status it had before.

    The caller alerts on a transition (active -> gone), not on every check.
    """
    row = repo_row(session, repo_id)
    previous = RepoStatus(row.status)
    row.status = status.value
    row.renamed_to = renamed_to if status is RepoStatus.RENAMED else None
    session.flush()
    return previous


_ROWS = "storage.repo_rows"
"""``Session.info`` key of the repo rows this transaction has looked up."""
_PKS = "storage.repo_pks"
"""``Session.info`` key of the repo keys a caller handed this transaction."""


def remember_repo_pk(session: Session, repo_id: RepoId, repo_pk: int) -> None:
    """Keep ``repo_pk`` as the key of ``repo_id`` for the rest of the transaction: a worker
    read it with its claim, so the revision's later writes need not look it up."""
    session.info.setdefault(_PKS, {})[repo_id] = repo_pk


def repo_pk_of(session: Session, repo_id: RepoId) -> int:
    """The key of ``repo_id``: the one handed to this transaction, else its row's."""
    known: dict[str, int] = session.info.get(_PKS, {})
    if repo_id in known:
        return known[repo_id]
    return repo_row(session, repo_id).id


def repo_row(session: Session, repo_id: RepoId) -> RepoRow:
    """The row of ``repo_id``, for queries inside storage.

    Kept for the rest of the transaction: recording one revision asks for it from
    several queries, each a round trip to the server otherwise. A row the session
    no longer holds (purged) or that was renamed is looked up again.
    """
    known: dict[str, RepoRow] = session.info.setdefault(_ROWS, {})
    row = known.get(repo_id)
    if row is not None and row in session and row.repo_id == repo_id:
        return row
    row = session.scalars(select(RepoRow).where(RepoRow.repo_id == repo_id)).one_or_none()
    if row is None:
        raise RepoNotFound(f"repo {repo_id!r} is not tracked; track it first")
    known[repo_id] = row
    return row


def to_tracked_repo(row: RepoRow) -> TrackedRepo:
    """The typed TrackedRepo of a stored row; raises ValueError for a status outside RepoStatus."""
    return TrackedRepo(
        repo_id=RepoId(row.repo_id),
        added_at=row.added_at,
        status=RepoStatus(row.status),
        renamed_to=row.renamed_to,
        options=dict(row.options),
        tracked=row.tracked,
    )
