"""What the model page, its Markdown twin and the badge show, read off the stored plans.

The plan was computed once, when the revision was processed; pages read it
back typed (``estimator.Plan.from_json``) and this module only picks numbers
out of it and words them (labels and GiB from ``estimator.deltas``), so the
HTML, the Markdown and the badge can never disagree. The card table's
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

from estimator import Accuracy, EngineVerdict, Plan
from estimator.deltas import METHOD_LABELS, gib, stored_plan
from storage.publishing import ModelPageData, ModelSummary
from storage.records import Change

DIFF_VALUE_MAX_CHARS = 4000
ENGINE = "vllm"
ENGINE_HEADING = "vLLM start-up (default settings, the model's context)"
NO_ENGINE_VERDICT = "no engine verdict stored"


@dataclass(frozen=True)
class CardRow:
    card: str
    usable_gib: str
    cells: tuple[str, ...]
    engine: str = NO_ENGINE_VERDICT


@dataclass(frozen=True)
class MethodNote:
    label: str
    peak: str
    phase: str
    numerics: str
    notes: tuple[str, ...]


def headline(repo_id: str, plan: Plan | None) -> str:
    """One sentence: what serving and LoRA fine-tuning need, in the plan's own workload."""
    if plan is None:
        return f"{repo_id} has no memory estimate yet (no readable config.json)."
    memory, w = dict(plan.memory), plan.workload
    serve, lora = memory["serve"], memory["lora"]
    return (
        f"Serving {repo_id} with {w.serve_weights} weights peaks at "
        f"{gib(serve.peak_allocated_bytes)} at batch {serve.batch}; "
        f"LoRA r={w.lora_rank} at batch {lora.batch} x "
        f"{w.seq_len} tokens peaks at {gib(lora.peak_allocated_bytes)}."
    )


def parameter_line(plan: Plan | None) -> str:
    """The parameter count, set against the checkpoint's tensors when a manifest was read."""
    total = None if plan is None else dict(plan.parameters).get("total")
    if plan is None or not isinstance(total, int):
        return "parameter count unknown"
    checkpoint = plan.checkpoint
    if checkpoint is not None and checkpoint.checkpoint_scalars is not None:
        scalars = checkpoint.checkpoint_scalars
        verdict = "matches" if scalars == total else f"differs by {scalars - total:+,}"
        line = f"{total:,} parameters; the checkpoint holds {scalars:,} ({verdict})"
        return line + "".join(f"; {e}" for e in checkpoint.explanations)
    return f"{total:,} parameters; no weight manifest to check against"


def methods() -> list[str]:
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


def workload_line(plan: Plan | None) -> str:
    """The workload the stored plan was estimated for, as ``key=value`` pairs."""
    if plan is None:
        return ""
    return ", ".join(f"{k}={v}" for k, v in plan.workload.to_json().items())


def family(page: ModelPageData) -> list[ModelSummary]:
    """The other tracked repos whose newest plan names the same family as this one's."""
    own = stored_plan(page.summary.plan)
    if own is None:
        return []
    name = dict(own.model).get("family")
    return [
        other
        for other in page.others
        if (theirs := stored_plan(other.plan)) is not None
        and dict(theirs.model).get("family") == name
    ]


def diff_text(change: Change) -> str | None:
    """The change's old -> new values as text, for the history's diff view."""
    if change.old is None and change.new is None:
        return None
    text = f"- {_dump(change.old)}\n+ {_dump(change.new)}"
    return text if len(text) <= DIFF_VALUE_MAX_CHARS else text[:DIFF_VALUE_MAX_CHARS] + "\n…"


def accuracy(measured: Accuracy | None) -> dict[str, Any] | None:
    """The estimator benchmark's last score as the pages list it, or None (not yet measured)."""
    return None if measured is None else dict(measured.scores())


def _dump(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


__all__ = [
    "ENGINE_HEADING",
    "NO_ENGINE_VERDICT",
    "CardRow",
    "MethodNote",
    "accuracy",
    "card_engine_cell",
    "card_rows",
    "diff_text",
    "engine_cell",
    "family",
    "gib",
    "headline",
    "method_notes",
    "methods",
    "parameter_line",
    "stored_plan",
    "workload_line",
]
