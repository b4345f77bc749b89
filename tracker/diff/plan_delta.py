"""What a revision changes in the estimate, as the change records storage keeps.

A thin adapter: ``estimator.delta`` decides what moved, how it is worded
(one label table, GiB) and how severe it is; this module only maps its typed
entries onto ``storage.records.Change`` rows, from the revision's typed Plans.
"""

from __future__ import annotations

from typing import Final

import estimator
from estimator import DeltaEntry, Plan
from storage.records import Change, Severity

ARTIFACT: Final = "estimate"
PATH: Final = "config.json"
SEVERITIES: Final = {
    "info": Severity.INFO,
    "low": Severity.LOW,
    "moderate": Severity.MODERATE,
    "high": Severity.HIGH,
}


def diff_plans(old: Plan | None, new: Plan | None) -> list[Change]:
    """Changes between two plans; nothing when either side has no plan."""
    moved = estimator.delta(old, new)
    return [change_of(entry) for entry in moved.entries]


def change_of(entry: DeltaEntry) -> Change:
    """One delta entry as a stored change (both values, the entry's own sentence)."""
    return Change(
        ARTIFACT, PATH, entry.kind, entry.old, entry.new, SEVERITIES[entry.severity], _said(entry)
    )


def _said(entry: DeltaEntry) -> str:
    """The entry's sentence; a byte move too small to show in GiB (``19.92 GiB -> 19.92
    GiB``) is said in bytes, so the two sides of a line never read the same."""
    shown = entry.shown(entry.new)
    if entry.unit != "bytes" or entry.shown(entry.old) != shown:
        return entry.message
    return f"{entry.what} {entry.old:,} -> {entry.new:,} bytes ({shown} either way)"


__all__ = ["ARTIFACT", "change_of", "diff_plans"]
