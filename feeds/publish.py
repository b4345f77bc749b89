"""The advisory writer: the advisory of a newly recorded revision, in its transaction.

The daemon registers ``advisory_writer(clock)`` in its table of publishers; it reads
only the revision's outcome record (``storage.records.RevisionOutcome``:
snapshot, previous snapshot, changes, both plans) inside the transaction
that records the revision, so the advisory commits with it or not at all,
and nothing is read back from the blob store or estimated again. The
advisory's times are the daemon's ``clock`` (a test's fake clock), like every
other row of that transaction.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime

from sqlalchemy.orm import Session

from estimator import Plan
from feeds.delta import EstimateDelta
from feeds.osv import build_advisory
from storage import put_advisory
from storage.records import Publication, RevisionOutcome, StoredRevision


def advisory_writer(
    clock: Callable[[], datetime],
) -> Callable[[Session, RevisionOutcome[Plan], Publication], Publication]:
    """The publisher-table entry: ``publication`` with the advisory id stored, if any."""

    def write(
        session: Session, outcome: RevisionOutcome[Plan], publication: Publication
    ) -> Publication:
        return replace(publication, advisory_id=publish_revision(session, outcome, clock()))

    return write


def publish_revision(session: Session, outcome: RevisionOutcome[Plan], now: datetime) -> str | None:
    """Store the advisory of this revision if it is noteworthy; its id, or None.

    The revision that first brings a model config into the repo (the upload
    after the Hub's empty "initial commit") is the repo's baseline: everything
    in it is new, nobody pinned anything before it, so it publishes nothing.
    """
    if is_upload(outcome):
        return None
    new = StoredRevision(outcome.revision, now)
    previous = outcome.previous_revision
    old = StoredRevision(previous, now) if previous else None
    advisory = build_advisory(
        new.revision.repo_id,
        old,
        new,
        outcome.changes,
        EstimateDelta.between(outcome.previous_plan, outcome.plan),
    )
    if advisory is None:
        return None
    put_advisory(session, advisory)
    return advisory.id


def is_upload(outcome: RevisionOutcome[Plan]) -> bool:
    """True when the previous revision held no config.json and this one brings it."""
    previous_had_config = outcome.previous_plan is not None or any(
        c.artifact == "config" and c.kind != "added" for c in outcome.changes
    )
    return outcome.plan is not None and not previous_had_config


__all__ = ["advisory_writer", "is_upload", "publish_revision"]
