"""A Snapshot of one revision, fetching only what the store does not already hold.

One API call lists the files with their content keys. A text artifact (a
path the artifact table reads) is downloaded only if its content key is not
in the blob store, and only up to its kind's size limit; larger files are
recorded as oversized. The store is asked which keys it holds only where
asking is cheaper than fetching (``ASK_ABOVE``): a small text is fetched
without asking unless the store is asked anyway, so a revision walked after
its parent records in one transaction; a small text the store turns out to
hold is then stored once all the same (the blob insert ignores a key it
holds), and one that could not be fetched is looked for in the store before
it is called missing, so the snapshot is the one asking first would take.
Safetensors headers are read by range, and only for weight files whose
content key differs from the previous snapshot's (their tensors are copied
over otherwise), within the manifest's caps (``tracker.revision.weights_manifest``). A header that declares an absurd size is
refused before anything is allocated and recorded in the manifest.
Unsafe file names are listed but never fetched. Code another repo's
``auto_map`` entries load is listed at that repo's main (tracker.revision.remote_code:
one request per referenced repo, none for a model without such entries).
Nothing is written to disk, executed or unpickled.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from storage import RepoId
from storage.records import Change, FileEntry, Revision, Severity, Snapshot
from tracker.diff.card import parse_front_matter
from tracker.diff.files import is_unsafe_path
from tracker.diff.registry import artifact_for, rule_for
from tracker.diff.revision import RevisionContent
from tracker.errors import FileGone, OversizedFile
from tracker.hub.client import Hub
from tracker.revision.remote_code import CARD_KEY as REMOTE_CODE
from tracker.revision.remote_code import SOURCES as REMOTE_SOURCES
from tracker.revision.remote_code import cross_repo_references, read_referenced_code
from tracker.revision.weights_manifest import DEFAULT_CAPS, HeaderCaps, build_manifest
from tracker.untrusted.artifacts import ArtifactParseError, Parsed
from tracker.untrusted.safetensors_header import MAX_HEADER_BYTES

MAX_FILE_SIZE = 2**63 - 1
"""The largest size a database BIGINT holds; no real file comes near it."""


ASK_ABOVE: Final = 64 * 1024
"""Texts listed at most this size are fetched rather than asked about, when asking would
open a read session of its own. A read session asking for a few keys costs about 0.4 ms on
SQLite and 1.3 ms on PostgreSQL; a small text fetched needlessly costs one Hub request and
its compression for the blob insert, about 0.4 ms at 64 KiB and growing with size (1.7 ms
at 256 KiB), beside its transfer. Few of a walked revision's new small texts are stored
already (one in seven on the synthetic workload, nearly all under 5 KiB), and above 64 KiB
a text is rare enough (one walked revision in fifty) that asking for it costs little."""


class BlobSource(Protocol):
    """What a snapshot needs of the blob store: which keys it has, and their bytes."""

    def known(self, keys: Iterable[str], *, fetchable: Iterable[str] = ()) -> set[str]:
        """The keys among ``keys`` and ``fetchable`` whose bytes the store holds.

        ``fetchable`` keys are cheaper to fetch than to ask about in a read of their
        own: the store is asked about them only when it is asked anyway (about
        ``keys``, or in a session already open), and counts them unknown otherwise.
        """
        ...

    def read(self, key: str) -> bytes:
        """The bytes stored under ``key``; KeyError when it holds none."""
        ...


class LazyBlobs(Mapping[str, bytes]):
    """path -> bytes, loaded from the fetched bytes or the store only when a differ asks."""

    def __init__(self, texts: Mapping[str, str], load: Callable[[str], bytes]) -> None:
        self._texts = dict(texts)
        self._load = load
        self._loaded: dict[str, bytes] = {}

    def __getitem__(self, path: str) -> bytes:
        if path not in self._loaded:
            self._loaded[path] = self._load(self._texts[path])
        return self._loaded[path]

    def __contains__(self, path: object) -> bool:
        # Mapping's own test reads the value: asking whether a text exists would load it.
        return path in self._texts

    def __iter__(self) -> Iterator[str]:
        return iter(self._texts)

    def __len__(self) -> int:
        return len(self._texts)


@dataclass(frozen=True)
class SnapshotResult:
    """A taken snapshot, the bytes it downloaded (to store), and problems found on the way."""

    snapshot: Snapshot
    fetched: Mapping[str, bytes]
    problems: tuple[Change, ...] = ()
    parse_cache: dict[tuple[str, str], Parsed] = field(default_factory=dict)

    def content(self, blobs: BlobSource) -> RevisionContent:
        """The snapshot as the differs see it, reading unfetched texts from ``blobs``."""

        def load(key: str) -> bytes:
            return self.fetched[key] if key in self.fetched else blobs.read(key)

        return RevisionContent(
            self.snapshot, LazyBlobs(self.snapshot.texts, load), self.parse_cache
        )


def take_snapshot(
    hub: Hub,
    revision: Revision,
    previous: Snapshot | None,
    blobs: BlobSource,
    *,
    header_limit: int = MAX_HEADER_BYTES,
    caps: HeaderCaps = DEFAULT_CAPS,
    parse_cache: dict[tuple[str, str], Parsed] | None = None,
    deadline: float | None = None,
) -> SnapshotResult:
    """Snapshot ``revision``; ``previous`` is the last recorded snapshot of the repo, if any.

    ``deadline`` (``time.monotonic()``) is the revision's time budget: a text
    or header not fetched by then is left out and named in one ``incomplete``
    finding, so a revision too big to fetch in time is recorded partial
    instead of losing its lease and starting over forever.
    """

    def out_of_time() -> bool:
        return deadline is not None and time.monotonic() > deadline

    listing = hub.files(revision.repo_id, revision.sha)
    files = tuple(_plausible(f) for f in listing.files)
    problems = _implausible(listing.files, previous)
    wanted, oversized = _text_candidates(files)
    known = blobs.known(
        (f.content_key for f in wanted if f.size > ASK_ABOVE),
        fetchable=(f.content_key for f in wanted if f.size <= ASK_ABOVE),
    )
    fetched, missed = _fetch_texts(hub, revision, wanted, known, out_of_time)
    if missed:
        # A small text may have been fetched without asking: one that could not be is
        # looked for in the store, where asking first would have found it.
        keys = {entry.path: entry.content_key for entry in wanted}
        known |= blobs.known(keys[path] for path in missed)
        missed = {path: why for path, why in missed.items() if keys[path] not in known}
    texts = {
        entry.path: entry.content_key
        for entry in wanted
        if entry.path not in missed and (entry.content_key in known or entry.content_key in fetched)
    }
    late = [path for path, why in missed.items() if why == _LATE]
    oversized += [path for path, why in missed.items() if why == _OVERSIZED]
    problems += [why for why in missed.values() if isinstance(why, Change)]

    def load(key: str) -> bytes:
        return fetched[key] if key in fetched else blobs.read(key)

    cache = {} if parse_cache is None else parse_cache
    card = _card(texts, previous, load)
    card["gated"] = listing.gated
    card.update(_remote_code(hub, revision.repo_id, texts, load, cache))
    manifest, late_headers = build_manifest(
        hub,
        revision,
        files,
        texts,
        previous,
        load,
        header_limit=header_limit,
        caps=caps,
        out_of_time=out_of_time,
    )
    if late or late_headers:
        problems.append(_incomplete(late, late_headers))
    snapshot = Snapshot(
        revision=revision,
        files=files,
        texts=texts,
        oversized=tuple(sorted(oversized)),
        manifest=manifest,
        card=card,
    )
    return SnapshotResult(snapshot, fetched, tuple(problems), cache)


_LATE: Final = "late"
_OVERSIZED: Final = "oversized"
Missed = Change | str
"""Why a text was not fetched: ``_LATE`` (the time budget ran out), ``_OVERSIZED`` (the
body outgrew its kind's limit), or the ``unreadable`` finding of a file the Hub lost."""


def _fetch_texts(
    hub: Hub,
    revision: Revision,
    wanted: Iterable[FileEntry],
    known: set[str],
    out_of_time: Callable[[], bool],
) -> tuple[dict[str, bytes], dict[str, Missed]]:
    """The bytes of every wanted text not ``known`` to be stored, by content key, and the
    paths that were not fetched with why, in listing order."""
    fetched: dict[str, bytes] = {}
    missed: dict[str, Missed] = {}
    for entry in wanted:
        key = entry.content_key
        if key in known or key in fetched:
            continue
        if out_of_time():
            missed[entry.path] = _LATE
            continue
        rule = rule_for(entry.path)
        assert rule is not None  # _text_candidates kept only table paths
        try:
            fetched[key] = hub.read_text(revision.repo_id, revision.sha, entry, rule.limit)
        except OversizedFile:
            missed[entry.path] = _OVERSIZED
        except FileGone as exc:
            missed[entry.path] = _unreadable(entry.path, exc)
    return fetched, missed


def _remote_code(
    hub: Hub,
    repo_id: RepoId,
    texts: Mapping[str, str],
    load: Callable[[str], bytes],
    cache: dict[tuple[str, str], Parsed],
) -> dict[str, Any]:
    """What the revision loads from other repos (tracker.revision.remote_code), read at their
    main now. The files are parsed into the revision's parse cache, under the keys the
    differs read (``RevisionContent.parsed``), so each is parsed once per revision."""
    documents = {}
    for path in REMOTE_SOURCES:
        kind, rule, key = artifact_for(path), rule_for(path), texts.get(path)
        if kind is None or rule is None or key is None:
            continue
        if (kind.name, key) not in cache:
            try:
                cache[kind.name, key] = Parsed(rule.parse(load(key)))
            except ArtifactParseError as exc:
                cache[kind.name, key] = Parsed(error=str(exc))  # its own row reports it
        parsed = cache[kind.name, key]
        if parsed.error is None:
            documents[path] = parsed.value
    references = cross_repo_references(repo_id, documents)
    return {REMOTE_CODE: read_referenced_code(hub, references)} if references else {}


def _plausible(entry: FileEntry) -> FileEntry:
    """A listed size no real file has (over 2**63 - 1 bytes) is capped, so it can be stored."""
    if 0 <= entry.size <= MAX_FILE_SIZE:
        return entry
    return FileEntry(entry.path, MAX_FILE_SIZE, entry.blob_id, entry.lfs_sha256)


def _implausible(files: Iterable[FileEntry], previous: Snapshot | None) -> list[Change]:
    """Files the Hub lists with impossible sizes, unless the previous snapshot already held
    the same file (path and content key) capped: that was said when it first appeared."""
    said = (
        {(f.path, f.content_key) for f in previous.files if f.size == MAX_FILE_SIZE}
        if previous is not None
        else set()
    )
    bad = sorted(
        f.path
        for f in files
        if not 0 <= f.size <= MAX_FILE_SIZE and (f.path, f.content_key) not in said
    )
    if not bad:
        return []
    shown = ", ".join(bad[:3]) + (f" and {len(bad) - 3} more" if len(bad) > 3 else "")
    return [
        Change(
            "repo",
            bad[0],
            "implausible_size",
            None,
            bad,
            Severity.MODERATE,
            f"the Hub lists impossible sizes (over {MAX_FILE_SIZE:,} bytes) for {shown}; "
            "recorded as that maximum",
        )
    ]


def _text_candidates(files: Iterable[FileEntry]) -> tuple[list[FileEntry], list[str]]:
    wanted: list[FileEntry] = []
    oversized: list[str] = []
    for entry in files:
        rule = rule_for(entry.path)
        if rule is None or is_unsafe_path(entry.path):
            continue
        if entry.size > rule.limit:
            oversized.append(entry.path)
        else:
            wanted.append(entry)
    return wanted, oversized


def _incomplete(texts: list[str], headers: list[str]) -> Change:
    paths = texts + headers
    shown = ", ".join(paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")
    return Change(
        "repo",
        paths[0],
        "incomplete",
        None,
        {"texts": texts, "headers": headers},
        Severity.MODERATE,
        f"the revision's time budget ran out before {len(texts)} file(s) and {len(headers)} "
        f"safetensors header(s) were read, so changes inside them are not seen: {shown}",
    )


def _unreadable(path: str, exc: Exception) -> Change:
    return Change(
        "repo",
        path,
        "unreadable",
        None,
        str(exc),
        Severity.MODERATE,
        f"{path} is listed but could not be fetched: {exc}",
    )


def _card(
    texts: Mapping[str, str], previous: Snapshot | None, load: Callable[[str], bytes]
) -> dict[str, Any]:
    key = texts.get("README.md")
    if key is None:
        return {}
    if previous is not None and previous.texts.get("README.md") == key:
        return {k: v for k, v in previous.card.items() if k not in ("gated", REMOTE_CODE)}
    try:
        return parse_front_matter(load(key))
    except ValueError:
        return {}  # the differ reports README.md's parse_error from the text itself


__all__ = ["ASK_ABOVE", "BlobSource", "LazyBlobs", "SnapshotResult", "take_snapshot"]
