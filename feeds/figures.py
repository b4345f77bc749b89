"""What the published figures say, each with its workload, its card and whether it fits.

The page headline, the badge, the card table, the cost lines and the
Markdown twin all word a stored plan here, so none can state a figure
without the workload it was estimated at (the plan's own, which the tracker
sets in one place) or disagree with another about a fit. A fit is the card
table's verdict (device bytes times the headroom under the card's memory,
``CardFit``), and every memory figure shown is device bytes, the number that
rule compares. A repo with no plan reads "could not estimate", never zero.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from estimator import Accuracy, Plan, Workload
from estimator.cost import Cost
from estimator.deltas import METHOD_LABELS, gib, method_label
from estimator.verifier import Finding
from storage import RepoId
from storage.publishing import ModelPageData

NOT_ESTIMATED: Final = "could not estimate"
GENERIC: Final = "generic"


@dataclass(frozen=True)
class MethodFigure:
    """One method at the stated workload on the stated card."""

    method: str
    label: str
    device_bytes: int
    card: str
    fits: bool
    largest_batch: int

    @property
    def verdict(self) -> str:
        """The fit worded for a headline."""
        return "fits" if self.fits else "does not fit"


def workload_words(plan: Plan) -> str:
    """``batch 1 × 512 tokens`` (plus the GPU count past one)."""
    w = plan.workload
    gpus = "" if w.gpus == 1 else f" on {w.gpus} GPUs each"
    return f"batch {w.batch} × {w.seq_len} tokens{gpus}"


def card_words(plan: Plan) -> str:
    """The stated card with its memory: ``A10G (22.07 GiB)``."""
    fit = next((c for c in plan.cards if c.card.name == plan.workload.card), None)
    return plan.workload.card if fit is None else f"{fit.card.name} ({gib(fit.card.usable_bytes)})"


def method_figures(plan: Plan) -> list[MethodFigure]:
    """Every method at the stated workload, judged on the stated card by the card table."""
    memory = dict(plan.memory)
    fit = next((c for c in plan.cards if c.card.name == plan.workload.card), None)
    figures = []
    for method, label in METHOD_LABELS.items():
        if method not in memory:
            continue
        entry = None if fit is None else next((m for m in fit.methods if m.method == method), None)
        figures.append(
            MethodFigure(
                method,
                label,
                memory[method].device_bytes,
                plan.workload.card,
                entry is not None and entry.fits,
                0 if entry is None else entry.largest_batch,
            )
        )
    return figures


def headline(repo_id: RepoId, plan: Plan | None) -> str:
    """One sentence: serving and a LoRA fine-tune at the stated workload, card and verdict."""
    if plan is None:
        return (
            f"{repo_id}: {NOT_ESTIMATED} (the newest revision has no config.json the "
            "estimator can read, or one that gives no layer width)."
        )
    figures = {f.method: f for f in method_figures(plan)}
    serve, lora = figures["serve"], figures["lora"]
    return (
        f"At {workload_words(plan)}, serving {repo_id} ({plan.workload.serve_weights} weights) "
        f"needs about {gib(serve.device_bytes)} on one {card_words(plan)}: {serve.verdict}; "
        f"a LoRA fine-tune (r={plan.workload.lora_rank}) needs {gib(lora.device_bytes)}: "
        f"{lora.verdict}."
    )


def provenance(plan: Plan | None, sha: str | None) -> str:
    """Where the figures come from: the revision's own config.json, never its weights."""
    if plan is None:
        return "No estimate: nothing was reconstructed."
    at = f" at revision {sha[:12]}" if sha else ""
    read = (
        "; the checkpoint's parameter count was read from its safetensors headers"
        if plan.checkpoint is not None
        else ""
    )
    return f"Reconstructed from its own config.json{at} with no weights read{read}."


def is_generic(plan: Plan) -> bool:
    """A generic estimate (no family module): its count covers only the parts it recognised."""
    model = dict(plan.model)
    return model.get("family") == GENERIC or model.get("supported") is False


def parameters_line(plan: Plan | None) -> str:
    """The count, a lower bound said as one, and the checkpoint's count with the delta in %."""
    total = None if plan is None else dict(plan.parameters).get("total")
    if plan is None or not isinstance(total, int) or total == 0:
        return f"Parameters: {NOT_ESTIMATED}."
    model_type = dict(plan.model).get("model_type")
    line = (
        f"At least {total:,} parameters: a generic estimate (model_type {model_type!r} has no "
        "family module), so parts of the model may not be counted"
        if is_generic(plan)
        else f"{total:,} parameters, counted from config.json"
    )
    checkpoint = plan.checkpoint
    if checkpoint is None or checkpoint.checkpoint_scalars is None:
        return line + "; no weight manifest to check against."
    scalars = checkpoint.checkpoint_scalars
    percent = (scalars - total) / total * 100
    line += (
        f"; the checkpoint holds {scalars:,} ({percent:+.2f}%, read from the revision's "
        "safetensors headers)"
    )
    return line + "".join(f"; {e}" for e in checkpoint.explanations) + "."


