"""The estimate of one revision: ``estimator.plan`` over its config.json, as Plan JSON.

The estimator is pure; this adapter feeds it the revision's parsed config
and turns its refusals into a recorded change (a config the estimator cannot
read is a finding about that revision, not a reason to lose the revision).
"""

from __future__ import annotations

from typing import Any

import estimator
from estimator.errors import EstimateError
from storage.records import Change, Severity
from tracker.diff.revision import RevisionContent


def estimate(content: RevisionContent) -> tuple[dict[str, Any] | None, Change | None]:
    """(plan JSON or None, a change saying why there is no plan, if that is news)."""
    config = content.value("config.json")
    if not isinstance(config, dict):
        return None, None
    plan = getattr(estimator, "plan", None)
    if plan is None:
        return None, Change(
            "estimate",
            "config.json",
            "estimate_unavailable",
            None,
            None,
            Severity.INFO,
            "no estimate: this build's estimator has no plan() yet",
        )
    try:
        result = plan(config)
    except EstimateError as exc:
        return None, Change(
            "estimate",
            "config.json",
            "estimate_failed",
            None,
            str(exc),
            Severity.LOW,
            f"no estimate for this revision: {exc}",
        )
    document: dict[str, Any] = result.to_json()
    return document, None


__all__ = ["estimate"]
