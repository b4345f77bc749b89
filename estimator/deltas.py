"""``delta(old, new) -> PlanDelta``: what moved between two Plans, worded once for every reader.

The tracker's changes, the advisories' estimate delta, the feeds and the
pages all word an estimate move from this one module, so they cannot
disagree. Its policies:

- labels: one table, ``METHOD_LABELS`` (``"lora"`` -> ``"LoRA"``);
- units: bytes are shown in GiB (``GIB = 2**30`` bytes, two decimals),
  everywhere an estimate figure is printed;
- cards: named as the card table names them (``CardFit.card.name``);
- severity: a parameter count that changed is high; a method that no longer
  fits a card is high, one that now fits is low; peak memory that moved and a
  largest batch that dropped are moderate, a batch that rose is low; a memory
  or batch move under 1% (``MINOR_RELATIVE``) is info.

Pure: two typed Plans in, a frozen PlanDelta out; no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from estimator.errors import PlanJsonError
from estimator.plan import Plan

Severity = Literal["info", "low", "moderate", "high"]
Kind = Literal[
    "parameters_changed", "memory_changed", "largest_batch_changed", "no_longer_fits", "now_fits"
]
Unit = Literal["parameters", "bytes", "sequences"]

METHOD_LABELS: Final = {
    "full": "full fine-tune",
    "lora": "LoRA",
    "qlora": "QLoRA",
    "serve": "serving",
}
GIB: Final = 2**30
MINOR_RELATIVE: Final = 0.01


def stored_plan(document: Plan | Mapping[str, Any] | None) -> Plan | None:
    """The typed Plan of a stored Plan JSON document (or the Plan itself); None when there is none.

    Readers of stored plans (changes, advisories, pages) treat a document that
    is not a Plan (another schema version, an empty object) as no plan, so a
    page says "no estimate" instead of failing.
    """
    if document is None or isinstance(document, Plan):
        return document
    if not document:
        return None
    try:
        return Plan.from_json(document)
    except PlanJsonError:
        return None


def gib(value: int | float, digits: int = 2) -> str:
    """Bytes as GiB (2**30 bytes): ``gib(3 * 2**30) == "3.00 GiB"``."""
    return f"{value / GIB:.{digits}f} GiB"


def method_label(method: str, capital: bool = False) -> str:
    """The method's one label (``serve`` -> ``serving``; ``Serving`` when it starts a sentence)."""
    label = METHOD_LABELS.get(method, method)
    return label[:1].upper() + label[1:] if capital else label


@dataclass(frozen=True)
class DeltaEntry:
    """One number that moved: what it is, both values, its unit, how far and how severe.

    ``relative`` is ``(new - old) / max(|old|, 1)``, signed; ``method`` and
    ``card`` say which method and card the number is of, when it is of one.
    """

    kind: Kind
    what: str
    old: int
    new: int
    unit: Unit
    relative: float
    severity: Severity
    method: str | None = None
    card: str | None = None

    @property
    def key(self) -> str:
        """A stable name: ``parameters``, ``memory.lora``, ``T4.lora``."""
        if self.card is not None:
            return f"{self.card}.{self.method}"
        return "parameters" if self.method is None else f"memory.{self.method}"

    def shown(self, value: int) -> str:
        """One value in this entry's unit: ``1,235,814,400``, ``2.30 GiB``, ``91``."""
        if self.unit == "bytes":
            return gib(value)
        return f"{value:,}" if self.unit == "parameters" else str(value)

    @property
    def message(self) -> str:
        """The sentence a change list prints, both values in it."""
        label = method_label(self.method or "")
        if self.kind == "no_longer_fits":
            return f"{label} no longer fits on {self.card} (largest batch {self.old} -> {self.new})"
        if self.kind == "now_fits":
            return f"{label} now fits on {self.card} (largest batch {self.old} -> {self.new})"
        if self.kind == "largest_batch_changed":
            return f"{self.what}: {self.old} -> {self.new}"
        return f"{self.what} {self.shown(self.old)} -> {self.shown(self.new)}"


@dataclass(frozen=True)
class PlanDelta:
    """Every number that moved between two plans, in a fixed order (empty when none did).

    Order: parameters, peak memory per method, then per card (the new plan's
    order) and method the fit verdicts and largest batches.
    """

    entries: tuple[DeltaEntry, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.entries

    @property
    def parameters(self) -> DeltaEntry | None:
        return next((e for e in self.entries if e.kind == "parameters_changed"), None)

    @property
    def memory(self) -> tuple[DeltaEntry, ...]:
        return tuple(e for e in self.entries if e.kind == "memory_changed")

    @property
    def cards(self) -> tuple[DeltaEntry, ...]:
        """Fit flips and largest-batch moves, per card and method."""
        return tuple(e for e in self.entries if e.card is not None)


def delta(old: Plan | None, new: Plan | None) -> PlanDelta:
    """What moved from ``old`` to ``new``; empty when either side has no plan."""
    if old is None or new is None:
        return PlanDelta()
    entries: list[DeltaEntry] = []
    before, after = _total(old), _total(new)
    if before != after:
        entries.append(
            DeltaEntry(
                "parameters_changed",
                "parameters",
                before,
                after,
                "parameters",
                _relative(before, after),
                "high",
            )
        )
    old_memory, new_memory = dict(old.memory), dict(new.memory)
    for method, label in METHOD_LABELS.items():
        if method not in old_memory or method not in new_memory:
            continue
        b = old_memory[method].peak_allocated_bytes
        a = new_memory[method].peak_allocated_bytes
        if b != a:
            rel = _relative(b, a)
            entries.append(
                DeltaEntry(
                    "memory_changed",
                    f"{label} peak memory",
                    b,
                    a,
                    "bytes",
                    rel,
                    _minor(rel, "moderate"),
                    method,
                )
            )
    entries.extend(_card_entries(old, new))
    return PlanDelta(tuple(entries))


def _card_entries(old: Plan, new: Plan) -> list[DeltaEntry]:
    previous = {(c.card.name, m.method): m for c in old.cards for m in c.methods}
    entries = []
    for fit in new.cards:
        name = fit.card.name
        by_method = {m.method: m for m in fit.methods}
        for method, label in METHOD_LABELS.items():
            now, was = by_method.get(method), previous.get((name, method))
            if now is None or was is None:
                continue
            b, a = was.largest_batch, now.largest_batch
            kind: Kind
            severity: Severity
            if was.fits and not now.fits:
                kind, severity = "no_longer_fits", "high"
            elif now.fits and not was.fits:
                kind, severity = "now_fits", "low"
            elif b != a:
                kind = "largest_batch_changed"
                severity = _minor(_relative(b, a), "moderate" if a < b else "low")
            else:
                continue
            what = f"{label} largest batch on {name}"
            entries.append(
                DeltaEntry(kind, what, b, a, "sequences", _relative(b, a), severity, method, name)
            )
    return entries


def _total(p: Plan) -> int:
    total = dict(p.parameters)["total"]
    return total if isinstance(total, int) else 0


def _relative(old: int, new: int) -> float:
    return (new - old) / max(abs(old), 1)


def _minor(relative: float, otherwise: Severity) -> Severity:
    return "info" if abs(relative) < MINOR_RELATIVE else otherwise


__all__ = [
    "GIB",
    "METHOD_LABELS",
    "MINOR_RELATIVE",
    "DeltaEntry",
    "Kind",
    "PlanDelta",
    "Severity",
    "Unit",
    "delta",
    "gib",
    "method_label",
    "stored_plan",
]
