"""Typed changes between two parsed JSON documents (config, generation_config, ...).

deepdiff finds what moved; the field table in ``data/json_fields.json`` then
groups the raw paths into the units a reader cares about (``rope_scaling``
as a whole, one entry of ``added_tokens_decoder``), gives each a severity and
says why it matters. Wording rules that need more than a fixed sentence
(stop tokens named by their text) are the rules in ``tracker.diff.wording``.
``diff_json_file`` is the per-file entry the artifact table registers.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cache
from importlib import resources
from typing import Any

from deepdiff import DeepDiff

from storage.records import Change, Severity
from tracker.diff.common import DiffContext, format_value, json_copy
from tracker.diff.shapes import MAX_LINE_CHARS, MISSING, describe
from tracker.diff.special_tokens import token_context
from tracker.diff.wording import EXPLAINERS
from tracker.untrusted.artifacts import Side

PathKey = tuple[str | int, ...]
_MISSING = MISSING
MAX_ENTRIES_PER_PARENT = 20
"""More untabled changes than this under one parent collapse into one summary change."""
MIN_VALUE_BUDGET = 40
FIELD_IN_SUMMARY_CHARS = 120
"""About how long each field of a file that came or went is, in the file's one line."""
SHOWN_NAMES = 3


@dataclass(frozen=True)
class FieldRule:
    severity: Severity
    why: str
    explain: str | None = None
    granularity: str = "whole"


@dataclass(frozen=True)
class ArtifactRules:
    default: Severity
    skip: frozenset[str]
    fields: Mapping[str, FieldRule]


@cache
def rules_for(artifact: str) -> ArtifactRules:
    """The field table for one artifact kind (falls back to the generic ``json`` rules)."""
    table = _load_table()
    entry = table.get(artifact) or table["json"]
    fields = {
        name: FieldRule(
            severity=Severity.parse(spec["severity"]),
            why=spec.get("why", ""),
            explain=spec.get("explain"),
            granularity=spec.get("granularity", "whole"),
        )
        for name, spec in entry["fields"].items()
    }
    return ArtifactRules(Severity.parse(entry["default"]), frozenset(entry["skip"]), fields)


@cache
def _load_table() -> dict[str, Any]:
    text = resources.files("tracker").joinpath("data/json_fields.json").read_text("utf-8")
    table: dict[str, Any] = json.loads(text)
    return table


def diff_json(
    artifact: str,
    path: str,
    old: Any,
    new: Any,
    context: DiffContext | None = None,
    budget: int = MAX_LINE_CHARS,
) -> list[Change]:
    """Changes between two parsed JSON documents of the same artifact kind, each message
    within ``budget`` characters where its values allow."""
    context = context or DiffContext()
    rules = rules_for(artifact)
    old_doc, new_doc = _without(old, rules.skip), _without(new, rules.skip)
    units = _changed_units(old_doc, new_doc, rules)
    changes: list[Change] = []
    retyped: list[tuple[PathKey, Change]] = []
    for parent, group in _group_by_parent(units, rules).items():
        if parent is not None and len(group) > MAX_ENTRIES_PER_PARENT:
            changes.append(_summary(artifact, path, parent, group, old_doc, new_doc, rules))
            continue
        for unit in group:
            change = _change(artifact, path, unit, old_doc, new_doc, rules, context, budget)
            if change.kind == "modified" and _same_number(change.old, change.new):
                retyped.append((unit, change))
            else:
                changes.append(change)
    # two or more numbers that only changed JSON type are one line
    if len(retyped) > 1:
        return [*changes, _retyped(artifact, path, retyped)]
    return changes + [c for _, c in retyped]


def _without(doc: Any, skip: frozenset[str]) -> Any:
    if isinstance(doc, dict) and skip:
        return {k: v for k, v in doc.items() if k not in skip}
    return doc


def _changed_units(old: Any, new: Any, rules: ArtifactRules) -> list[PathKey]:
    diff = DeepDiff(
        _atomic_lists(old),
        _atomic_lists(new),
        view="tree",
        verbose_level=2,
    )
    units: dict[PathKey, None] = {}
    for items in diff.values():
        for item in items:
            raw = tuple(item.path(output_format="list"))
            for path in _expanded(raw, _get(old, raw), _get(new, raw)):
                units[_unit(path, rules)] = None
    return sorted(units, key=lambda u: [str(p) for p in u])


