"""Tables of a repo's history: repos, revisions, their files, blobs, snapshots, changes, estimates.

A revision is keyed by (repo, sha): that key is what makes recording a
revision idempotent. Files point at blobs by content key only (no foreign
key), because most files (weights) are listed but never stored.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from storage.models.base import Base, Json, StorableText, UTCDateTime

REPO_ID_LENGTH = 200
SHA_LENGTH = 64


class RepoRow(Base):
    """A repo the tracker follows or followed, kept with its status so its history stays
    readable."""

    __tablename__ = "repos"
    __table_args__ = (
        CheckConstraint(
            "status IN ('active', 'gone', 'gated', 'private', 'renamed')", name="status"
        ),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    repo_id: Mapped[str] = mapped_column(String(REPO_ID_LENGTH), unique=True)
    added_at: Mapped[datetime] = mapped_column(UTCDateTime)
    status: Mapped[str] = mapped_column(String(16), default="active")
    renamed_to: Mapped[str | None] = mapped_column(String(REPO_ID_LENGTH))
    tracked: Mapped[bool] = mapped_column(Boolean, default=True)
    options: Mapped[dict[str, Any]] = mapped_column(Json, default=dict)


class RevisionRow(Base):
    """A commit on a repo's main chain; ``position`` orders it, never the pusher's ``date``."""

    __tablename__ = "revisions"
    __table_args__ = (
        UniqueConstraint("repo_pk", "sha"),
        Index("ix_revisions_repo_pk_date", "repo_pk", "date"),
        Index("ix_revisions_repo_pk_position", "repo_pk", "position"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    repo_pk: Mapped[int] = mapped_column(ForeignKey("repos.id", ondelete="CASCADE"))
    sha: Mapped[str] = mapped_column(String(SHA_LENGTH))
    parents: Mapped[list[str]] = mapped_column(Json)
    date: Mapped[datetime] = mapped_column(UTCDateTime)
    title: Mapped[str] = mapped_column(StorableText)
    author: Mapped[str | None] = mapped_column(StorableText)
    position: Mapped[int | None] = mapped_column(Integer)
    """Place on main's parent chain (its parent's plus one): what "newest" means, not ``date``,
    which the pusher's clock wrote. None only for rows from before migration 0004."""
    processed_at: Mapped[datetime] = mapped_column(UTCDateTime)
    on_main: Mapped[bool] = mapped_column(Boolean, default=True)
    off_main_since: Mapped[datetime | None] = mapped_column(UTCDateTime)


class RevisionFileRow(Base):
    """One file of a revision's tree; ``ordinal`` keeps the listing's order."""

    __tablename__ = "revision_files"
    # Paths have any length (git sets none), too long for a btree key: storage keeps them
    # distinct per revision itself (history._validate), the database keeps the order unique.
    __table_args__ = (UniqueConstraint("revision_pk", "ordinal"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    revision_pk: Mapped[int] = mapped_column(ForeignKey("revisions.id", ondelete="CASCADE"))
    ordinal: Mapped[int] = mapped_column(Integer)
    path: Mapped[str] = mapped_column(StorableText)
    size: Mapped[int] = mapped_column(BigInteger)
    blob_id: Mapped[str] = mapped_column(String(SHA_LENGTH))
    lfs_sha256: Mapped[str | None] = mapped_column(String(SHA_LENGTH))
    content_key: Mapped[str] = mapped_column(String(SHA_LENGTH), index=True)


class BlobRow(Base):
    """Content stored once by its key (LFS sha256 or git blob id), possibly zlib-compressed."""

    __tablename__ = "blobs"
    __table_args__ = (CheckConstraint("compression IN ('none', 'zlib')", name="compression"),)

    content_key: Mapped[str] = mapped_column(String(SHA_LENGTH), primary_key=True)
    size: Mapped[int] = mapped_column(BigInteger)
    stored_size: Mapped[int] = mapped_column(BigInteger)
    compression: Mapped[str] = mapped_column(String(8))
    data: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)


class SnapshotRow(Base):
    """What a Snapshot holds beyond its file list."""

    __tablename__ = "snapshots"

    revision_pk: Mapped[int] = mapped_column(
        ForeignKey("revisions.id", ondelete="CASCADE"), primary_key=True
    )
    texts: Mapped[dict[str, str]] = mapped_column(Json)
    oversized: Mapped[list[str]] = mapped_column(Json)
    manifest: Mapped[dict[str, Any] | None] = mapped_column(Json)
    """The weight manifest inline: rows from before migration 0004 only."""
    manifest_key: Mapped[str | None] = mapped_column(String(SHA_LENGTH), index=True)
    """The manifest's blob (sha256 of its JSON): stored once however many revisions share it."""
    card: Mapped[dict[str, Any]] = mapped_column(Json)


class ChangeRow(Base):
    """One difference between a revision and its predecessor; ``old``/``new`` are JSON values."""

    __tablename__ = "changes"
    __table_args__ = (UniqueConstraint("revision_pk", "ordinal"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    revision_pk: Mapped[int] = mapped_column(ForeignKey("revisions.id", ondelete="CASCADE"))
    ordinal: Mapped[int] = mapped_column(Integer)
    artifact: Mapped[str] = mapped_column(String(64), index=True)
    path: Mapped[str] = mapped_column(StorableText)
    kind: Mapped[str] = mapped_column(String(64))
    old: Mapped[Any] = mapped_column(Json)
    new: Mapped[Any] = mapped_column(Json)
    severity: Mapped[int] = mapped_column(Integer, index=True)
    message: Mapped[str] = mapped_column(StorableText)


class EstimateRow(Base):
    """A revision's Plan as JSON, with the schema version it was written under."""

    __tablename__ = "estimates"

    revision_pk: Mapped[int] = mapped_column(
        ForeignKey("revisions.id", ondelete="CASCADE"), primary_key=True
    )
    plan: Mapped[dict[str, Any] | None] = mapped_column(Json)
    """The plan inline: rows from before migration 0008 only."""
    plan_key: Mapped[str | None] = mapped_column(String(SHA_LENGTH), index=True)
    """The plan's blob (sha256 of its JSON): stored once however many revisions share it."""
    schema_version: Mapped[int] = mapped_column(Integer)
