"""What happens to a repo besides new commits: rewritten history, deletion, rename, gating.

Each is detected during a check, stored (the repo's status on ``repos``; a
rewritten history as revisions marked off main, their data kept) and
reported as a ``RepoEvent``: a structured log line and a metric. Events are
emitted on the transition only (active -> gated once, not on every poll of
a gated repo), and none of them is an error: the check that finds one
succeeds.
"""

from __future__ import annotations

import enum
import json
import logging
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.orm import Session

from storage import (
    RepoId,
    RepoStatus,
    mark_missing_revisions,
    recorded_shas,
    set_repo_status,
    withdraw_advisories,
)

log = logging.getLogger("neurarch.events")


class EventKind(enum.StrEnum):
    """What happened to a repo besides new commits; the value is the log's and metric's label."""

    FORCE_PUSH = "force_push"
    GONE = "gone"
    RENAMED = "renamed"
    PRIVATE = "private"
    GATED = "gated"
    RESTORED = "restored"


_STATUS_EVENT = {
    RepoStatus.GONE: EventKind.GONE,
    RepoStatus.RENAMED: EventKind.RENAMED,
    RepoStatus.PRIVATE: EventKind.PRIVATE,
    RepoStatus.GATED: EventKind.GATED,
    RepoStatus.ACTIVE: EventKind.RESTORED,
}


@dataclass(frozen=True)
class RepoEvent:
    """One transition of a repo, logged and counted; ``shas``: those a force-push took off main."""

    kind: EventKind
    repo_id: RepoId
    at: datetime
    detail: str
    shas: tuple[str, ...] = ()


def status_changed(
    session: Session,
    repo_id: RepoId,
    status: RepoStatus,
    *,
    now: datetime,
    renamed_to: str | None = None,
) -> RepoEvent | None:
    """Store what the Hub says about the repo; an event if that is news."""
    previous = set_repo_status(session, repo_id, status, renamed_to=renamed_to)
    if previous is status:
        return None
    detail = f"{previous.value} -> {status.value}"
    if renamed_to:
        detail += f" (now {renamed_to})"
    return RepoEvent(_STATUS_EVENT[status], repo_id, now, detail)


@dataclass(frozen=True)
class HistoryCheck:
    """What comparing main's history with the recorded one found."""

    event: RepoEvent | None
    """The force-push, if recorded revisions left main."""
    recorded: frozenset[str]
    """The shas recorded before the check, on main or not: the walk skips them unasked."""


def history_checked(
    session: Session, repo_id: RepoId, main_shas: Collection[str], *, now: datetime
) -> HistoryCheck:
    """Mark recorded revisions missing from main as off main and withdraw their advisories."""
    recorded = recorded_shas(session, repo_id)
    if not any(recorded.values()):
        return HistoryCheck(None, frozenset(recorded))
    gone = mark_missing_revisions(session, repo_id, main_shas, at=now)
    if not gone:
        return HistoryCheck(None, frozenset(recorded))
    # Their advisories stay in the log, withdrawn: feeds keep stable ids.
    withdraw_advisories(session, repo_id, gone, now)
    event = RepoEvent(
        EventKind.FORCE_PUSH,
        repo_id,
        now,
        f"history rewritten: {len(gone)} recorded revision(s) no longer on main",
        tuple(gone),
    )
    return HistoryCheck(event, frozenset(recorded))


def report(event: RepoEvent) -> None:
    """One structured log line per event (the metric is counted by the caller)."""
    log.warning(
        json.dumps(
            {
                "event": f"repo_{event.kind.value}",
                "repo": event.repo_id,
                "at": event.at.isoformat(),
                "detail": event.detail,
                "shas": list(event.shas),
            }
        )
    )


__all__ = ["EventKind", "HistoryCheck", "RepoEvent", "history_checked", "report", "status_changed"]
