"""A revision made storable whole: what upstream wrote that no backend holds is repaired, and said.

Upstream may commit any text JSON, YAML and git accept: a lone surrogate
escape (``"\\ud800"``) as a config key or a card's license, a NUL in front
matter or a commit title. Refusing such a revision would refuse it on every
retry, and the worker (rightly) never diffs a later revision against the wrong
predecessor, so one commit would hide every later one. Here every text that enters
storage with a revision is repaired (``storage.values.storable_text``: each
such character becomes U+FFFD), and the revision carries one finding naming
what was repaired, so a reader knows the record is not byte-for-byte
upstream.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

from storage.blobs import document_blob
from storage.json_text import dumps_repaired, encoded_repaired
from storage.manifest_keys import MANIFEST_KEYS
from storage.records import Change, FileEntry, JsonValue, Severity, Snapshot
from storage.values import any_unstorable, holds_unstorable, storable_text

UNSTORABLE_KIND = "unstorable_text"
"""The ``Change.kind`` of the finding a repaired revision carries (artifact ``repo``)."""


@dataclass(frozen=True)
class JsonDocument:
    """A JSON object encoded once as storage stores it: ``value`` as written, ``text`` its
    encoding with unstorable characters repaired (``storage.json_text.dumps_repaired``),
    and whether any was. A writer that records the same document again (a walk's plan,
    unchanged from the revision before) hands it back instead of encoding it anew."""

    value: dict[str, JsonValue]
    text: str
    repaired: bool

    @cached_property
    def blob(self) -> tuple[str, bytes]:
        """The document's blob key and bytes (``storage.blobs.document_blob``), hashed once
        however many revisions store it."""
        return document_blob(self.text)


def json_document(value: Mapping[str, JsonValue]) -> JsonDocument:
    """``value`` encoded as storage stores it."""
    written = dict(value)
    text, repaired = dumps_repaired(written)
    return JsonDocument(written, text, repaired)


@dataclass(frozen=True)
class StoredManifest:
    """A weight manifest as its blob: the key, and the bytes where this revision encoded it.

    ``data`` is None where the key was remembered from an identical manifest encoded for
    an earlier revision (``storage.manifest_keys``); ``stored_bytes`` encodes it then, for a
    store that lacks the blob."""

    key: str
    data: bytes | None
    value: Mapping[str, JsonValue]

    def stored_bytes(self) -> bytes:
        """The blob's bytes, encoded now if they were not."""
        return self.data if self.data is not None else _encode_manifest(self.value, None)[0][1]


@dataclass(frozen=True)
class StorableRevision:
    """A revision as it is written: the snapshot repaired, its manifest and plan as the blobs
    to store, its JSON columns encoded (each value encoded once, the repair read off that
    encoding), and the finding."""

    snapshot: Snapshot
    manifest: StoredManifest | None
    plan: JsonDocument | None
    finding: Change | None
    texts: Any
    """What the snapshot row's ``texts`` column binds (``storage.json_text.Encoded``)."""
    oversized: Any
    """What the ``oversized`` column binds."""
    card: Any
    """What the ``card`` column binds."""


def storable_revision(
    snapshot: Snapshot, plan_json: Mapping[str, JsonValue] | JsonDocument | None
) -> StorableRevision:
    """``snapshot`` and ``plan_json`` with every unstorable character replaced; the finding, if any.

    Clean revisions (all but hostile ones) come back as they were: each JSON
    value is encoded once, as it is stored, and the repair is read off that
    encoding (``storage.json_text.dumps_repaired``); strings are one C-speed
    search each. A manifest identical to one encoded before is not encoded
    again (``storage.manifest_keys``).
    """
    revision = snapshot.revision
    repaired: list[str] = []

    def clean(value: Any, what: str) -> Any:
        if not holds_unstorable(value):
            return value
        repaired.append(what)
        return storable_text(value)

    def column(value: Any, what: str) -> tuple[Any, Any]:
        """The value as the snapshot holds it, and what its column binds."""
        try:
            encoded, replaced = encoded_repaired(value)
        except TypeError:  # not JSON: the column's own encoder refuses it, as it always did
            kept = clean(value, what)
            return kept, kept
        if not replaced:
            return value, encoded
        repaired.append(what)
        return storable_text(value), encoded

    title = clean(revision.title, "commit title")
    author = clean(revision.author, "commit author")
    files, dropped = _storable_files(snapshot.files, repaired)
    texts, texts_column = column(dict(snapshot.texts), "text file names")
    oversized, oversized_column = column(list(snapshot.oversized), "oversized file names")
    manifest = None if snapshot.manifest is None else _stored_manifest(snapshot.manifest, repaired)
    card, card_column = column(dict(snapshot.card), "model card")
    plan = None if plan_json is None else _plan_document(plan_json, repaired)
    columns = (texts_column, oversized_column, card_column)
    if not repaired:
        return StorableRevision(snapshot, manifest, plan, None, *columns)
    stored = Snapshot(
        revision=replace(revision, title=title, author=author),
        files=files,
        texts=texts,
        oversized=tuple(oversized),
        manifest=snapshot.manifest,
        card=card,
    )
    return StorableRevision(stored, manifest, plan, _finding(repaired, dropped), *columns)


