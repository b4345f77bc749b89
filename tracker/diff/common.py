"""What every differ shares: the token names a message may quote, and value wording.

Differs are pure functions over parsed artifacts; they receive a
``DiffContext`` instead of reaching for other files themselves.
``per_file`` turns a differ of one file's two values into a kind's differ.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from storage.records import Change, Severity
from tracker.untrusted.artifacts import Differ, Side

UNSET = "(unset)"
MAX_VALUE_CHARS = 120
PLAUSIBLE_BYTES = 2**50
"""1 PiB: more than any file or index honestly declares; a size above it (or below 0) is a
finding about whoever declared it, never a quantity to add or subtract."""


def plausible_size(value: object) -> bool:
    """Whether a declared byte count can be taken as one (an int from 0 to 1 PiB)."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= PLAUSIBLE_BYTES


def shown_bytes(value: object) -> str:
    """A declared byte count as a line shows it: grouped digits, or in powers of ten when
    it is implausibly long (a 72-digit total would fill the line)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}" if abs(value) <= PLAUSIBLE_BYTES else f"{float(value):.3g}"
    return format_value(value)


@dataclass(frozen=True)
class DiffContext:
    """Facts about both revisions that make messages readable.

    ``token_names`` maps token ids to their text (from tokenizer_config's
    ``added_tokens_decoder`` and tokenizer.json's ``added_tokens``) at the
    new revision.
    """

    token_names: Mapping[int, str] = field(default_factory=dict)
    old_token_names: Mapping[int, str] = field(default_factory=dict)
    """The old revision's names: a token that is no longer used is named as it was."""

    def token(self, token_id: object, *, old: bool = False) -> str:
        """The text a message quotes for a token id, looked up on the new side first.

        ``old`` looks on the old side first; ``token N`` when neither side names it.
        """
        first, second = (
            (self.old_token_names, self.token_names)
            if old
            else (self.token_names, self.old_token_names)
        )
        for names in (first, second):
            if isinstance(token_id, int) and token_id in names:
                return names[token_id]
        return f"token {token_id}"


FileDiffer = Callable[[str, str, Any, Any, tuple[Side, Side]], list[Change]]
"""(kind, path, old value or None, new value or None, (old side, new side)) -> changes."""


def per_file(file_differ: FileDiffer) -> Differ:
    """A kind's differ that compares each of its files on its own.

    Only files whose content key changed are compared, and only when both
    sides parse (a parse error is reported by the revision differ). A repo's
    first revision has nothing to compare.
    """

    def differ(kind: str, old: Side | None, new: Side) -> list[Change]:
        if old is None:
            return []
        changes: list[Change] = []
        before, after = old.snapshot.texts, new.snapshot.texts
        for path in sorted(set(old.paths_of(kind)) | set(new.paths_of(kind))):
            if before.get(path) == after.get(path):
                continue
            parsed = (old.parsed(path), new.parsed(path))
            if any(p is not None and p.error for p in parsed):
                continue
            values = [None if p is None else p.value for p in parsed]
            changes += file_differ(kind, path, values[0], values[1], (old, new))
        return changes

    return differ


def format_value(value: Any, limit: int = MAX_VALUE_CHARS) -> str:
    """A JSON value as a message shows it: strings bare, the rest as compact JSON."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if len(text) > limit:
        return text[: limit - 1] + "…"
    return text


def parse_error(artifact: str, path: str, old: Any, error: str) -> Change:
    """A file that stopped parsing: a change of its own, never a crash."""
    return Change(
        artifact=artifact,
        path=path,
        kind="parse_error",
        old=old,
        new=error,
        severity=Severity.HIGH,
        message=f"{path} no longer parses: {error}",
    )


def by_severity(changes: list[Change]) -> list[Change]:
    """Most severe first, then by artifact and path, so output order is stable."""
    return sorted(changes, key=lambda c: (-int(c.severity), c.artifact, c.path, c.kind))


def change_json(change: Change, *, values: bool = True) -> dict[str, Any]:
    """A change as JSON. ``values`` adds old and new; alert payloads leave them out, since
    a value can be a whole chat template or tokenizer section."""
    out: dict[str, Any] = {
        "artifact": change.artifact,
        "path": change.path,
        "kind": change.kind,
        "severity": change.severity.label,
        "message": change.message,
    }
    if values:
        out.update(old=change.old, new=change.new)
    return out


__all__ = [
    "PLAUSIBLE_BYTES",
    "UNSET",
    "DiffContext",
    "FileDiffer",
    "by_severity",
    "change_json",
    "format_value",
    "parse_error",
    "per_file",
    "plausible_size",
    "shown_bytes",
]
