"""What a worker reads before it prepares a revision, in as few round trips as it can.

Preparing one revision asks whether it is recorded, which recorded revision it is
diffed against (its parent, else the newest on main), that one's snapshot and its
estimate. Asked one function at a time that was eight queries, three of them finding
the same revision rows again; here the revision and its parents are one query, and
the base's files, snapshot extras and estimate one each. Against a database across a
network every round trip is a wait per revision, and at backfill scale per million.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from storage.history import latest_revision_row, snapshot_of
from storage.models import EstimateRow, RevisionRow
from storage.records import Revision, Snapshot
from storage.repos import repo_row


@dataclass(frozen=True)
class DiffBase:
    """A revision's standing in storage: recorded already, or what it is compared with."""

    recorded: bool
    """(repo, sha) is recorded, on main or not: nothing is to be prepared."""
    previous: Snapshot | None = None
    """The parent's snapshot if the parent is recorded, else the newest on main; None for a first."""
    previous_plan: dict[str, Any] | None = None
    """The estimate stored with ``previous``, None where none was computed."""


def diff_base(session: Session, revision: Revision) -> DiffBase:
    """Whether ``revision`` is recorded and, if not, the snapshot and plan it is diffed against."""
    repo_pk = repo_row(session, revision.repo_id).id
    rows = {
        row.sha: row
        for row in session.scalars(
            select(RevisionRow).where(
                RevisionRow.repo_pk == repo_pk,
                RevisionRow.sha.in_([revision.sha, *revision.parents]),
            )
        )
    }
    if revision.sha in rows:
        return DiffBase(recorded=True)
    base = next((rows[parent] for parent in revision.parents if parent in rows), None)
    if base is None:
        base = latest_revision_row(session, revision.repo_id)
    if base is None:
        return DiffBase(recorded=False)
    estimate = session.get(EstimateRow, base.id)
    return DiffBase(
        recorded=False,
        previous=snapshot_of(session, revision.repo_id, base),
        previous_plan=None if estimate is None else dict(estimate.plan),
    )


__all__ = ["DiffBase", "diff_base"]
