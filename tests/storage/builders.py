"""Small builders of records for storage tests: real values, nothing faked."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta

from storage import Change, FileEntry, Revision, Severity, Snapshot

BASE_DATE = datetime(2024, 4, 18, 16, 0, tzinfo=UTC)
RECORDED_AT = datetime(2024, 6, 1, 12, 0, tzinfo=UTC)
"""When a test's writes happen: storage stamps the time its caller passes, never its own."""


def recorded_at() -> datetime:
    """A clock that always reads ``RECORDED_AT``, for the writers that take a clock."""
    return RECORDED_AT


def git_blob_id(data: bytes) -> str:
    """The id git gives a blob: sha1 over a 'blob <size>\\0' header and the bytes."""
    return hashlib.sha1(b"blob %d\x00" % len(data) + data).hexdigest()


def sha_of(label: str) -> str:
    """A deterministic 40-hex commit sha for a test label."""
    return hashlib.sha1(label.encode()).hexdigest()


def revision(repo_id: str, index: int, *, parents: tuple[str, ...] | None = None) -> Revision:
    """The ``index``-th commit of a linear history, one hour after the previous one."""
    previous = (sha_of(f"{repo_id}/{index - 1}"),) if index > 0 else ()
    return Revision(
        repo_id=repo_id,
        sha=sha_of(f"{repo_id}/{index}"),
        parents=previous if parents is None else parents,
        date=BASE_DATE + timedelta(hours=index),
        title=f"Update config.json ({index})",
        author="maintainer",
    )


def snapshot(
    rev: Revision,
    texts: dict[str, bytes],
    *,
    weights: int = 1,
    card: dict[str, object] | None = None,
) -> Snapshot:
    """A snapshot listing ``texts`` (path -> bytes) as plain files and LFS weight shards."""
    files = [FileEntry(path, len(data), git_blob_id(data)) for path, data in texts.items()]
    files += [
        FileEntry(
            f"model-{n:05d}-of-{weights:05d}.safetensors",
            4_965_799_096,
            sha_of(f"pointer{n}"),
            hashlib.sha256(f"weights{n}".encode()).hexdigest(),
        )
        for n in range(1, weights + 1)
    ]
    return Snapshot(
        revision=rev,
        files=tuple(files),
        texts={path: git_blob_id(data) for path, data in texts.items()},
        manifest={"model.embed_tokens.weight": {"dtype": "BF16", "shape": [128256, 2048]}},
        card=card or {"license": "llama3.2"},
    )


def eos_change(old: int, new: int) -> Change:
    """The kind of change a real eos_token_id fix produces."""
    return Change(
        artifact="generation_config",
        path="generation_config.json",
        kind="modified",
        old={"eos_token_id": old},
        new={"eos_token_id": new},
        severity=Severity.HIGH,
        message=f"eos_token_id {old} -> {new}",
    )
