"""All changes between two revisions: every differ, run over what both snapshots hold.

The caller hands each side's snapshot with the bytes of its text artifacts
(from the blob store or just fetched); this module parses them through the
artifact table, asks each differ, and returns typed changes, most severe
first. It never fetches anything and never raises for bad upstream content:
a file that stops parsing becomes a ``parse_error`` change.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any

from storage.records import Change, Severity, Snapshot
from tracker.artifacts import ArtifactParseError, artifact_for, templates_from
from tracker.diff.card import diff_cards
from tracker.diff.chat_template import diff_chat_templates
from tracker.diff.common import DiffContext, by_severity, parse_error
from tracker.diff.files import diff_files
from tracker.diff.manifest import diff_manifests
from tracker.diff.tokenizer import diff_tokenizers

SPECIAL_TOKEN_NAMES = ("bos_token", "eos_token", "pad_token", "unk_token")
TEMPLATE_SOURCES = ("tokenizer_config.json", "chat_template.json", "chat_template.jinja")
"""Where a chat template may live, lowest precedence first (as transformers loads them)."""


@dataclass(frozen=True)
class Parsed:
    value: Any = None
    error: str | None = None


@dataclass
class RevisionContent:
    """One revision as the differs see it: its snapshot and its text artifacts' bytes."""

    snapshot: Snapshot
    blobs: Mapping[str, bytes]
    """path -> bytes, for every path in ``snapshot.texts``."""
    cache: MutableMapping[tuple[str, str], Parsed] = field(default_factory=dict)

    def parsed(self, path: str) -> Parsed | None:
        """The parsed artifact at ``path``, or None if the revision has no such text."""
        key = self.snapshot.texts.get(path)
        kind = artifact_for(path)
        if key is None or kind is None or path not in self.blobs:
            return None
        cache_key = (kind.name, key)
        if cache_key not in self.cache:
            try:
                self.cache[cache_key] = Parsed(kind.parse(self.blobs[path]))
            except ArtifactParseError as exc:
                self.cache[cache_key] = Parsed(error=str(exc))
        return self.cache[cache_key]

    def value(self, path: str) -> Any:
        parsed = self.parsed(path)
        return None if parsed is None or parsed.error else parsed.value


def diff_revisions(old: RevisionContent | None, new: RevisionContent) -> list[Change]:
    """Every change from ``old`` to ``new``; for a first revision, only what is notable alone."""
    before = old.snapshot if old else None
    changes = diff_files(before.files if before else (), new.snapshot.files)
    changes += _text_changes(old, new)
    changes += _oversized(before, new.snapshot)
    changes += diff_manifests(
        before.manifest if before else None,
        new.snapshot.manifest,
        {f.path for f in new.snapshot.files},
    )
    if old is not None and before is not None:
        changes += _template_changes(old, new)
        changes += diff_cards(before.card, new.snapshot.card)
    return [_scrubbed(c) for c in by_severity(changes)]


def _text_changes(old: RevisionContent | None, new: RevisionContent) -> list[Change]:
    context = DiffContext(token_names=_token_names(new), old_token_names=_token_names(old))
    old_texts = old.snapshot.texts if old else {}
    changes: list[Change] = []
    for path in sorted(set(old_texts) | set(new.snapshot.texts)):
        kind = artifact_for(path)
        if kind is None or old_texts.get(path) == new.snapshot.texts.get(path):
            continue
        before = old.parsed(path) if old else None
        after = new.parsed(path)
        if after is not None and after.error:
            changes.append(parse_error(kind.name, path, None, after.error))
            continue
        if old is None:
            continue
        if before is not None and before.error:
            changes.append(
                Change(
                    kind.name,
                    path,
                    "parse_fixed",
                    before.error,
                    None,
                    Severity.LOW,
                    f"{path} parses again (was: {before.error})",
                )
            )
            continue
        old_value = before.value if before else None
        new_value = after.value if after else None
        if kind.name == "tokenizer":
            changes += diff_tokenizers(path, old_value, new_value)
        elif kind.differ is not None:
            found = kind.differ(kind.name, path, _doc(old_value), _doc(new_value), context)
            whole = before is None or after is None
            changes += [_file_change(kind.name, path, before, found)] if whole else found
    return changes


def _doc(value: Any) -> Any:
    return {} if value is None else value