def _atomic_lists(doc: Any) -> Any:
    """Lists as their JSON text: units stop at lists, so deepdiff need not align elements."""
    if isinstance(doc, dict):
        return {k: _atomic_lists(v) for k, v in doc.items()}
    if isinstance(doc, list):
        return json.dumps(doc, sort_keys=True)
    return doc


def _expanded(raw: PathKey, old: Any, new: Any) -> list[PathKey]:
    """deepdiff reports ``{}`` -> ``{...}`` as one change of the whole dict: split it by key."""
    if isinstance(old, dict) and isinstance(new, dict):
        keys = sorted(set(old) | set(new), key=str)
        return [(*raw, k) for k in keys if _differs(old.get(k, _MISSING), new.get(k, _MISSING))]
    return [raw]


def _differs(old: Any, new: Any) -> bool:
    """Different as JSON: ``5`` and ``5.0``, ``1`` and ``true`` differ; key order does not."""
    if old is _MISSING or new is _MISSING:
        return old is not new
    return json.dumps(old, sort_keys=True) != json.dumps(new, sort_keys=True)


def _same_number(old: Any, new: Any) -> bool:
    """``5`` -> ``5.0``: one number written as another JSON type (booleans are not numbers)."""
    numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (old, new))
    return numbers and old == new


def _unit(raw: PathKey, rules: ArtifactRules) -> PathKey:
    """The reported unit for a raw deepdiff path: a tabled field, or the path cut at lists."""
    for depth, part in enumerate(raw):
        rule = rules.fields.get(part) if isinstance(part, str) else None
        if rule is not None:
            end = depth + 2 if rule.granularity == "entry" and len(raw) > depth + 1 else depth + 1
            return raw[:end]
        if isinstance(part, int):
            return raw[:depth]
    return raw


def _rule(unit: PathKey, rules: ArtifactRules) -> FieldRule | None:
    for part in reversed(unit):
        if isinstance(part, str) and part in rules.fields:
            return rules.fields[part]
    return None


def _group_by_parent(
    units: list[PathKey], rules: ArtifactRules
) -> dict[PathKey | None, list[PathKey]]:
    groups: dict[PathKey | None, list[PathKey]] = {}
    for unit in units:
        parent = unit[:-1] if unit and _rule(unit, rules) is None else None
        groups.setdefault(parent, []).append(unit)
    return groups


def _get(doc: Any, unit: PathKey) -> Any:
    for part in unit:
        in_dict = isinstance(doc, dict) and isinstance(part, str) and part in doc
        in_list = isinstance(doc, list) and isinstance(part, int) and part < len(doc)
        if in_dict or in_list:
            doc = doc[part]
        else:
            return _MISSING
    return doc


def dotted(unit: PathKey) -> str:
    """``('rope_scaling', 'factor')`` -> ``rope_scaling.factor``; list indices as ``[i]``."""
    text = ""
    for part in unit:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text or "(document)"


def _change(
    artifact: str,
    path: str,
    unit: PathKey,
    old_doc: Any,
    new_doc: Any,
    rules: ArtifactRules,
    context: DiffContext,
    limit: int,
) -> Change:
    old, new = _get(old_doc, unit), _get(new_doc, unit)
    kind = "added" if old is _MISSING else "removed" if new is _MISSING else "modified"
    old_v = None if old is _MISSING else old
    new_v = None if new is _MISSING else new
    rule = _rule(unit, rules)
    severity = rule.severity if rule else rules.default
    why = rule.why if rule else ""
    what = None
    if old_v is None and new_v is None:  # null <-> unset: loaders read both as the default
        severity, why = Severity.INFO, "written as null instead of unset (or back): no change"
    elif _same_number(old_v, new_v):
        severity, why = Severity.INFO, f"the same value, now {_number_type(new_v)}"
    elif rule and rule.explain:
        wording = EXPLAINERS[rule.explain](old_v, new_v, severity, why, context)
        severity, why, what = wording.severity, wording.why, wording.what
    name = dotted(unit)
    lead = f"{path}: "
    tail = f": {why}" if why else ""
    budget = max(2 * MIN_VALUE_BUDGET, limit - len(lead) - len(tail) - len(name) - 2)
    text = describe(name, old, new, budget) if what is None else f"{name} {what}"
    return Change(artifact, path, kind, old_v, new_v, severity, f"{lead}{text}{tail}")


def _number_type(value: Any) -> str:
    return "a float" if isinstance(value, float) else "an integer"


