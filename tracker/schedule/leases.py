"""The worker's view of due work: claims with the repo's interval, and the lease fence.

Leases live in storage (``storage.polling``: ``FOR UPDATE SKIP LOCKED`` on
PostgreSQL, one writer on SQLite). What this adds is the fence: every
revision transaction first extends the lease, guarded by the owner (its first
statement renews the lease and returns the recording's read: ``lease_fence``,
``storage.recording``), so an instance whose lease expired and was taken over
writes nothing more on that repo (``LeaseLost``) and the revision it had in hand
is left to the new holder, which keeps each revision processed once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.orm import Session

from storage import (
    Database,
    LeaseFence,
    RepoId,
    claim_due_repos,
    ensure_repo,
    extend_lease,
    newest_last_modified,
    record_check_failure,
    record_check_success,
    release_lease,
    release_leases_of,
)
from tracker.errors import TrackerError

INTERVAL_OPTION = "interval_s"


class LeaseLost(TrackerError):
    """Another instance holds this repo's lease now; the work in hand is dropped, not written."""


@dataclass(frozen=True)
class Claim:
    """A repo this worker may check until its lease expires."""

    repo_id: RepoId
    owner: str
    last_seen_sha: str | None
    last_modified: datetime | None
    failures: int
    interval_s: float | None
    repo_pk: int | None = None
    """The repo's key in storage, read with the claim."""


def track(
    session: Session, repo_id: RepoId, *, now: datetime, interval_s: float | None = None
) -> None:
    """Follow ``repo_id`` (due at once if new); a given interval replaces the stored one."""
    options: Mapping[str, float] | None = (
        None if interval_s is None else {INTERVAL_OPTION: interval_s}
    )
    ensure_repo(session, repo_id, now=now, options=options)


def claim_due(
    database: Database, owner: str, *, now: datetime, lease_s: float, limit: int
) -> list[Claim]:
    """Lease up to ``limit`` due repos, most overdue first."""
    with database.session() as session:
        states = claim_due_repos(session, owner, now, limit, lease_s)
        claims = []
        for state in states:
            interval = state.options.get(INTERVAL_OPTION)
            claims.append(
                Claim(
                    repo_id=state.repo_id,
                    owner=owner,
                    last_seen_sha=state.last_seen_sha,
                    last_modified=state.last_modified,
                    failures=state.failures,
                    interval_s=float(interval) if isinstance(interval, int | float) else None,
                    repo_pk=state.repo_pk,
                )
            )
        return claims


def lease_fence(claim: Claim, *, now: datetime, lease_s: float) -> LeaseFence:
    """The fence of a revision's write (``storage.LeaseFence``): ``claim``'s lease, live at
    ``now``, renewed for ``lease_s`` by the statement that checks it."""
    return LeaseFence.lasting(claim.owner, now, lease_s)


def renew(session: Session, claim: Claim, *, now: datetime, lease_s: float) -> None:
    """Extend the lease inside the caller's transaction; LeaseLost if it is no longer ours."""
    if not extend_lease(session, claim.repo_id, claim.owner, now, lease_s, claim.repo_pk):
        raise LeaseLost(f"{claim.repo_id}: the lease of {claim.owner} expired or was taken over")


def complete(
    session: Session,
    claim: Claim,
    *,
    now: datetime,
    head_sha: str | None,
    next_check_at: datetime,
) -> None:
    """A successful check: remember the head, reset failures, hand the lease back."""
    if not record_check_success(
        session,
        claim.repo_id,
        claim.owner,
        checked_at=now,
        next_check_at=next_check_at,
        seen_sha=head_sha,
        last_modified=claim.last_modified,
    ):
        raise LeaseLost(f"{claim.repo_id}: the lease of {claim.owner} was taken over")


def fail(
    session: Session, claim: Claim, *, now: datetime, error: str, next_check_at: datetime
) -> None:
    """A failed check: count it, keep the error, retry at ``next_check_at``."""
    if (
        record_check_failure(
            session,
            claim.repo_id,
            claim.owner,
            checked_at=now,
            next_check_at=next_check_at,
            error=error,
        )
        is None
    ):
        raise LeaseLost(f"{claim.repo_id}: the lease of {claim.owner} was taken over")


def release(database: Database, claim: Claim) -> None:
    """Hand the lease back unfinished (shutdown): the repo stays due for anyone."""
    with database.session() as session:
        release_lease(session, claim.repo_id, claim.owner)


def release_previous(database: Database, instance: str) -> int:
    """Free the leases an earlier run of ``instance`` left behind (killed, not stopped).

    Owners are ``INSTANCE/WORKER/PID``: a restarted instance takes its repos
    back at once instead of waiting for their leases to expire. Instances
    sharing a database need distinct names (the default, host:port, is).
    """
    with database.session() as session:
        return release_leases_of(session, f"{instance}/")


def watermark(session: Session) -> datetime | None:
    """The newest Hub lastModified recorded for a tracked repo (where discovery resumes)."""
    return newest_last_modified(session)


__all__ = [
    "INTERVAL_OPTION",
    "Claim",
    "LeaseLost",
    "claim_due",
    "complete",
    "fail",
    "lease_fence",
    "release",
    "release_previous",
    "renew",
    "track",
    "watermark",
]