def json_column(value: Any) -> Any:
    """What a JSON column binds for ``value`` (a change's old or new value) with unstorable
    characters replaced: a structure encoded once (``storage.json_text.Encoded``), where
    checking it and then writing it encoded it twice; anything else repaired as it is."""
    if isinstance(value, Mapping | list | tuple):
        try:
            return encoded_repaired(value)[0]
        except TypeError:  # not JSON: the column's own encoder refuses it, as it always did
            pass
    return storable_text(value)


def _stored_manifest(manifest: Mapping[str, JsonValue], repaired: list[str]) -> StoredManifest:
    """The manifest's blob: its key remembered where an identical manifest was encoded
    before, else encoded here (and remembered)."""
    digest = MANIFEST_KEYS.digest(manifest)
    known = MANIFEST_KEYS.get(digest)
    if known is not None:
        key, replaced, data = known[0], known[1], None
    else:
        (key, data), replaced = _encode_manifest(manifest, digest)
    if replaced:
        repaired.append("weight manifest")
    return StoredManifest(key, data, manifest)


def _encode_manifest(
    manifest: Mapping[str, JsonValue], digest: bytes | None
) -> tuple[tuple[str, bytes], bool]:
    """The manifest's blob (key, bytes) and whether its text was repaired; remembered
    under ``digest``."""
    text, replaced = dumps_repaired(manifest)
    blob = document_blob(text)
    MANIFEST_KEYS.remember(digest, blob[0], replaced)
    return blob, replaced


def _plan_document(
    plan_json: Mapping[str, JsonValue] | JsonDocument, repaired: list[str]
) -> JsonDocument:
    document = plan_json if isinstance(plan_json, JsonDocument) else json_document(plan_json)
    if document.repaired:
        repaired.append("estimate")
    return document


def _storable_files(
    files: Sequence[FileEntry], repaired: list[str]
) -> tuple[tuple[FileEntry, ...], list[str]]:
    """The file list with paths repaired; paths that became another's twin are dropped."""
    if not any_unstorable(entry.path for entry in files):
        return tuple(files), []
    repaired.append("file paths")
    paths = [storable_text(entry.path) for entry in files]
    kept: list[FileEntry] = []
    seen: set[str] = set()
    dropped: list[str] = []
    for entry, path in zip(files, paths, strict=True):
        if path in seen:
            dropped.append(path)
            continue
        seen.add(path)
        kept.append(replace(entry, path=path))
    return tuple(kept), dropped


def _finding(repaired: list[str], dropped: list[str]) -> Change:
    message = (
        f"upstream text no database can store (NUL or a lone surrogate escape such as "
        f'"\\ud800") was recorded with each such character as U+FFFD, in: {", ".join(repaired)}'
    )
    if dropped:
        message += (
            f"; {len(dropped)} file path(s) became identical to another once repaired and are "
            "not listed"
        )
    return Change(
        "repo",
        "",
        UNSTORABLE_KIND,
        None,
        {"repaired": repaired, "dropped_paths": dropped},
        Severity.LOW,
        message,
    )


__all__ = [
    "UNSTORABLE_KIND",
    "JsonDocument",
    "StorableRevision",
    "StoredManifest",
    "json_column",
    "json_document",
    "storable_revision",
]
