"""What the model page, its Markdown twin and the badge show, read off the stored Plan JSON.

The plan was computed once, when the revision was processed; this module
only picks numbers out of it and words them, so the HTML, the Markdown and
the badge can never disagree.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from estimator import Accuracy
from feeds.delta import GIB, METHOD_LABELS
from storage.publishing import ModelPageData
from storage.records import Change, Severity

BADGE_COLORS = {
    None: "brightgreen",
    Severity.INFO: "brightgreen",
    Severity.LOW: "green",
    Severity.MODERATE: "yellow",
    Severity.HIGH: "orange",
    Severity.CRITICAL: "red",
}
DIFF_VALUE_MAX_CHARS = 4000


@dataclass(frozen=True)
class CardRow:
    card: str
    usable_gib: str
    cells: tuple[str, ...]


def gib(value: Any) -> str:
    return f"{value / GIB:.2f} GiB" if isinstance(value, int | float) else "-"


def headline(repo_id: str, plan: Mapping[str, Any] | None) -> str:
    """One sentence: what serving and LoRA fine-tuning need, in the plan's own workload."""
    if not plan:
        return f"{repo_id} has no memory estimate yet (no readable config.json)."
    memory = plan.get("memory") or {}
    workload = plan.get("workload") or {}
    serve, lora = memory.get("serve") or {}, memory.get("lora") or {}
    return (
        f"Serving {repo_id} with {workload.get('serve_weights', '?')} weights peaks at "
        f"{gib(serve.get('peak_allocated_bytes'))} at batch {serve.get('batch', '?')}; "
        f"LoRA r={workload.get('lora_rank', '?')} at batch {lora.get('batch', '?')} x "
        f"{workload.get('seq_len', '?')} tokens peaks at {gib(lora.get('peak_allocated_bytes'))}."
    )


def parameter_line(plan: Mapping[str, Any] | None) -> str:
    """The parameter count, set against the checkpoint's tensors when a manifest was read."""
    params = (plan or {}).get("parameters") or {}
    total, checkpoint = params.get("total"), params.get("checkpoint_scalars")
    if not isinstance(total, int):
        return "parameter count unknown"
    if isinstance(checkpoint, int):
        verdict = "matches" if checkpoint == total else f"differs by {checkpoint - total:+,}"
        line = f"{total:,} parameters; the checkpoint holds {checkpoint:,} ({verdict})"
        explained = (params.get("checkpoint") or {}).get("explanations") or []
        return line + ("".join(f"; {e}" for e in explained if isinstance(e, str)))
    return f"{total:,} parameters; no weight manifest to check against"


def methods() -> list[str]:
    return list(METHOD_LABELS.values())


def card_rows(plan: Mapping[str, Any] | None) -> list[CardRow]:
    """Per card: for each method, the largest batch that fits or that it does not fit."""
    rows = []
    for card in (plan or {}).get("cards") or []:
        entries = card.get("methods") or {}
        cells = []
        for method in METHOD_LABELS:
            entry = entries.get(method) or {}
            batch = entry.get("largest_batch")
            if entry.get("fits"):
                cells.append(f"fits, batch <= {batch}")
            elif isinstance(batch, int) and batch > 0:
                cells.append(f"no (largest batch {batch})")
            else:
                cells.append("no")
        rows.append(CardRow(str(card.get("card")), gib(card.get("usable_bytes")), tuple(cells)))
    return rows


def method_notes(plan: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """Per method: peak, where the peak falls, the numerics and the estimator's notes."""
    memory = (plan or {}).get("memory") or {}
    return [
        {
            "label": label,
            "peak": gib(memory[method].get("peak_allocated_bytes")),
            "phase": memory[method].get("peak_phase", ""),
            "numerics": memory[method].get("numerics", ""),
            "notes": list(memory[method].get("notes") or []),
        }
        for method, label in METHOD_LABELS.items()
        if isinstance(memory.get(method), Mapping)
    ]


def diff_text(change: Change) -> str | None:
    """The change's old -> new values as text, for the history's diff view."""
    if change.old is None and change.new is None:
        return None
    text = f"- {_dump(change.old)}\n+ {_dump(change.new)}"
    return text if len(text) <= DIFF_VALUE_MAX_CHARS else text[:DIFF_VALUE_MAX_CHARS] + "\n…"


def badge(page: ModelPageData, latest_severity: Severity | None) -> dict[str, Any]:
    """A shields.io endpoint document: serving memory, coloured by the latest advisory."""
    memory = ((page.summary.plan or {}).get("memory") or {}).get("serve") or {}
    peak = memory.get("peak_allocated_bytes")
    if not isinstance(peak, int):
        return {
            "schemaVersion": 1,
            "label": "serve",
            "message": "no estimate",
            "color": "lightgrey",
        }
    return {
        "schemaVersion": 1,
        "label": "serve memory",
        "message": f"{peak / GIB:.1f} GiB",
        "color": BADGE_COLORS[latest_severity],
    }


def accuracy(measured: Accuracy | None) -> dict[str, Any] | None:
    """The estimator benchmark's last score as the pages list it, or None (not yet measured)."""
    return None if measured is None else dict(measured.scores())


def _dump(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


__all__ = [
    "CardRow",
    "accuracy",
    "badge",
    "card_rows",
    "diff_text",
    "gib",
    "headline",
    "method_notes",
    "methods",
    "parameter_line",
]
