"""What a revision changes in the estimate: parameters, memory per method, fit per card.

Reads two Plan JSON documents (``estimator.Plan.to_json()``) and words every
moved number with both values, e.g. "LoRA largest batch on T4 16GB: 167 -> 91".
A verdict that flips from fits to does not fit is HIGH: it is the change a
user pinned to a card must hear about.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from storage.records import Change, Severity

ARTIFACT = "estimate"
METHOD_LABELS = {"full": "full fine-tune", "lora": "LoRA", "qlora": "QLoRA", "serve": "serving"}
GIB = 1024**3


def diff_plans(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> list[Change]:
    """Changes between two plans; nothing when either side has no plan."""
    if not old or not new:
        return []
    changes = []
    before, after = _get(old, "parameters", "total"), _get(new, "parameters", "total")
    if isinstance(before, int) and isinstance(after, int) and before != after:
        changes.append(
            Change(
                ARTIFACT,
                "config.json",
                "parameters_changed",
                before,
                after,
                Severity.HIGH,
                f"parameters {before:,} -> {after:,}",
            )
        )
    for method, label in METHOD_LABELS.items():
        b = _get(old, "memory", method, "peak_allocated_bytes")
        a = _get(new, "memory", method, "peak_allocated_bytes")
        if isinstance(b, int) and isinstance(a, int) and b != a:
            changes.append(
                Change(
                    ARTIFACT,
                    "config.json",
                    "memory_changed",
                    b,
                    a,
                    Severity.MODERATE,
                    f"{label} peak memory {b / GIB:.2f} GiB -> {a / GIB:.2f} GiB",
                )
            )
    changes.extend(_card_changes(old, new))
    return changes


def _get(doc: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(doc, Mapping):
            return None
        doc = doc.get(key)
    return doc


def _card_methods(plan: Mapping[str, Any]) -> Iterator[tuple[str, str, Mapping[str, Any]]]:
    """(card, method, {largest_batch, fits}) for every card entry of a plan."""
    for card in plan.get("cards") or []:
        if not isinstance(card, Mapping):
            continue
        name = str(card.get("name") or card.get("card") or "?")
        nested = card.get("methods")
        methods: Mapping[str, Any] = nested if isinstance(nested, Mapping) else card
        for method in METHOD_LABELS:
            entry = methods.get(method)
            if isinstance(entry, Mapping):
                yield name, method, entry


def _card_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Change]:
    before = {(c, m): e for c, m, e in _card_methods(old)}
    changes = []
    for card, method, entry in _card_methods(new):
        previous = before.get((card, method))
        if previous is None:
            continue
        label = METHOD_LABELS[method]
        b, a = previous.get("largest_batch"), entry.get("largest_batch")
        fits_b, fits_a = previous.get("fits"), entry.get("fits")
        if fits_b is True and fits_a is False:
            changes.append(
                Change(
                    ARTIFACT,
                    "config.json",
                    "no_longer_fits",
                    b,
                    a,
                    Severity.HIGH,
                    f"{label} no longer fits on {card} (largest batch {b} -> {a})",
                )
            )
        elif fits_b is False and fits_a is True:
            changes.append(
                Change(
                    ARTIFACT,
                    "config.json",
                    "now_fits",
                    b,
                    a,
                    Severity.LOW,
                    f"{label} now fits on {card} (largest batch {b} -> {a})",
                )
            )
        elif b != a and isinstance(b, int) and isinstance(a, int):
            severity = Severity.MODERATE if a < b else Severity.LOW
            changes.append(
                Change(
                    ARTIFACT,
                    "config.json",
                    "largest_batch_changed",
                    b,
                    a,
                    severity,
                    f"{label} largest batch on {card}: {b} -> {a}",
                )
            )
    return changes


__all__ = ["diff_plans"]
