"""Weight manifests stored once per content, not copied into every revision's row.

A manifest (tensor -> dtype, shape, file) is the same for every revision
that leaves the weights alone, and it is the largest thing a snapshot holds:
inline, a header of millions of tensors would be copied whole into each later
revision's row. It is
written as a blob keyed by the sha256 of its JSON (the LFS scheme, so a key
can only ever meet identical bytes), and a snapshot keeps the 64-character
key. Rows written before (migration 0004) keep the manifest inline.
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from storage.blobs import blob_bytes
from storage.errors import BlobNotFound
from storage.models import BlobRow, SnapshotRow


def snapshot_extras(
    session: Session, revision_pk: int
) -> tuple[SnapshotRow, BlobRow | None] | None:
    """A revision's snapshot row with its manifest's blob, in one query (None: no row)."""
    found = session.execute(
        select(SnapshotRow, BlobRow)
        .outerjoin(BlobRow, BlobRow.content_key == SnapshotRow.manifest_key)
        .where(SnapshotRow.revision_pk == revision_pk)
    ).one_or_none()
    return None if found is None else (found[0], found[1])


def manifest_of(row: SnapshotRow, blob: BlobRow | None) -> dict[str, Any] | None:
    """The manifest of a snapshot row: its blob, or the inline copy of an older row."""
    if row.manifest_key is not None:
        if blob is None:
            raise BlobNotFound(f"the manifest blob {row.manifest_key} is missing")
        value = json.loads(blob_bytes(blob))
        return value if isinstance(value, dict) else None
    return None if row.manifest is None else dict(row.manifest)


__all__ = ["manifest_of", "snapshot_extras"]
