"""What a worker reads before it prepares a revision, in as few round trips as it can.

Preparing one revision asks whether it is recorded, whether its parent on main (its
first parent) is, that one's snapshot and its estimate. A revision is only ever diffed
against that parent, never against whatever else happens to be recorded: recorded or
not, the parent is the caller's to read (from the Hub when storage lacks it), so the
changes of a revision do not depend on the order in which revisions arrived. The
revision and its parent, with the parent's snapshot row, estimate, manifest and plan,
are one query, and the parent's files one more: against a database
across a network every round trip is a wait per revision, and at backfill scale per
million.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, aliased

from storage.history import snapshot_with
from storage.models import BlobRow, EstimateRow, RevisionRow, SnapshotRow
from storage.plans import plan_of
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
    manifest, plan = aliased(BlobRow), aliased(BlobRow)
    rows = {
        found[0].sha: found
        for found in session.execute(
            select(RevisionRow, SnapshotRow, manifest, EstimateRow, plan)
            .outerjoin(SnapshotRow, SnapshotRow.revision_pk == RevisionRow.id)
            .outerjoin(manifest, manifest.content_key == SnapshotRow.manifest_key)
            .outerjoin(EstimateRow, EstimateRow.revision_pk == RevisionRow.id)
            .outerjoin(plan, plan.content_key == EstimateRow.plan_key)
            .where(
                RevisionRow.repo_pk == repo_pk,
                RevisionRow.sha.in_([revision.sha, *([parent] if parent else [])]),
            )
        )
    }
    if revision.sha in rows:
        return DiffBase(recorded=True, repo_pk=repo_pk)
    if parent is None:
        return DiffBase(recorded=False, repo_pk=repo_pk)
    found = rows.get(parent)
    if found is None:
        return DiffBase(recorded=False, repo_pk=repo_pk, unrecorded_parent=parent)
    base, snapshot_row, manifest_blob, estimate_row, plan_blob = found
    extras = None if snapshot_row is None else (snapshot_row, manifest_blob)
    return DiffBase(
        recorded=False,
        repo_pk=repo_pk,
        previous=snapshot_with(session, revision.repo_id, base, extras),
        previous_plan=None if estimate_row is None else plan_of(estimate_row, plan_blob),
    )


__all__ = ["DiffBase", "diff_base"]
