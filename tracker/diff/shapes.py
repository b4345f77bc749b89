"""How one changed value reads on a line: one rule per shape of value.

A change line names what changed and shows both sides so that they differ
visibly within the line's length (``MAX_LINE_CHARS``); a cut that leaves two
equal prefixes says nothing. The value's shape picks the rule:

- scalar: ``old -> new``, quoted as JSON when the bare texts read the same
  (``"5" -> 5``); a long string as an excerpt aligned on its first difference;
- list: whole when both fit, else each differing index (``[3] 1.04 -> 1.05``)
  or, for lists of names, the items that came and went;
- dict: the sub-keys that changed, at any depth, each by its own rule
  (``rope_scaling.type su -> longrope, rope_scaling.factor added 4.0``).

Token sets, rendered templates and weight manifests have their own differs;
they share ``excerpt`` (texts aligned on the first difference) and the
length limit from here.
"""

from __future__ import annotations

import json
from typing import Any

from tracker.diff.common import MAX_VALUE_CHARS, UNSET, format_value

MAX_LINE_CHARS = 300
"""The longest change message a rule writes (``history`` indents it by 2 and a severity)."""
MAX_PARTS = 3
"""Sub-keys or list items a line names before it says "and N more"."""
MIN_VALUE_CHARS = 24
"""The least room one printed value gets, however crowded its line."""
EXCERPT_CONTEXT = 16
"""Characters of shared text an excerpt shows before the first difference."""
FOLLOW_CHARS = 40
FOLLOW_MIN = 24
"""The most and the least of the text after a differing span an excerpt shows."""
MAX_NAME_CHARS = 100
"""The longest key path a line prints."""
MISSING = object()
"""An unset key (``None`` is JSON's null)."""


