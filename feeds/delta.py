"""The estimate delta of one transition, read from the two stored Plan JSON documents.

An advisory carries the numbers a pinned user acts on: parameters, peak
memory per method, and the largest batch per card and method. They are
taken from the plans the daemon stored for both revisions, never
recomputed, so the advisory, the feed and the page always agree.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

METHOD_LABELS = {"full": "full fine-tune", "lora": "LoRA", "qlora": "QLoRA", "serve": "serving"}
GIB = 1024**3


@dataclass(frozen=True)
class Moved:
    """One number that moved between the two plans."""

    what: str
    key: str
    before: int | None
    after: int | None


@dataclass(frozen=True)
class EstimateDelta:
    """The numbers that differ between the old and the new plan (empty when none moved)."""

    parameters: Moved | None
    memory: tuple[Moved, ...]
    batches: tuple[Moved, ...]

    @classmethod
    def between(cls, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> EstimateDelta:
        """The delta of two Plan JSON documents; empty when either side has no plan."""
        if not old or not new:
            return cls(None, (), ())
        params = _moved("parameters", "parameters", _dig(old, "parameters", "total"), new)
        memory = tuple(
            m
            for method, label in METHOD_LABELS.items()
            if (
                m := _moved(
                    f"{label} peak memory",
                    f"memory.{method}",
                    _dig(old, "memory", method, "peak_allocated_bytes"),
                    new,
                    ("memory", method, "peak_allocated_bytes"),
                )
            )
        )
        before = {(card, method): batch for card, method, batch in _batches(old)}
        batches = tuple(
            Moved(
                f"{METHOD_LABELS[method]} batch on {card}",
                f"{card}.{method}",
                before[(card, method)],
                batch,
            )
            for card, method, batch in _batches(new)
            if (card, method) in before and before[(card, method)] != batch
        )
        return cls(params, memory, batches)

    @property
    def empty(self) -> bool:
        return self.parameters is None and not self.memory and not self.batches

    def headline(self) -> str | None:
        """The one number a summary line names: the largest relative batch move, else memory."""
        candidates = [*self.batches, *self.memory]
        if self.parameters is not None:
            candidates.append(self.parameters)
        if not candidates:
            return None
        top = max(candidates, key=_relative)
        verb = "drops" if (top.after or 0) < (top.before or 0) else "rises"
        return f"{top.what} {verb} {_fmt(top)}"

    def to_json(self) -> dict[str, Any]:
        """The delta as database_specific.estimate_delta (omit-empty)."""
        document: dict[str, Any] = {}
        if self.parameters is not None:
            document["parameters"] = {
                "before": self.parameters.before,
                "after": self.parameters.after,
            }
        if self.memory:
            document["peak_allocated_bytes"] = {
                m.key.split(".", 1)[1]: {"before": m.before, "after": m.after} for m in self.memory
            }
        if self.batches:
            document["largest_batch"] = {
                m.key: {"before": m.before, "after": m.after} for m in self.batches
            }
        return document

    def markdown_rows(self) -> list[str]:
        """Markdown table rows (| what | before | after |) for the advisory details."""
        rows = [self.parameters] if self.parameters else []
        return [
            f"| {m.what} | {_value(m, m.before)} | {_value(m, m.after)} |"
            for m in [*rows, *self.memory, *self.batches]
        ]


def _moved(
    what: str,
    key: str,
    before: Any,
    new: Mapping[str, Any],
    path: tuple[str, ...] = ("parameters", "total"),
) -> Moved | None:
    after = _dig(new, *path)
    if isinstance(before, int) and isinstance(after, int) and before != after:
        return Moved(what, key, before, after)
    return None


def _batches(plan: Mapping[str, Any]) -> Iterator[tuple[str, str, int | None]]:
    for card in plan.get("cards") or []:
        if not isinstance(card, Mapping) or not isinstance(card.get("methods"), Mapping):
            continue
        for method in METHOD_LABELS:
            entry = card["methods"].get(method)
            if isinstance(entry, Mapping) and isinstance(entry.get("largest_batch"), int):
                yield str(card.get("card")), method, entry["largest_batch"]


def _dig(document: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(document, Mapping):
            return None
        document = document.get(key)
    return document


def _relative(moved: Moved) -> float:
    before, after = moved.before or 0, moved.after or 0
    return abs(after - before) / max(abs(before), 1)


def _value(moved: Moved, value: int | None) -> str:
    if value is None:
        return "-"
    if moved.key.startswith("memory."):
        return f"{value / GIB:.2f} GiB"
    return f"{value:,}" if moved.key == "parameters" else str(value)


def _fmt(moved: Moved) -> str:
    return f"{_value(moved, moved.before)} -> {_value(moved, moved.after)}"


__all__ = ["EstimateDelta", "Moved"]
