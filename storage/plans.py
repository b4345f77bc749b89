"""Plans stored once per content, as manifests are, not copied into every revision's row.

A revision's plan changes only when its config.json or weight manifest does, yet
every revision has one, and a plan with its per-card verdicts is tens of kilobytes
of JSON. It is written as a blob keyed by the sha256 of its JSON (compressed like
every blob, and so a key only ever meets identical bytes), and the estimate row
keeps the 64-character key. Rows written before migration 0008 keep the plan inline.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from sqlalchemy import select
from sqlalchemy.orm import Session

from storage.blobs import blob_bytes
from storage.errors import BlobNotFound
from storage.models import BlobRow, EstimateRow

PLAN_BLOB: Final = BlobRow.content_key == EstimateRow.plan_key
"""How a query over ``estimates`` outer-joins the plan's blob (none for an inline plan)."""


def estimate_of(session: Session, revision_pk: int) -> dict[str, Any] | None:
    """The plan stored for a revision, None where none was computed."""
    found = session.execute(
        select(EstimateRow, BlobRow)
        .outerjoin(BlobRow, PLAN_BLOB)
        .where(EstimateRow.revision_pk == revision_pk)
    ).one_or_none()
    return None if found is None else plan_of(found[0], found[1])


def plan_of(row: EstimateRow, blob: BlobRow | None) -> dict[str, Any]:
    """The plan of an estimate row: its blob, or the inline copy of an older row."""
    if row.plan_key is not None:
        if blob is None:
            raise BlobNotFound(f"the plan blob {row.plan_key} is missing")
        value: Mapping[str, Any] = json.loads(blob_bytes(blob))
        return dict(value)
    if row.plan is None:
        raise BlobNotFound(f"the estimate of revision {row.revision_pk} holds no plan")
    return dict(row.plan)


__all__ = ["PLAN_BLOB", "estimate_of", "plan_of"]
