"""The estimate delta of one transition, from the two stored plans, as advisories print it.

``estimator.delta`` decides what moved and words it (one label table, GiB);
this module only picks what an advisory carries (parameters, peak memory per
method, the largest batch per card and method that moved) and lays it out
as database_specific JSON, a summary headline and Markdown rows. The plans
are the ones the daemon stored for both revisions, never recomputed, so the
advisory, the feed and the page always agree.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import estimator
from estimator import DeltaEntry, Plan
from estimator.deltas import stored_plan

StoredPlan = Plan | Mapping[str, Any] | None


@dataclass(frozen=True)
class EstimateDelta:
    """The numbers that differ between the old and the new plan (empty when none moved)."""

    parameters: DeltaEntry | None
    memory: tuple[DeltaEntry, ...]
    batches: tuple[DeltaEntry, ...]

    @classmethod
    def between(cls, old: StoredPlan, new: StoredPlan) -> EstimateDelta:
        """The delta of two plans (typed or stored JSON); empty when either side has none."""
        moved = estimator.delta(stored_plan(old), stored_plan(new))
        batches = tuple(e for e in moved.cards if e.old != e.new)
        return cls(moved.parameters, moved.memory, batches)

    @property
    def empty(self) -> bool:
        return self.parameters is None and not self.memory and not self.batches

    def headline(self) -> str | None:
        """The one number a summary line names: the largest relative move."""
        candidates = [*self.batches, *self.memory]
        if self.parameters is not None:
            candidates.append(self.parameters)
        if not candidates:
            return None
        top = max(candidates, key=lambda e: abs(e.relative))
        verb = "drops" if top.new < top.old else "rises"
        return f"{top.what} {verb} {top.shown(top.old)} -> {top.shown(top.new)}"

    def to_json(self) -> dict[str, Any]:
        """The delta as database_specific.estimate_delta (omit-empty)."""
        document: dict[str, Any] = {}
        if self.parameters is not None:
            document["parameters"] = _pair(self.parameters)
        if self.memory:
            document["peak_allocated_bytes"] = {m.method: _pair(m) for m in self.memory}
        if self.batches:
            document["largest_batch"] = {m.key: _pair(m) for m in self.batches}
        return document

    def markdown_rows(self) -> list[str]:
        """Markdown table rows (| what | before | after |) for the advisory details."""
        rows = [self.parameters] if self.parameters else []
        return [
            f"| {m.what} | {m.shown(m.old)} | {m.shown(m.new)} |"
            for m in [*rows, *self.memory, *self.batches]
        ]


def _pair(entry: DeltaEntry) -> dict[str, int]:
    return {"before": entry.old, "after": entry.new}


__all__ = ["EstimateDelta", "StoredPlan"]
