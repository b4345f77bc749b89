"""What the model page and its Markdown twin show of a stored plan: card table, notes, diffs.

The plan was computed once, when the revision was processed; pages read it
back typed (``estimator.Plan.from_json``) and this module only picks numbers
out of it and words them (labels and GiB from ``estimator.deltas``), so the
HTML and the Markdown can never disagree (the headline, badge and cost lines are
worded by ``feeds.figures``). The card table's
engine column is vLLM's start-up verdict on each card as the stored plan
carries it (``serving.cards``, computed when the revision was processed; plans
stored before it carry ``serving.engine`` for the workload's card only); a
card the stored plan has no vLLM verdict for says so rather than being planned
again on every request.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from estimator import EngineVerdict, Plan
from estimator.deltas import METHOD_LABELS, gib, stored_plan
from storage.records import Change

DIFF_VALUE_MAX_CHARS = 4000
ENGINE = "vllm"
ENGINE_HEADING = "vLLM start-up (default settings, the model's context)"
NO_ENGINE_VERDICT = "no engine verdict stored"


@dataclass(frozen=True)
class CardRow:
    """One card table row, worded: usable memory, a cell per method, and vLLM's start-up."""

    card: str
    usable_gib: str
    cells: tuple[str, ...]
    engine: str = NO_ENGINE_VERDICT


@dataclass(frozen=True)
class MethodNote:
    """One method's memory notes, worded: peak, the phase it occurs in, numerics and assumptions."""

    label: str
    peak: str
    phase: str
    numerics: str
    notes: tuple[str, ...]


def methods() -> list[str]:
    """The method labels in card table column order."""
    return list(METHOD_LABELS.values())


def card_rows(plan: Plan | None) -> list[CardRow]:
    """Per card: for each method, the largest batch that fits or that it does not fit, and
    whether vLLM starts there (``engine_cell``)."""
    rows = []
    for fit in () if plan is None else plan.cards:
        entries = {m.method: m for m in fit.methods}
        cells = []
        for method in METHOD_LABELS:
            entry = entries.get(method)
            if entry is not None and entry.fits:
                cells.append(f"fits, batch <= {entry.largest_batch}")
            elif entry is not None and entry.largest_batch > 0:
                cells.append(f"no (largest batch {entry.largest_batch})")
            else:
                cells.append("no")
        engine = card_engine_cell(plan, fit.card.name)
        rows.append(CardRow(fit.card.name, gib(fit.card.usable_bytes), tuple(cells), engine))
    return rows


def card_engine_cell(plan: Plan | None, card: str) -> str:
    """vLLM's start-up on ``card``: the stored per-card entry (``serving.cards``) when the
    plan has one, else the full verdict when it is this card's (``engine_cell``)."""
    if plan is None:
        return NO_ENGINE_VERDICT
    verdict = plan.engine
    if verdict is None or verdict.name != ENGINE or verdict.tensor_parallel != 1:
        return NO_ENGINE_VERDICT
    entry = next((c for c in plan.engine_cards if c.card == card), None)
    if entry is None:
        return engine_cell(verdict, card)
    return _start_text(
        entry.starts, entry.kv_cache_tokens, entry.max_model_len, entry.max_model_len_that_starts
    )


def engine_cell(verdict: EngineVerdict | None, card: str) -> str:
    """vLLM's start-up on ``card`` as the stored verdict states it, one tensor-parallel GPU.

    ``starts; KV cache 14,896 tokens at max_model_len 4,096`` or ``does not start at
    max_model_len 131,072 (KV cache 14,896 tokens; --max-model-len 14896 starts)``; a
    verdict of another engine, card or GPU count is not this card's, so it reads as none.
    """
    if verdict is None or verdict.name != ENGINE or verdict.card != card:
        return NO_ENGINE_VERDICT
    if verdict.tensor_parallel != 1:
        return NO_ENGINE_VERDICT
    return _start_text(
        verdict.starts,
        verdict.kv_cache_tokens,
        verdict.max_model_len,
        verdict.max_model_len_that_starts,
    )


def _start_text(starts: bool, kv_tokens: int, max_model_len: int, that_starts: int) -> str:
    tokens = f"KV cache {kv_tokens:,} tokens"
    if starts:
        return f"starts; {tokens} at max_model_len {max_model_len:,}"
    fix = f"--max-model-len {that_starts} starts" if that_starts > 0 else "no max_model_len starts"
    return f"does not start at max_model_len {max_model_len:,} ({tokens}; {fix})"


def method_notes(plan: Plan | None) -> list[MethodNote]:
    """Per method: peak, where the peak falls, the numerics and the estimator's notes."""
    memory = {} if plan is None else dict(plan.memory)
    return [
        MethodNote(
            label,
            gib(memory[method].peak_allocated_bytes),
            memory[method].peak_phase,
            memory[method].numerics,
            memory[method].notes,
        )
        for method, label in METHOD_LABELS.items()
        if method in memory
    ]


def diff_text(change: Change) -> str | None:
    """The change's old -> new values as text, for the history's diff view."""
    if change.old is None and change.new is None:
        return None
    text = f"- {_dump(change.old)}\n+ {_dump(change.new)}"
    return text if len(text) <= DIFF_VALUE_MAX_CHARS else text[:DIFF_VALUE_MAX_CHARS] + "\n…"


def _dump(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


__all__ = [
    "ENGINE_HEADING",
    "NO_ENGINE_VERDICT",
    "CardRow",
    "MethodNote",
    "card_engine_cell",
    "card_rows",
    "diff_text",
    "engine_cell",
    "gib",
    "method_notes",
    "methods",
    "stored_plan",
]
