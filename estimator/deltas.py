"""``delta(old, new) -> PlanDelta``: what moved between two Plans, worded once for every reader.

The tracker's changes, the advisories' estimate delta, the feeds and the
pages all word an estimate move from this one module, so they cannot
disagree. Its policies:

- labels: one table, ``METHOD_LABELS`` (``"lora"`` -> ``"LoRA"``);
- units: bytes are shown in GiB (``GIB = 2**30`` bytes, two decimals),
  everywhere an estimate figure is printed;
- one line per method: its peak memory at the plans' stated workload
  (``workload_text``: batch, tokens, card) and its largest batch on that
  card, never one line per card; plans estimated at different workloads
  compare their parameters only;
- severity: a parameter count that changed is high; a method that no longer
  fits the stated card is high, one that now fits is low; peak memory that
  moved and a largest batch that dropped are moderate, a batch that rose is
  low; a memory or batch move under 1% (``MINOR_RELATIVE``) is info.

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


def stored_plan(document: Mapping[str, Any] | None) -> Plan | None:
    """The typed Plan of a stored Plan JSON document; None when there is none.

    Readers of stored plans (changes, advisories, pages) treat a document that
    is not a Plan (another schema version, an empty object) as no plan, so a
    page says "no estimate" instead of failing.
    """
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
    A method's entry carries its peak memory (``old``/``new``, bytes) and its
    largest batch on the stated card (``batch_old``/``batch_new``), both at
    ``workload``, the stated workload that every figure of it was estimated at.
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
    batch_old: int | None = None
    batch_new: int | None = None
    workload: str = ""

    @property
    def key(self) -> str:
        """A stable name: ``parameters``, ``memory.lora``."""
        return "parameters" if self.method is None else f"memory.{self.method}"

    def shown(self, value: int) -> str:
        """One value in this entry's unit: ``1,235,814,400``, ``2.30 GiB``, ``91``."""
        if self.unit == "bytes":
            return gib(value)
        return f"{value:,}" if self.unit == "parameters" else str(value)

    @property
    def batch_text(self) -> str:
        """``largest batch on A10G 55 -> 19 (no longer fits)``; empty without a card."""
        if self.card is None or self.batch_old is None or self.batch_new is None:
            return ""
        verdict = {
            "no_longer_fits": "no longer fits",
            "now_fits": "now fits",
        }.get(self.kind, "fits" if self.batch_new > 0 else "does not fit")
        if self.batch_old == self.batch_new:
            return f"largest batch on {self.card} still {self.batch_new} ({verdict})"
        return f"largest batch on {self.card} {self.batch_old} -> {self.batch_new} ({verdict})"

    @property
    def message(self) -> str:
        """The sentence a change list prints: both values and the workload they are at."""
        if self.method is None:
            return f"{self.what} {self.shown(self.old)} -> {self.shown(self.new)}"
        label = method_label(self.method, capital=True)
        old, new = self.shown(self.old), self.shown(self.new)
        # a move under the printed precision still reads as a move, with both byte counts
        peak = (
            f"{old} -> {new}"
            if old != new
            else f"{self.old:,} -> {self.new:,} bytes ({new} either way)"
        )
        return f"{label} at {self.workload}: peak {peak}; {self.batch_text}"


@dataclass(frozen=True)
class PlanDelta:
    """Every number that moved between two plans, in a fixed order (empty when none did).

    Order: parameters, then one entry per method (``METHOD_LABELS`` order).
    """

    entries: tuple[DeltaEntry, ...] = ()

    @property
    def empty(self) -> bool:
        """True when nothing moved between the two plans."""
        return not self.entries

    @property
    def parameters(self) -> DeltaEntry | None:
        """The parameter count's move; None when the count is unchanged."""
        return next((e for e in self.entries if e.kind == "parameters_changed"), None)

    @property
    def methods(self) -> tuple[DeltaEntry, ...]:
        """One entry per method whose peak or largest batch on the stated card moved."""
        return tuple(e for e in self.entries if e.method is not None)


def workload_text(plan: Plan) -> str:
    """The stated workload in words: ``batch 1 x 512 tokens on A10G``."""
    w = plan.workload
    gpus = "" if w.gpus == 1 else f" x {w.gpus} GPUs"
    return f"batch {w.batch} x {w.seq_len} tokens on {w.card}{gpus}"


def same_workload(old: Plan, new: Plan) -> bool:
    """Whether two plans' figures were estimated at one workload, so they can be compared."""
    a, b = old.workload, new.workload
    keys = ("method", "batch", "seq_len", "target_len", "card", "precision", "gpus", "headroom")
    return all(getattr(a, k) == getattr(b, k) for k in keys)


def delta(old: Plan | None, new: Plan | None) -> PlanDelta:
    """What moved from ``old`` to ``new``; empty when either side has no plan.

    Memory and batch figures are compared only when both plans were estimated
    at the same workload: a figure without its workload is not stated.
    """
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
    if same_workload(old, new):
        entries.extend(_method_entries(old, new))
    return PlanDelta(tuple(entries))


def _method_entries(old: Plan, new: Plan) -> list[DeltaEntry]:
    """Per method: peak memory at the stated workload and the largest batch on its card."""
    card = new.workload.card
    stated = workload_text(new)
    old_memory, new_memory = dict(old.memory), dict(new.memory)
    old_fit, new_fit = _fits_on(old, card), _fits_on(new, card)
    entries = []
    for method, label in METHOD_LABELS.items():
        if method not in old_memory or method not in new_memory:
            continue
        b = old_memory[method].peak_allocated_bytes
        a = new_memory[method].peak_allocated_bytes
        was, now = old_fit.get(method), new_fit.get(method)
        batch_b = None if was is None else was[0]
        batch_a = None if now is None else now[0]
        if b == a and batch_b == batch_a:
            continue
        rel = _relative(b, a)
        kind: Kind
        severity: Severity
        if was is not None and now is not None and was[1] and not now[1]:
            kind, severity = "no_longer_fits", "high"
        elif was is not None and now is not None and now[1] and not was[1]:
            kind, severity = "now_fits", "low"
        elif b != a:
            kind, severity = "memory_changed", _minor(rel, "moderate")
        else:
            assert batch_b is not None and batch_a is not None
            kind = "largest_batch_changed"
            severity = _minor(
                _relative(batch_b, batch_a), "moderate" if batch_a < batch_b else "low"
            )
        entries.append(
            DeltaEntry(
                kind,
                f"{label} peak memory",
                b,
                a,
                "bytes",
                rel,
                severity,
                method,
                None if now is None else card,
                batch_b,
                batch_a,
                stated,
            )
        )
    return entries


def _fits_on(plan: Plan, card: str) -> dict[str, tuple[int, bool]]:
    fit = next((c for c in plan.cards if c.card.name == card), None)
    return {} if fit is None else {m.method: (m.largest_batch, m.fits) for m in fit.methods}


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
    "same_workload",
    "stored_plan",
    "workload_text",
]
