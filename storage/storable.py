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
from typing import Any

from storage.json_text import dumps_repaired
from storage.records import Change, FileEntry, JsonValue, Severity, Snapshot
from storage.values import holds_unstorable, storable_text

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


def json_document(value: Mapping[str, JsonValue]) -> JsonDocument:
    """``value`` encoded as storage stores it."""
    written = dict(value)
    text, repaired = dumps_repaired(written)
    return JsonDocument(written, text, repaired)


@dataclass(frozen=True)
class StorableRevision:
    """A revision as it is written: the snapshot repaired, its manifest and plan as the JSON
    text to store (each encoded once, the repair read off that encoding), and the finding."""

    snapshot: Snapshot
    manifest: str | None
    plan: str | None
    finding: Change | None


def storable_revision(
    snapshot: Snapshot, plan_json: Mapping[str, JsonValue] | JsonDocument | None
) -> StorableRevision:
    """``snapshot`` and ``plan_json`` with every unstorable character replaced; the finding, if any.

    Clean revisions (all but hostile ones) come back as they were: the check
    is one C-speed pass per field, and the manifest and the plan, the largest
    values, are checked in the encoding they are stored as.
    """
    revision = snapshot.revision
    repaired: list[str] = []

    def clean(value: Any, what: str) -> Any:
        if not holds_unstorable(value):
            return value
        repaired.append(what)
        return storable_text(value)

    def encoded(value: Any, what: str) -> str:
        text, replaced = dumps_repaired(value)
        if replaced:
            repaired.append(what)
        return text

    title = clean(revision.title, "commit title")
    author = clean(revision.author, "commit author")
    files, dropped = _storable_files(snapshot.files, clean)
    texts = clean(dict(snapshot.texts), "text file names")
    oversized = clean(list(snapshot.oversized), "oversized file names")
    manifest = None if snapshot.manifest is None else encoded(snapshot.manifest, "weight manifest")
    card = clean(dict(snapshot.card), "model card")
    plan = None if plan_json is None else _plan_text(plan_json, repaired)
    if not repaired:
        return StorableRevision(snapshot, manifest, plan, None)
    stored = Snapshot(
        revision=replace(revision, title=title, author=author),
        files=files,
        texts=texts,
        oversized=tuple(oversized),
        manifest=snapshot.manifest,
        card=card,
    )
    return StorableRevision(stored, manifest, plan, _finding(repaired, dropped))


def _plan_text(plan_json: Mapping[str, JsonValue] | JsonDocument, repaired: list[str]) -> str:
    document = plan_json if isinstance(plan_json, JsonDocument) else json_document(plan_json)
    if document.repaired:
        repaired.append("estimate")
    return document.text


def _storable_files(
    files: Sequence[FileEntry], clean: Any
) -> tuple[tuple[FileEntry, ...], list[str]]:
    """The file list with paths repaired; paths that became another's twin are dropped."""
    paths = clean([entry.path for entry in files], "file paths")
    if paths == [entry.path for entry in files]:
        return tuple(files), []
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
    "json_document",
    "storable_revision",
]
