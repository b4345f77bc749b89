"""The estimate delta of one transition, from the revision's two Plans, as advisories print it.

``estimator.delta`` decides what moved and words it (one label table, GiB,
one entry per method at the plans' stated workload); this module only lays
it out as database_specific JSON, a summary headline and one Markdown row per
method. The plans are the typed ones the daemon records for both revisions,
never recomputed nor read back from JSON here, so the advisory, the feed and
the page always agree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import estimator
from estimator import DeltaEntry, Plan
from estimator.deltas import method_label, same_workload, workload_text


@dataclass(frozen=True)
class EstimateDelta:
    """The numbers that differ between the old and the new plan (empty when none moved).

    ``methods`` holds one entry per method whose peak memory or largest batch
    on the stated card moved, both at ``workload`` (``batch 1 x 512 tokens on
    A10G``); plans stored at different workloads compare parameters only.
    """

    parameters: DeltaEntry | None
    methods: tuple[DeltaEntry, ...]
    workload: str = ""

    @classmethod
    def between(cls, before: Plan | None, after: Plan | None) -> EstimateDelta:
        """The delta of two plans; empty when either side has none."""
        moved = estimator.delta(before, after)
        stated = (
            workload_text(after)
            if before is not None and after is not None and same_workload(before, after)
            else ""
        )
        return cls(moved.parameters, moved.methods, stated)

    @property
    def empty(self) -> bool:
        """True when neither the parameters nor any method moved: nothing to word."""
        return self.parameters is None and not self.methods

    def headline(self) -> str | None:
        """The one move a summary line names: a lost or gained fit first, else the largest."""
        flips = [e for e in self.methods if e.kind in ("no_longer_fits", "now_fits")]
        if flips:
            top = flips[0]
            return f"{method_label(top.method or '', capital=True)} {top.batch_text}"
        candidates = list(self.methods)
        if self.parameters is not None:
            candidates.append(self.parameters)
        if not candidates:
            return None
        top = max(candidates, key=lambda e: abs(e.relative))
        verb = "drops" if top.new < top.old else "rises"
        at = f" at {top.workload}" if top.workload else ""
        return f"{top.what}{at} {verb} {top.shown(top.old)} -> {top.shown(top.new)}"

    def to_json(self) -> dict[str, Any]:
        """The delta as database_specific.estimate_delta (omit-empty)."""
        document: dict[str, Any] = {}
        if self.parameters is not None:
            document["parameters"] = _pair(self.parameters.old, self.parameters.new)
        if self.methods:
            document["workload"] = self.workload
            document["methods"] = {m.method: _method_json(m) for m in self.methods}
        return document

    def markdown_rows(self) -> list[str]:
        """Markdown table rows (| what | before | after |) for the advisory details."""
        rows = []
        if self.parameters is not None:
            p = self.parameters
            rows.append(f"| parameters | {p.shown(p.old)} | {p.shown(p.new)} |")
        for m in self.methods:
            rows.append(
                f"| {method_label(m.method or '', capital=True)} at {m.workload} "
                f"| {_cell(m, m.old, m.batch_old)} | {_cell(m, m.new, m.batch_new)} |"
            )
        return rows


def _cell(entry: DeltaEntry, peak: int, batch: int | None) -> str:
    if batch is None:
        return entry.shown(peak)
    verdict = "does not fit" if batch == 0 else f"largest batch {batch}"
    return f"{entry.shown(peak)}; {verdict}"


def _method_json(entry: DeltaEntry) -> dict[str, Any]:
    document: dict[str, Any] = {
        "kind": entry.kind,
        "peak_allocated_bytes": _pair(entry.old, entry.new),
    }
    if entry.card is not None and entry.batch_old is not None and entry.batch_new is not None:
        document["largest_batch"] = {"card": entry.card} | _pair(entry.batch_old, entry.batch_new)
    return document


def _pair(before: int, after: int) -> dict[str, int]:
    return {"before": before, "after": after}


__all__ = ["EstimateDelta"]
