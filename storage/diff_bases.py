"""What a worker reads before it prepares a revision, in as few round trips as it can.

Preparing one revision asks whether it is recorded, whether its parent on main (its
first parent) is, that one's snapshot and its estimate. A revision is only ever diffed
against that parent, never against whatever else happens to be recorded: recorded or
not, the parent is the caller's to read (from the Hub when storage lacks it), so the
changes of a revision do not depend on the order in which revisions arrived. The
revision and its parents are one query, and the base's files, snapshot extras and
estimate one each, none finding the same revision rows twice: against a database
across a network every round trip is a wait per revision, and at backfill scale per
million.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from storage.history import snapshot_of
from storage.models import RevisionRow
from storage.plans import estimate_of
from storage.records import Revision, Snapshot
from storage.repos import repo_row


@dataclass(frozen=True)
class DiffBase:
    """A revision's standing in storage: recorded already, or what it is compared with."""

    recorded: bool
    """(repo, sha) is recorded, on main or not: nothing is to be prepared."""
    repo_pk: int
    """The repo's key, for the caller's later statements about the same repo."""
    previous: Snapshot | None = None
    """The parent's snapshot when the parent is recorded; None for a first or a missing parent."""
    previous_plan: dict[str, Any] | None = None
    """The estimate stored with ``previous``, None where none was computed."""
    unrecorded_parent: str | None = None
    """The parent's sha when it has one that storage does not hold: read it elsewhere."""


def diff_base(session: Session, revision: Revision, repo_pk: int | None = None) -> DiffBase:
    """Whether ``revision`` is recorded and, if not, its first parent's snapshot and plan.

    The first parent is main's previous commit (``Hub.commits`` lists main's
    first-parent history); a merge's other parents are never the base. ``repo_pk``
    is the repo's key when the caller knows it already (from an earlier revision).
    """
    if repo_pk is None:
        repo_pk = repo_row(session, revision.repo_id).id
    parent = revision.parents[0] if revision.parents else None
    rows = {
        row.sha: row
        for row in session.scalars(
            select(RevisionRow).where(
                RevisionRow.repo_pk == repo_pk,
                RevisionRow.sha.in_([revision.sha, *([parent] if parent else [])]),
            )
        )
    }
    if revision.sha in rows:
        return DiffBase(recorded=True, repo_pk=repo_pk)
    if parent is None:
        return DiffBase(recorded=False, repo_pk=repo_pk)
    base = rows.get(parent)
    if base is None:
        return DiffBase(recorded=False, repo_pk=repo_pk, unrecorded_parent=parent)
    return DiffBase(
        recorded=False,
        repo_pk=repo_pk,
        previous=snapshot_of(session, revision.repo_id, base),
        previous_plan=estimate_of(session, base.id),
    )


__all__ = ["DiffBase", "diff_base"]
