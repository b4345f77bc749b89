"""The daemon's publisher: the advisory of a newly recorded revision, in its transaction.

The daemon hands over what processing produced (snapshot, changes, both
plans, the previous revision) inside the transaction that records the
revision, so the advisory commits with it or not at all. The shape is a
protocol because feeds never imports the tracker that defines it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Protocol

from sqlalchemy.orm import Session

from feeds.delta import EstimateDelta
from feeds.osv import build_advisory
from storage import put_advisory
from storage.records import Change, Revision, Snapshot, StoredRevision


class ProcessedRevision(Protocol):
    """What the tracker's ``Processed`` carries that publishing reads."""

    @property
    def snapshot(self) -> Snapshot: ...
    @property
    def changes(self) -> Sequence[Change]: ...
    @property
    def plan(self) -> dict[str, Any] | None: ...
    @property
    def previous(self) -> Revision | None: ...
    @property
    def previous_plan(self) -> dict[str, Any] | None: ...


def publish_revision(session: Session, processed: ProcessedRevision) -> str | None:
    """Store the advisory of this revision if it is noteworthy; its id, or None.

    The revision that first brings a model config into the repo (the upload
    after the Hub's empty "initial commit") is the repo's baseline: everything
    in it is new, nobody pinned anything before it, so it publishes nothing.
    """
    if is_upload(processed):
        return None
    now = datetime.now(UTC)
    new = StoredRevision(processed.snapshot.revision, now)
    old = StoredRevision(processed.previous, now) if processed.previous else None
    advisory = build_advisory(
        new.revision.repo_id,
        old,
        new,
        processed.changes,
        EstimateDelta.between(processed.previous_plan, processed.plan),
    )
    if advisory is None:
        return None
    put_advisory(session, advisory)
    return advisory.id


def is_upload(processed: ProcessedRevision) -> bool:
    """True when the previous revision held no config.json and this one brings it."""
    previous_had_config = processed.previous_plan is not None or any(
        c.artifact == "config" and c.kind != "added" for c in processed.changes
    )
    return processed.plan is not None and not previous_had_config


__all__ = ["ProcessedRevision", "is_upload", "publish_revision"]
