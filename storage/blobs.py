"""Content-addressed blob store: the bytes of text artifacts, stored once per content key.

The key is the git blob id or the LFS sha256 the Hub reports, so a file
shared by many revisions is one row however many revisions list it. Bytes
are zlib-compressed when that makes them smaller (JSON and templates shrink
severalfold); the uncompressed size is kept beside them and checked on read.
The store trusts the caller's key: the Hub computed it, and recomputing a
git blob id here would tie storage to git's object format.
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Final

from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session

from storage.dialect import (
    execute_core,
    insert_ignoring_duplicates,
    insert_many_ignoring_duplicates,
)
from storage.errors import BlobCorrupt, BlobNotFound, BlobTooLarge, InvalidRecord
from storage.models import BlobRow
from storage.values import require_aware

MAX_BLOB_BYTES = 64 * 1024 * 1024
"""Largest blob accepted: far above any config or tokenizer, far below a weight file."""

_MAX_KEY_LENGTH = 64
_KEYS_PER_QUERY = 500


def put_blob(
    session: Session, content_key: str, data: bytes, *, at: datetime, limit: int = MAX_BLOB_BYTES
) -> bool:
    """Store ``data`` under ``content_key`` unless it is there already; True if it was new.

    ``at`` is the writer's clock reading, stored as the blob's creation time.
    Oversized data raises BlobTooLarge before anything is written.
    """
    require_aware(at, "put_blob at")
    row = _blob_row(content_key, data, at, limit)
    return insert_ignoring_duplicates(session, BlobRow, row, ["content_key"])


def put_blobs(
    session: Session, blobs: Mapping[str, bytes], *, at: datetime, limit: int = MAX_BLOB_BYTES
) -> None:
    """Store each of ``blobs`` (content key -> bytes) the store lacks, in one batched insert.

    A revision brings several texts at once; one statement for all of them
    instead of one round trip each. An oversized one raises BlobTooLarge
    before anything is written.
    """
    require_aware(at, "put_blobs at")
    rows = [_blob_row(key, data, at, limit) for key, data in sorted(blobs.items())]
    insert_many_ignoring_duplicates(session, BlobRow, rows, ["content_key"])


def _blob_row(content_key: str, data: bytes, at: datetime, limit: int) -> dict[str, object]:
    """The row storing ``data``, zlib-compressed where that makes it smaller."""
    _check_key(content_key)
    if len(data) > limit:
        raise BlobTooLarge(
            f"blob {content_key} is {len(data):,} bytes, over the store's limit of {limit:,}; "
            "record the file as oversized instead of storing it"
        )
    compressed = zlib.compress(data, level=6)
    use_zlib = len(compressed) < len(data)
    return {
        "content_key": content_key,
        "size": len(data),
        "stored_size": len(compressed) if use_zlib else len(data),
        "compression": "zlib" if use_zlib else "none",
        "data": compressed if use_zlib else data,
        "created_at": at,
    }


def document_blob(document: str) -> tuple[str, bytes]:
    """A JSON document's content key (the sha256 of its UTF-8 bytes, the LFS scheme, so a key
    only ever meets identical bytes) and those bytes: how manifests and plans are stored."""
    data = document.encode()
    return hashlib.sha256(data).hexdigest(), data


def get_blob(session: Session, content_key: str) -> bytes:
    """The bytes stored under ``content_key``."""
    row = session.get(BlobRow, content_key)
    if row is None:
        raise BlobNotFound(f"no blob is stored under content key {content_key!r}")
    return blob_bytes(row)


def blob_bytes(row: BlobRow) -> bytes:
    """The bytes of a blob row already read (by a join, say), checked against its size."""
    data = zlib.decompress(row.data) if row.compression == "zlib" else bytes(row.data)
    if len(data) != row.size:
        raise BlobCorrupt(
            f"blob {row.content_key} holds {len(data):,} bytes but was stored with {row.size:,}"
        )
    return data


def known_content_keys(session: Session, keys: Iterable[str]) -> set[str]:
    """Which of ``keys`` the store already holds (one query per 500 keys)."""
    wanted = sorted(set(keys))
    found: set[str] = set()
    for start in range(0, len(wanted), _KEYS_PER_QUERY):
        chunk = wanted[start : start + _KEYS_PER_QUERY]
        found.update(execute_core(session, _KNOWN, {"known_keys": chunk}).scalars())
    return found


_KNOWN: Final = select(BlobRow.content_key).where(
    BlobRow.content_key.in_(bindparam("known_keys", expanding=True))
)


def _check_key(content_key: str) -> None:
    if not content_key or len(content_key) > _MAX_KEY_LENGTH or not content_key.isalnum():
        raise InvalidRecord(
            f"content key {content_key!r} is not a git blob id or sha256 (hex, at most "
            f"{_MAX_KEY_LENGTH} characters)"
        )
