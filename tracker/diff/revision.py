"""All changes between two revisions: every row of the artifact table, run over both snapshots.

The caller hands each side's snapshot with the bytes of its text artifacts
(from the blob store or just fetched); this module parses them through the
table's file rules, reports each text file that stops or starts parsing (the
same way for every kind), asks every row's differ, and returns typed
changes, most severe first. It knows no kind by name: what a kind compares
is its row in ``tracker.diff.registry``. It never fetches anything and never
raises for bad upstream content. Text is returned as found; the store makes
it storable.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any

from storage.records import Change, Severity, Snapshot
from tracker.diff.common import by_severity, parse_error
from tracker.diff.registry import artifact_for, diff_kinds
from tracker.diff.templates import effective_templates, special_tokens
from tracker.untrusted.artifacts import ArtifactParseError, Parsed


@dataclass
class RevisionContent:
    """One revision as the differs see it: its snapshot and its text artifacts' bytes."""

    snapshot: Snapshot
    blobs: Mapping[str, bytes]
    """path -> bytes, for every path in ``snapshot.texts``."""
    cache: MutableMapping[tuple[str, str], Parsed] = field(default_factory=dict)
    _kinds: dict[str, str | None] | None = field(default=None, init=False, repr=False)
    """path -> kind name, worked out once per revision."""

    def parsed(self, path: str) -> Parsed | None:
        """The parsed artifact at ``path``, or None if the revision has no such text."""
        key = self.snapshot.texts.get(path)
        kind = artifact_for(path)
        rule = kind.rule_for(path) if kind is not None else None
        if key is None or kind is None or rule is None or path not in self.blobs:
            return None
        cache_key = (kind.name, key)
        if cache_key not in self.cache:
            try:
                self.cache[cache_key] = Parsed(rule.parse(self.blobs[path]))
            except ArtifactParseError as exc:
                self.cache[cache_key] = Parsed(error=str(exc))
        return self.cache[cache_key]

    def value(self, path: str) -> Any:
        """The parsed value at ``path``; None when the text is absent or does not parse."""
        parsed = self.parsed(path)
        return None if parsed is None or parsed.error else parsed.value

    def paths_of(self, kind: str) -> list[str]:
        """The revision's text paths the artifact table gives to ``kind`` (worked out once)."""
        if self._kinds is None:
            self._kinds = {p: getattr(artifact_for(p), "name", None) for p in self.snapshot.texts}
        return [path for path, name in self._kinds.items() if name == kind]


def diff_revisions(old: RevisionContent | None, new: RevisionContent) -> list[Change]:
    """Every change from ``old`` to ``new``; for a first revision, only what is notable alone."""
    return by_severity(_parse_changes(old, new) + diff_kinds(old, new))


def _parse_changes(old: RevisionContent | None, new: RevisionContent) -> list[Change]:
    """Text files that no longer parse (any revision) or parse again (against ``old``)."""
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
        elif after is not None and before is not None and before.error:
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
    return changes


__all__ = ["Parsed", "RevisionContent", "diff_revisions", "effective_templates", "special_tokens"]
