"""The history records every room shares: revisions, snapshots, changes, outcomes, advisories.

They are defined once, here, as frozen dataclasses: the tracker builds them
from the Hub, storage persists them, feeds renders them. JSON values inside
(``Change.old`` / ``Change.new``, plan JSON) are plain JSON-compatible
Python values, never ORM objects.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Generic, TypeAlias, TypeVar

from storage.repo_ids import RepoId

JsonValue: TypeAlias = (
    Mapping[str, "JsonValue"] | Sequence["JsonValue"] | str | int | float | bool | None
)
"""A value that ``json.loads`` gives back (object, array, string, number, true/false, null)."""


PlanT = TypeVar("PlanT")
"""The estimator's typed Plan, as the tracker and feeds name it (storage names no type of theirs)."""


class Severity(enum.IntEnum):
    """How much a change can break a user who pinned the previous revision.

    Ordered, so feeds can filter with ``severity >= Severity.MODERATE``.
    """

    INFO = 0
    LOW = 1
    MODERATE = 2
    HIGH = 3
    CRITICAL = 4

    @property
    def label(self) -> str:
        """The lower-case name used in JSON, URLs and messages."""
        return self.name.lower()

    @classmethod
    def parse(cls, text: str) -> Severity:
        """Parse a label in any case; raises ValueError listing the known labels."""
        try:
            return cls[text.strip().upper()]
        except KeyError:
            names = ", ".join(s.label for s in cls)
            raise ValueError(f"unknown severity {text!r}; expected one of {names}") from None


@dataclass(frozen=True)
class Revision:
    """One commit of a repo, as the Hub's commit list reports it."""

    repo_id: RepoId
    sha: str
    parents: tuple[str, ...]
    date: datetime
    title: str
    author: str | None = None


@dataclass(frozen=True)
class FileEntry:
    """One file of a revision's tree.

    ``content_key`` is the content address: the LFS sha256 for LFS files,
    the git blob id otherwise, so an unchanged file maps to the same key in
    every revision that shares it.
    """

    path: str
    size: int
    blob_id: str
    lfs_sha256: str | None = None

    @property
    def content_key(self) -> str:
        """The LFS sha256 for LFS files, else the git blob id: equal wherever the content is."""
        return self.lfs_sha256 or self.blob_id

    @property
    def is_lfs(self) -> bool:
        """True when the file is an LFS pointer (its content key is then the LFS sha256)."""
        return self.lfs_sha256 is not None


@dataclass(frozen=True)
class Snapshot:
    """What the tracker recorded of one revision.

    ``texts`` maps a path to the content key of a text artifact whose bytes
    sit in the blob store; ``oversized`` lists text files skipped for size;
    ``manifest`` is the weight manifest (tensor name -> {dtype, shape, file})
    read from safetensors headers and index files.
    """

    revision: Revision
    files: tuple[FileEntry, ...]
    texts: Mapping[str, str] = field(default_factory=dict)
    oversized: tuple[str, ...] = ()
    manifest: Mapping[str, JsonValue] | None = None
    card: Mapping[str, JsonValue] = field(default_factory=dict)


@dataclass(frozen=True)
class Change:
    """One typed, meaningful difference between two revisions.

    ``artifact`` names the kind of file (config, generation_config, tokenizer,
    tokenizer_config, chat_template, weights, code, card, estimate, repo);
    ``kind`` is what happened (added, removed, modified, parse_error, ...).
    """

    artifact: str
    path: str
    kind: str
    old: JsonValue
    new: JsonValue
    severity: Severity
    message: str


@dataclass(frozen=True)
class RevisionOutcome(Generic[PlanT]):
    """Everything processing learnt about one new revision, built once and read by publishers.

    The tracker builds it while it snapshots, diffs and estimates the
    revision; every publisher (advisory writer, alert queuer, later ones)
    then reads only this record inside the recording transaction, so nothing
    downstream reads the blob store, re-parses JSON or runs the estimator for
    what processing already held. ``configs`` and ``previous_configs`` map a
    model-level config path (config.json, generation_config.json) to its
    parsed JSON object, for the files that exist and parse; ``plan`` and
    ``previous_plan`` are the typed Plans processing holds (the record is
    generic in their type, so storage needs nothing of the estimator), None
    where there is no estimate. Plan JSON exists only in the estimates table.
    """

    snapshot: Snapshot
    previous: Snapshot | None
    changes: tuple[Change, ...]
    configs: Mapping[str, JsonValue] = field(default_factory=dict)
    previous_configs: Mapping[str, JsonValue] = field(default_factory=dict)
    plan: PlanT | None = None
    previous_plan: PlanT | None = None

    @property
    def revision(self) -> Revision:
        """The revision processed: the snapshot's."""
        return self.snapshot.revision

    @property
    def previous_revision(self) -> Revision | None:
        """The revision compared against; None for a repo's first recorded revision."""
        return None if self.previous is None else self.previous.revision