def describe(name: str, old: Any, new: Any, budget: int = 2 * MAX_VALUE_CHARS) -> str:
    """``name`` and how it changed, its old and new sides visibly different in about
    ``budget`` characters; ``MISSING`` is an unset key (``None`` is null). Sub-keys are
    named while the line has room (the first always), then "and N more"."""
    parts = _parts(name, old, new)
    each = max(MIN_VALUE_CHARS, budget // min(len(parts), MAX_PARTS) - len(parts[0].name))
    said = [parts[0](each)]
    for part in parts[1:MAX_PARTS]:
        text = part(each)
        if sum(len(t) + 2 for t in said) + len(text) + len(" and 9 more") > budget:
            break
        said.append(text)
    left = len(parts) - len(said)
    return ", ".join(said) + (f" and {left} more" if left else "")


def pair(old: Any, new: Any, budget: int = 2 * MAX_VALUE_CHARS) -> str:
    """``old -> new`` for two scalars (or values shown whole), never two equal texts."""
    half = max(MIN_VALUE_CHARS, budget // 2)
    if isinstance(old, str) and isinstance(new, str):
        shown_old, shown_new = format_value(old, half), format_value(new, half)
        start = _span(old, new)[0]
        if shown_old == shown_new or start >= half - 1:  # the difference is past the cut
            return excerpt(old, new, budget)
        if shown_old.strip() == shown_new.strip():  # only spacing differs: show it
            return f"{json.dumps(old, ensure_ascii=False)} -> {json.dumps(new, ensure_ascii=False)}"
        return f"{shown_old} -> {shown_new}"
    shown_old, shown_new = format_value(old, half), format_value(new, half)
    if shown_old == shown_new:
        shown_old, shown_new = _as_json(old, half), _as_json(new, half)
    if shown_old == shown_new:  # cut to the same prefix: align on the difference instead
        return excerpt(_as_json(old), _as_json(new), budget)
    return f"{shown_old} -> {shown_new}"


def excerpt(old: str, new: str, budget: int = 2 * MAX_VALUE_CHARS) -> str:
    """Two texts aligned on their first difference: a little of what both share before it,
    the span each side has there, and what follows, so the reader sees what was removed,
    inserted or replaced and what stayed (JSON-quoted, so whitespace shows; ``…`` marks
    text left out). About ``budget`` characters: the spans first, then what follows.

    A pure removal or insertion is moved to its leftmost equivalent place, so a duplicated
    block reads as that block removed rather than as a rotated piece of it.
    """
    start, end_old, end_new = _span(old, new)
    was, now = old[start:end_old], new[start:end_new]
    lead = _quoted(old[max(0, start - EXCERPT_CONTEXT) : start], before=start > EXCERPT_CONTEXT)
    at = f"after {lead}: " if start else "at the start: "
    room = max(MIN_VALUE_CHARS, budget - len(at) - len(" removed, then ") - FOLLOW_MIN - 4)
    if not now:
        said = f"{at}{_quoted(was, limit=room)} removed"
    elif not was:
        said = f"{at}{_quoted(now, limit=room)} inserted"
    else:
        half = max(MIN_VALUE_CHARS, room // 2)
        said = f"{at}{_quoted(was, limit=half)} -> {_quoted(now, limit=half)}"
    rest = old[end_old:]
    if not rest:
        return f"{said}, at the end"
    keep = min(FOLLOW_CHARS, max(FOLLOW_MIN, budget - len(said) - 10))
    text = f"{said}, then {_quoted(rest[:keep], after=len(rest) > keep)}"
    while len(text) > budget and keep > FOLLOW_MIN:  # escapes (\n) took more room than counted
        keep -= len(text) - budget
        keep = max(keep, FOLLOW_MIN)
        text = f"{said}, then {_quoted(rest[:keep], after=len(rest) > keep)}"
    return text


def _span(old: str, new: str) -> tuple[int, int, int]:
    """(first difference, where it ends in ``old``, where it ends in ``new``)."""
    start = next(
        (i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a != b),
        min(len(old), len(new)),
    )
    tail = 0
    limit = min(len(old), len(new)) - start
    while tail < limit and old[len(old) - 1 - tail] == new[len(new) - 1 - tail]:
        tail += 1
    end_old, end_new = len(old) - tail, len(new) - tail
    longer, end = (old, end_old) if end_new == start else (new, end_new)
    if start in (end_old, end_new) and end > start:  # a removal or an insertion
        start, end = _best_place(longer, start, end)
        end_old, end_new = (end, start) if longer is old else (start, end)
    return start, end_old, end_new


def _best_place(text: str, start: int, end: int) -> tuple[int, int]:
    """Where a removed or inserted span reads best: it can slide left while the text before
    it equals its own end, and reads as whole pieces where it starts and ends at a markup
    boundary (``<...>``, a newline, a space); the nearest such place to the first
    difference wins."""
    places = [(start, end)]
    while start > 0 and text[start - 1] == text[end - 1]:
        start, end = start - 1, end - 1
        places.append((start, end))
    return max(places, key=lambda place: _boundaries(text, *place))


def _boundaries(text: str, start: int, end: int) -> int:
    # 2: the span opens a piece of markup (or the text); 1: it follows one
    opens = 2 if start == 0 or text[start] in "<[{\n" else int(text[start - 1] in ">]}\n ")
    closes = end == len(text) or text[end - 1] in ">]}\n" or text[end] in "<[{\n "
    return opens + int(closes)


def _quoted(
    text: str, *, limit: int | None = None, before: bool = False, after: bool = False
) -> str:
    """``text`` JSON-quoted; cut to ``limit`` characters (its middle left out)."""
    if limit is not None and len(_q(text)) > limit:
        keep = max(4, (limit - 8) // 2)  # two quoted halves and the cut between them
        cut = f"{_q(text[:keep])}…{_q(text[-keep:])}"
        while len(cut) > limit and keep > 4:  # escapes (\", \n) print longer than they count
            keep = max(4, keep - (len(cut) - limit + 1) // 2)
            cut = f"{_q(text[:keep])}…{_q(text[-keep:])}"
        return cut
    return f"{'…' if before else ''}{_q(text)}{'…' if after else ''}"


def _q(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _as_json(value: Any, limit: int | None = None) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    if limit is not None and len(text) > limit:
        return text[: limit - 1] + "…"
    return text


_PLAIN = (str, int, float, bool, type(None))


def _differs(old: Any, new: Any) -> bool:
    """Different as JSON (``5`` is not ``5.0``, nor ``1`` ``true``); key order aside."""
    if old is MISSING or new is MISSING:
        return old is not new
    if type(old) is type(new) and isinstance(old, _PLAIN):
        return bool(old != new)  # the common case, without writing JSON
    return _as_json(old) != _as_json(new)


class _Part:
    """One named difference, formatted once its share of the line is known."""

    __slots__ = ("name", "new", "old")

    def __init__(self, name: str, old: Any, new: Any) -> None:
        # upstream keys can be any length: a name is cut like a value
        self.name = name if len(name) <= MAX_NAME_CHARS else name[: MAX_NAME_CHARS - 1] + "…"
        self.old, self.new = old, new

    def __call__(self, budget: int) -> str:
        if self.old is MISSING:
            return f"{self.name} added {format_value(self.new, max(MIN_VALUE_CHARS, budget))}"
        if self.new is MISSING:
            return (
                f"{self.name} removed (was {format_value(self.old, max(MIN_VALUE_CHARS, budget))})"
            )
        return f"{self.name} {pair(self.old, self.new, budget)}"


class _Whole(_Part):
    """A key set or unset as a whole: the line keeps its ``(unset)`` wording."""

    def __call__(self, budget: int) -> str:
        half = max(MIN_VALUE_CHARS, budget // 2)
        old = UNSET if self.old is MISSING else format_value(self.old, half)
        new = UNSET if self.new is MISSING else format_value(self.new, half)
        return f"{self.name} {old} -> {new}"


def _parts(name: str, old: Any, new: Any) -> list[_Part]:
    """Each named difference between ``old`` and ``new`` (``MISSING`` for unset)."""
    if old is MISSING or new is MISSING:
        return [_Whole(name, old, new)]
    if isinstance(old, dict) and isinstance(new, dict):
        return _dict_parts(name, old, new) or [_Part(name, old, new)]
    if isinstance(old, list) and isinstance(new, list):
        return _list_parts(name, old, new)
    return [_Part(name, old, new)]


def _dict_parts(name: str, old: dict[Any, Any], new: dict[Any, Any]) -> list[_Part]:
    """Sub-keys that changed, modified first, then added, then removed; nested dicts walked."""
    modified: list[_Part] = []
    added: list[_Part] = []
    removed: list[_Part] = []
    for key in sorted(set(old) | set(new), key=str):
        was, now = old.get(key, MISSING), new.get(key, MISSING)
        if not _differs(was, now):
            continue
        sub = f"{name}.{key}"
        if was is MISSING:
            added.append(_Part(sub, was, now))
        elif now is MISSING:
            removed.append(_Part(sub, was, now))
        elif isinstance(was, dict) and isinstance(now, dict):
            modified += _dict_parts(sub, was, now)
        elif isinstance(was, list) and isinstance(now, list):
            modified += _list_parts(sub, was, now)
        else:
            modified.append(_Part(sub, was, now))
    return modified + added + removed


def _list_parts(name: str, old: list[Any], new: list[Any]) -> list[_Part]:
    """Whole when short; else the items that came and went (lists of names, or lists that
    changed length) or each index that differs (same length: a table of numbers)."""
    if len(_as_json(old)) + len(_as_json(new)) <= MAX_VALUE_CHARS:
        return [_Part(name, old, new)]
    if len(old) == len(new):
        at = "" if name == "(document)" else name  # a document that is a list: [2]
        return [
            _Part(f"{at}[{i}]", a, b)
            for i, (a, b) in enumerate(zip(old, new, strict=True))
            if _differs(a, b)
        ]
    before, after = {_as_json(i) for i in old}, {_as_json(i) for i in new}
    came = [item for item in new if _as_json(item) not in before]
    went = [item for item in old if _as_json(item) not in after]
    if not came and not went:
        return [_Counted(name, len(old), len(new), "the same items, repeated differently")]
    return [_CameWent(name, len(old), len(new), came, went)]


class _Counted(_Part):
    """A list whose length changed while holding the same items (repeats added or dropped)."""

    def __init__(self, name: str, before: int, after: int, note: str) -> None:
        super().__init__(name, before, after)
        self.note = note

    def __call__(self, budget: int) -> str:
        return f"{self.name} {self.old} -> {self.new} items ({self.note})"


class _CameWent(_Part):
    """A list that changed length: how many items came and went, the first few named."""

    def __init__(
        self, name: str, before: int, after: int, came: list[Any], went: list[Any]
    ) -> None:
        super().__init__(name, before, after)
        self.came, self.went = came, went

    def __call__(self, budget: int) -> str:
        said = []
        for verb, items in (("added", self.came), ("removed", self.went)):
            if items:
                each = max(12, budget // (2 * min(len(items), MAX_PARTS)))
                shown = ", ".join(format_value(i, each) for i in items[:MAX_PARTS])
                more = f" and {len(items) - MAX_PARTS} more" if len(items) > MAX_PARTS else ""
                said.append(f"{len(items)} {verb} ({shown}{more})")
        return f"{self.name} {self.old} -> {self.new} items: {'; '.join(said)}"


__all__ = ["MAX_LINE_CHARS", "MISSING", "describe", "excerpt", "pair"]