def cost_line(cost: Cost, w: Workload) -> str:
    """One method's cost with its assumptions in prose, or why it is not priced."""
    label = method_label(cost.method, capital=True)
    if cost.usd is None:
        reason = cost.price_source or "no price is known for this card"
        return f"{label} on {cost.card}: {reason.removeprefix('not priced: ')}, so not priced."
    hours = cost.seconds / 3600
    if cost.method == "serve":
        return (
            f"{label} on {cost.card}: about ${cost.usd:,.2f} per million generated tokens "
            f"({hours:,.1f} h decoding {cost.decode_tokens_per_s:,.0f} tokens/s at "
            f"the stated batch; priced from {cost.price_source})."
        )
    return (
        f"{label} on {cost.card}: about ${cost.usd:,.2f} and {hours:,.1f} h: {w.epochs:g} epochs "
        f"at batch {w.batch}, {w.seq_len} tokens over {w.samples:,} samples, {cost.bound}-bound "
        f"at MFU {cost.mfu:g}, priced from {cost.price_source}."
    )


def cost_lines(plan: Plan | None) -> list[str]:
    """Each method's cost on the stated card (older plans carry only the workload's own)."""
    if plan is None:
        return []
    costs = plan.costs or (plan.cost,)
    order = list(METHOD_LABELS)
    ordered = sorted(costs, key=lambda c: order.index(c.method) if c.method in order else 0)
    return [cost_line(c, plan.workload) for c in ordered]


def finding_line(finding: Finding) -> str:
    """``[warning] config-key-misspelt: … Fix: …``."""
    return f"[{finding.severity}] {finding.id}: {finding.message} Fix: {finding.fix}"


def accuracy_sentence(measured: Accuracy | None) -> str:
    """The benchmark's last score in one sentence (no file names)."""
    if measured is None:
        return "The estimator's accuracy has not been measured yet."
    return (
        f"Against {measured.rows_with_figure} measured GPU runs (scored {measured.date}), "
        f"the median peak-memory estimate was off by {measured.median_abs_error_pct:g}% "
        f"(90th percentile {measured.p90_abs_error_pct:g}%), and the fits / does-not-fit "
        f"verdict was right in {measured.verdict_accuracy_pct:g}% of "
        f"{measured.rows_with_verdict} runs."
    )


@dataclass(frozen=True)
class Sibling:
    """Another checkpoint of the family: its parameters and delta against this one, worded."""

    repo_id: RepoId
    parameters: str
    delta: str


def siblings(page: ModelPageData, plan: Plan | None) -> list[Sibling]:
    """Other tracked checkpoints of the family: size, and delta against this one in %.

    Read off the other repos' stored plan JSON (family and total only), not
    parsed into Plans: a page lists every tracked repo of its family.
    """
    if plan is None:
        return []
    family = dict(plan.model).get("family")
    own = dict(plan.parameters).get("total")
    out = []
    for summary in page.others:
        theirs = summary.plan or {}
        total = (theirs.get("parameters") or {}).get("total")
        if (theirs.get("model") or {}).get("family") != family or not isinstance(total, int):
            continue
        delta = f"{(total - own) / own * 100:+.1f}%" if isinstance(own, int) and own > 0 else "-"
        out.append(Sibling(summary.repo.repo_id, f"{total:,}", delta))
    return out


def badge(plan: Plan | None) -> dict[str, object]:
    """A shields.io endpoint document: serving memory at the stated workload on its card.

    The colour is the verdict (fits: green, does not fit: red), never an
    advisory's severity, so one figure has one colour on every server.
    """
    if plan is None:
        return {
            "schemaVersion": 1,
            "label": "serve",
            "message": NOT_ESTIMATED,
            "color": "lightgrey",
        }
    serve = next(f for f in method_figures(plan) if f.method == "serve")
    w = plan.workload
    return {
        "schemaVersion": 1,
        "label": f"serve @ batch {w.batch}×{w.seq_len}",
        "message": f"{gib(serve.device_bytes, 1)} · {serve.verdict} {serve.card}",
        "color": "brightgreen" if serve.fits else "red",
    }


__all__ = [
    "NOT_ESTIMATED",
    "MethodFigure",
    "Sibling",
    "accuracy_sentence",
    "badge",
    "card_words",
    "cost_line",
    "cost_lines",
    "finding_line",
    "headline",
    "is_generic",
    "method_figures",
    "parameters_line",
    "provenance",
    "siblings",
    "workload_words",
]
