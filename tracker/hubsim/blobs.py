"""File contents as the Hub stores them: git blobs, LFS objects, and bodies served on demand.

A file is a ``Blob``: its size, its git object id and, for LFS files, the sha256 the
Hub reports. The bytes themselves sit behind a ``Body`` so that a weight shard of
several gigabytes can be listed and range-read without ever existing in memory.
"""

from __future__ import annotations

import fnmatch
import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

CHUNK = 64 * 1024
LFS_SIZE_THRESHOLD = 10 * 1024 * 1024
"""huggingface_hub uploads anything larger through LFS, whatever .gitattributes says."""

GITATTRIBUTES = (Path(__file__).resolve().parent / "gitattributes.txt").read_bytes()
"""The .gitattributes the Hub writes in every new repo's "initial commit"."""


def _lfs_patterns(attributes: bytes) -> tuple[str, ...]:
    patterns = []
    for line in attributes.decode("utf-8").splitlines():
        fields = line.split()
        if len(fields) > 1 and "filter=lfs" in fields[1:]:
            patterns.append(fields[0])
    return tuple(patterns)


LFS_PATTERNS = _lfs_patterns(GITATTRIBUTES)


def is_lfs_path(path: str) -> bool:
    """Whether the Hub's default .gitattributes routes this path through LFS."""
    name = path.rsplit("/", 1)[-1]
    return any(fnmatch.fnmatchcase(name, p) or fnmatch.fnmatchcase(path, p) for p in LFS_PATTERNS)


def git_blob_id(content: bytes) -> str:
    """The sha1 git gives a blob: ``blob {len}\\0`` + content."""
    return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()


def lfs_pointer(sha256: str, size: int) -> bytes:
    """The pointer file git stores in place of an LFS object."""
    return (
        f"version https://git-lfs.github.com/spec/v1\noid sha256:{sha256}\nsize {size}\n".encode()
    )


class Body(Protocol):
    """Bytes of one file, readable by slice, produced on demand."""

    @property
    def size(self) -> int:
        """The file's full size in bytes, what the Hub reports and Content-Length counts."""
        ...

    def chunks(self, start: int, end: int) -> Iterator[bytes]:
        """Bytes ``[start, end)`` in pieces of at most ``CHUNK``."""
        ...


@dataclass(frozen=True)
class InlineBody:
    """A file whose bytes are held in memory (every recorded corpus file)."""

    content: bytes

    @property
    def size(self) -> int:
        """The length of the bytes held."""
        return len(self.content)

    def chunks(self, start: int, end: int) -> Iterator[bytes]:
        """Slices of the held bytes, each at most ``CHUNK`` long."""
        for offset in range(start, end, CHUNK):
            yield self.content[offset : min(offset + CHUNK, end)]


@dataclass(frozen=True)
class HeaderThenZeros:
    """A prefix that exists, followed by zeros up to ``size``: a weight file with no weights.

    The zeros are generated while writing, so serving one costs no memory; tests
    assert through the request counters that a client never asks for them.
    """

    prefix: bytes
    size: int

    def chunks(self, start: int, end: int) -> Iterator[bytes]:
        """The prefix's bytes, then zeros generated per chunk, so no body is ever held."""
        offset = start
        while offset < end:
            if offset < len(self.prefix):
                piece = self.prefix[offset : min(end, len(self.prefix), offset + CHUNK)]
            else:
                piece = bytes(min(CHUNK, end - offset))
            yield piece
            offset += len(piece)


@dataclass(frozen=True)
class LfsInfo:
    """What the Hub reports for an LFS object: ``lfs {sha256|oid, size, pointerSize}``."""

    sha256: str
    size: int
    pointer_size: int


@dataclass(frozen=True)
class Blob:
    """One file's identity and bytes at some revision."""

    oid: str
    """The git blob id (of the pointer file, for LFS files), as the tree's ``oid``."""
    body: Body
    lfs: LfsInfo | None = None

    @property
    def size(self) -> int:
        """The real file size (of the LFS object, not of its pointer)."""
        return self.body.size

    @property
    def etag(self) -> str:
        """The sha256 for LFS files, the git blob id otherwise (what clients cache by)."""
        return self.lfs.sha256 if self.lfs else self.oid

    def text(self) -> bytes | None:
        """The content when it is held in memory (never for weight bodies)."""
        return self.body.content if isinstance(self.body, InlineBody) else None


def regular_blob(path: str, content: bytes) -> Blob:
    """A committed file, stored through LFS when the Hub would store it so."""
    if is_lfs_path(path) or len(content) > LFS_SIZE_THRESHOLD:
        return lfs_blob(InlineBody(content), hashlib.sha256(content).hexdigest())
    return Blob(oid=git_blob_id(content), body=InlineBody(content))


def lfs_blob(body: Body, sha256: str) -> Blob:
    """An LFS file: the tree holds its pointer, the Hub reports its sha256 and real size."""
    pointer = lfs_pointer(sha256, body.size)
    return Blob(
        oid=git_blob_id(pointer),
        body=body,
        lfs=LfsInfo(sha256=sha256, size=body.size, pointer_size=len(pointer)),
    )