def _retyped(artifact: str, path: str, found: list[tuple[PathKey, Change]]) -> Change:
    """Numbers written as another JSON type (``5`` -> ``5.0``), all in one line: their
    values are the same, so one line says so; the change holds each at its key path."""
    old: dict[str, Any] = {}
    new: dict[str, Any] = {}
    for unit, change in found:
        _put(old, unit, change.old)
        _put(new, unit, change.new)
    names = [dotted(unit) for unit, _ in found]
    shown = ", ".join(names[:SHOWN_NAMES])
    more = f" and {len(names) - SHOWN_NAMES} more" if len(names) > SHOWN_NAMES else ""
    kinds = {"floats" if isinstance(c.new, float) else "integers" for _, c in found}
    now = f"now {kinds.pop()}" if len(kinds) == 1 else "now written as other number types"
    first = found[0][1]
    return Change(
        artifact,
        path,
        "retyped",
        old,
        new,
        Severity.INFO,
        f"{path}: {shown}{more}: the same values, {now} "
        f"(e.g. {format_value(first.old)} -> {format_value(first.new)})",
    )


def _put(into: dict[str, Any], unit: PathKey, value: Any) -> None:
    """``value`` at ``unit``'s key path (list indices as keys: a retyped number in a list
    is rare, and the path still names it)."""
    for part in unit[:-1]:
        into = into.setdefault(str(part), {})
    into[str(unit[-1])] = value


def _summary(
    artifact: str,
    path: str,
    parent: PathKey,
    group: list[PathKey],
    old_doc: Any,
    new_doc: Any,
    rules: ArtifactRules,
) -> Change:
    counts = {"added": 0, "removed": 0, "modified": 0}
    for unit in group:
        old, new = _get(old_doc, unit), _get(new_doc, unit)
        counts["added" if old is _MISSING else "removed" if new is _MISSING else "modified"] += 1
    detail = ", ".join(f"{n} {kind}" for kind, n in counts.items() if n)
    return Change(
        artifact,
        path,
        "modified",
        None,
        counts,
        rules.default,
        f"{path}: {dotted(parent)}: {len(group)} entries changed ({detail})",
    )


def diff_json_file(
    kind: str, path: str, old: Any, new: Any, sides: tuple[Side, Side]
) -> list[Change]:
    """One JSON file's changes under ``kind``'s rules; a file that came or went is one change.

    The values a change holds are copies: the parsed documents are shared with later
    readers of the revision (the exact estimate path hands config.json to transformers,
    whose config classes rewrite nested dicts in place), and a change must keep the values
    as written. Only what the changes hold is copied, not the documents: the differ
    itself only reads them.
    """
    whole = old is None or new is None  # its fields are summed up in one line: keep each short
    found = diff_json(
        kind,
        path,
        {} if old is None else old,
        {} if new is None else new,
        token_context(*sides),
        FIELD_IN_SUMMARY_CHARS if whole else MAX_LINE_CHARS,
    )
    if old is not None and new is not None:
        return [_kept(change) for change in found]
    change = _file_change(kind, path, "added" if old is None else "removed", found)
    # the file's fields as values, so every key is named with its value (the message names
    # the notable ones); fields another differ reads stay with it
    skip = rules_for(kind).skip
    return [_kept(replace(change, old=_without(old, skip), new=_without(new, skip)))]


def _kept(change: Change) -> Change:
    """The change holding its own copies of its values, not the parsed documents' objects."""
    return replace(change, old=json_copy(change.old), new=json_copy(change.new))


def _file_change(artifact: str, path: str, kind: str, found: list[Change]) -> Change:
    """A file that appeared or vanished: one change, as severe as the fields it brings,
    naming the most severe of them (up to three, within the line's length)."""
    severity = max((c.severity for c in found), default=Severity.LOW)
    notable = [c for c in found if c.severity >= Severity.MODERATE]
    notable.sort(key=lambda c: -int(c.severity))
    head = f"{path} {kind}"
    fields: list[str] = []
    for change in notable[:SHOWN_NAMES]:
        field = change.message.removeprefix(f"{path}: ")
        used = len(head) + 2 + sum(len(f) + 2 for f in fields) + len(field)
        if used + len("; and 3 more") > MAX_LINE_CHARS:
            break
        fields.append(field)
    left = len(notable[:SHOWN_NAMES]) - len(fields)
    more = f"; and {left} more" if left and fields else ""
    return Change(
        artifact,
        path,
        kind,
        None,
        None,
        severity,
        head + (f": {'; '.join(fields)}{more}" if fields else ""),
    )


__all__ = ["diff_json", "diff_json_file", "dotted", "rules_for"]