def _file_change(artifact: str, path: str, before: Parsed | None, found: list[Change]) -> Change:
    """A file that appeared or vanished: one change, as severe as the fields it brings."""
    kind = "added" if before is None else "removed"
    severity = max((c.severity for c in found), default=Severity.LOW)
    notable = [c for c in by_severity(found) if c.severity >= Severity.MODERATE]
    fields = "; ".join(c.message.removeprefix(f"{path}: ") for c in notable[:3])
    value = found[0].new if kind == "added" and len(found) == 1 else None
    return Change(
        artifact,
        path,
        kind,
        None if kind == "added" else value,
        value,
        severity,
        f"{path} {kind}" + (f": {fields}" if fields else ""),
    )


def _oversized(before: Snapshot | None, after: Snapshot) -> list[Change]:
    sizes = {f.path: f.size for f in after.files}
    known = set(before.oversized) if before else set()
    return [
        Change(
            "repo",
            path,
            "oversized",
            None,
            sizes.get(path),
            Severity.MODERATE,
            f"{path} is {sizes.get(path, 0):,} bytes, over its size limit: not loaded, "
            "so changes inside it are not seen",
        )
        for path in after.oversized
        if path not in known
    ]


def _token_names(content: RevisionContent | None) -> dict[int, str]:
    if content is None:
        return {}
    names: dict[int, str] = {}
    added = content.value("added_tokens.json")
    if isinstance(added, dict):
        names.update({i: t for t, i in added.items() if isinstance(i, int)})
    config = content.value("tokenizer_config.json")
    decoder = config.get("added_tokens_decoder") if isinstance(config, dict) else None
    if isinstance(decoder, dict):
        for token_id, token in decoder.items():
            if isinstance(token, dict) and str(token_id).isdigit() and "content" in token:
                names[int(token_id)] = str(token["content"])
    tokenizer = content.value("tokenizer.json")
    if tokenizer is not None:
        names.update({i: t for t, i in tokenizer.special_tokens.items()})
    return names


def effective_templates(content: RevisionContent) -> tuple[dict[str, str], dict[str, str]]:
    """The chat templates transformers would load (name -> source) and the file of each."""
    templates: dict[str, str] = {}
    sources: dict[str, str] = {}
    for path in TEMPLATE_SOURCES:
        value = content.value(path)
        if path == "tokenizer_config.json":
            raw = value.get("chat_template") if isinstance(value, dict) else None
            try:
                found = templates_from(raw) if raw is not None else {}
            except ArtifactParseError:
                found = {}
        elif path == "chat_template.jinja":
            found = {"default": value} if isinstance(value, str) else {}
        else:
            found = value if isinstance(value, dict) else {}
        templates.update(found)
        sources.update(dict.fromkeys(found, path))
    return templates, sources


def special_tokens(content: RevisionContent) -> dict[str, str]:
    """bos/eos/pad/unk token text as templates see it (tokenizer_config, then the map)."""
    out: dict[str, str] = {}
    for path in ("special_tokens_map.json", "tokenizer_config.json"):
        document = content.value(path)
        if not isinstance(document, dict):
            continue
        for name in SPECIAL_TOKEN_NAMES:
            token = document.get(name)
            if isinstance(token, dict):
                token = token.get("content")
            if isinstance(token, str):
                out[name] = token
    return out


def _template_changes(old: RevisionContent, new: RevisionContent) -> list[Change]:
    old_templates, old_sources = effective_templates(old)
    new_templates, new_sources = effective_templates(new)
    if old_templates == new_templates and special_tokens(old) == special_tokens(new):
        return []
    return diff_chat_templates(
        old_templates,
        new_templates,
        special_tokens(old),
        special_tokens(new),
        {**old_sources, **new_sources},
    )


def _scrubbed(change: Change) -> Change:
    """NUL characters (which PostgreSQL cannot store) shown as U+FFFD, so hostile text records."""
    return Change(
        change.artifact,
        _scrub(change.path),
        change.kind,
        _scrub(change.old),
        _scrub(change.new),
        change.severity,
        _scrub(change.message),
    )


def _scrub(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, dict):
        return {_scrub(k): _scrub(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub(v) for v in value]
    return value


__all__ = ["Parsed", "RevisionContent", "diff_revisions", "effective_templates", "special_tokens"]