@dataclass(frozen=True)
class Publication:
    """What the publishers of one revision wrote in its transaction, handed from one to the next.

    The alert queuer links the advisory the advisory writer stored, so each
    publisher receives the publication so far and returns it extended.
    ``deliveries`` are the ids of the outbox rows queued.
    """

    advisory_id: str | None = None
    deliveries: tuple[int, ...] = ()


@dataclass(frozen=True)
class Advisory:
    """One OSV advisory for a noteworthy transition old_sha -> new_sha."""

    id: str
    repo_id: RepoId
    old_sha: str | None
    new_sha: str
    published: datetime
    modified: datetime
    summary: str
    severity: Severity
    osv: Mapping[str, JsonValue]
    withdrawn: datetime | None = None


class RepoStatus(enum.StrEnum):
    """What the Hub last said about a tracked repo."""

    ACTIVE = "active"
    GONE = "gone"
    GATED = "gated"
    PRIVATE = "private"
    RENAMED = "renamed"


@dataclass(frozen=True)
class TrackedRepo:
    """A repo we follow, with its upstream status and tracking options (interval, ...)."""

    repo_id: RepoId
    added_at: datetime
    status: RepoStatus = RepoStatus.ACTIVE
    renamed_to: str | None = None
    options: Mapping[str, JsonValue] = field(default_factory=dict)
    tracked: bool = True


@dataclass(frozen=True)
class StoredRevision:
    """A recorded revision with what storage knows beyond the Hub's commit.

    ``on_main`` turns false when a force-push removed the commit from the
    repo's history; its data stays, marked with ``off_main_since``.
    """

    revision: Revision
    processed_at: datetime
    on_main: bool = True
    off_main_since: datetime | None = None


@dataclass(frozen=True)
class PollState:
    """When a repo is checked next, how its last checks went, and who holds its lease."""

    repo_id: RepoId
    next_check_at: datetime
    failures: int = 0
    last_error: str | None = None
    last_checked_at: datetime | None = None
    last_seen_sha: str | None = None
    last_modified: datetime | None = None
    lease_owner: str | None = None
    lease_expires_at: datetime | None = None
    repo_pk: int | None = None
    """The repo's key in storage, so a lease holder's later statements need not look it up."""
    options: Mapping[str, JsonValue] = field(default_factory=dict)
    """The repo's options (its check interval), read with the state rather than after it."""


@dataclass(frozen=True)
class TrackingSummary:
    """Counts over every tracked repo, as /healthz reports them."""

    tracked: int
    backfill_pending: int
    """Active repos never checked through (no sha seen yet)."""
    failing: int
    """Repos whose last check failed."""
    by_status: Mapping[str, int]


@dataclass(frozen=True)
class WebhookEvent:
    """One Hub webhook delivery in the inbox; ``delivery_key`` makes redelivery a no-op."""

    id: int
    delivery_key: str
    received_at: datetime
    payload: Mapping[str, JsonValue]
    repo_id: RepoId | None = None
    processed_at: datetime | None = None


@dataclass(frozen=True)
class Subscription:
    """A stored subscription; ``spec`` holds workload, cards and what to alert on as JSON."""

    id: int
    name: str
    repo_patterns: tuple[str, ...]
    spec: Mapping[str, JsonValue]
    channels: tuple[Mapping[str, JsonValue], ...]
    created_at: datetime
    min_severity: Severity = Severity.INFO
    active: bool = True


class DeliveryStatus(enum.StrEnum):
    """Where an outbox row stands."""

    PENDING = "pending"
    DELIVERED = "delivered"
    DEAD_LETTER = "dead_letter"


@dataclass(frozen=True)
class Delivery:
    """One alert in the outbox, ordered by ``sequence`` within its subscription."""

    id: int
    subscription_id: int
    sequence: int
    channel: str
    event_key: str
    payload: Mapping[str, JsonValue]
    status: DeliveryStatus
    attempts: int
    next_attempt_at: datetime
    created_at: datetime
    advisory_id: str | None = None
    repo_id: RepoId | None = None
    sha: str | None = None
    last_error: str | None = None
    delivered_at: datetime | None = None
