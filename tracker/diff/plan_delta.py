"""What a revision changes in the estimate, as the change records storage keeps.

A thin adapter: ``estimator.delta`` decides what moved, how it is worded
(one label table, GiB) and how severe it is; this module only maps its typed
entries onto ``storage.records.Change`` rows. Plans may come typed or as the
stored Plan JSON; a stored document that is not a Plan counts as no plan.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import estimator
from estimator import DeltaEntry, Plan, PlanJsonError
from storage.records import Change, Severity

ARTIFACT: Final = "estimate"
PATH: Final = "config.json"
SEVERITIES: Final = {
    "info": Severity.INFO,
    "low": Severity.LOW,
    "moderate": Severity.MODERATE,
    "high": Severity.HIGH,
}


def typed_plan(plan: Plan | Mapping[str, Any] | None) -> Plan | None:
    """The typed Plan of a stored document (or the Plan itself); None for no plan."""
    if plan is None or isinstance(plan, Plan):
        return plan
    if not plan:
        return None
    try:
        return Plan.from_json(plan)
    except PlanJsonError:
        return None


def diff_plans(
    old: Plan | Mapping[str, Any] | None, new: Plan | Mapping[str, Any] | None
) -> list[Change]:
    """Changes between two plans; nothing when either side has no plan."""
    moved = estimator.delta(typed_plan(old), typed_plan(new))
    return [change_of(entry) for entry in moved.entries]


def change_of(entry: DeltaEntry) -> Change:
    """One delta entry as a stored change (both values, the entry's own sentence)."""
    return Change(
        ARTIFACT, PATH, entry.kind, entry.old, entry.new, SEVERITIES[entry.severity], entry.message
    )


__all__ = ["ARTIFACT", "change_of", "diff_plans", "typed_plan"]
