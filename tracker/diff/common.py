"""What every differ shares: the token names a message may quote, and value wording.

Differs are pure functions over parsed artifacts; they receive a
``DiffContext`` instead of reaching for other files themselves.
``per_file`` turns a differ of one file's two values into a kind's differ.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

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


JSON_SCALARS: Final = (str, int, float, bool, type(None))
_JSON_TYPES: Final = (dict, list, *JSON_SCALARS)


def json_equal(a: Any, b: Any) -> bool:
    """Whether two values are written as the same JSON, key order aside (``1`` is not
    ``true`` nor ``1.0``; ``0.0`` is not ``-0.0``; NaN is NaN): what comparing their
    ``json.dumps(..., sort_keys=True)`` texts answers, without writing them out.

    Two JSON types are never written alike, a float is written as its ``repr`` (or
    ``NaN``, ``Infinity``), other scalars as ``==`` tells, dicts (with string keys) and
    lists entry by entry; anything else is written out and compared as text.
    """
    kind = type(a)
    if kind is not type(b):
        if kind in _JSON_TYPES and type(b) in _JSON_TYPES:
            return False
        return _as_text(a) == _as_text(b)
    if kind is float:
        return repr(a) == repr(b)
    if kind is dict:
        if not all(type(k) is str for k in a) or not all(type(k) is str for k in b):
            return _as_text(a) == _as_text(b)
        return a.keys() == b.keys() and all(json_equal(v, b[k]) for k, v in a.items())
    if kind is list:
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if kind in JSON_SCALARS:
        return bool(a == b)
    return _as_text(a) == _as_text(b)


def _as_text(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def json_copy(value: Any) -> Any:
    """A JSON value's own copy, as ``copy.deepcopy`` makes it of parsed JSON: its dicts and
    lists made anew, its scalars (immutable) shared."""
    if isinstance(value, dict):
        return {k: json_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [json_copy(v) for v in value]
    return value


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
    "json_copy",
    "json_equal",
    "parse_error",
    "per_file",
    "plausible_size",
    "shown_bytes",
]
