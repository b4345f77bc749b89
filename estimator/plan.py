"""``plan(config, workload, manifest) -> Plan``: the one entry point.

A Plan is frozen and carries everything the CLI, the feeds and the
tracker's deltas print: parameters (against the checkpoint when a manifest
is given), structure, memory per method, card fits, cost and findings,
plus every assumption behind them. ``Plan.to_json()`` is described by
``estimator/schema/plan.schema.json`` and versioned by ``SCHEMA_VERSION``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from estimator.architecture import Architecture
from estimator.cards import all_cards, card
from estimator.cost import Cost, estimate_cost
from estimator.families import describe
from estimator.fit import CardFit, fit_card
from estimator.manifest import ManifestComparison, WeightManifest, compare
from estimator.memory import MemoryEstimate, evaluate, method_models, split_parameters
from estimator.memory.layers import check_targets
from estimator.structure import structure_json
from estimator.verifier import Context, Finding, verify
from estimator.workload import Workload

SCHEMA_VERSION: Final = "1.0"


@dataclass(frozen=True)
class Plan:
    schema_version: str
    model: tuple[tuple[str, Any], ...]
    parameters: tuple[tuple[str, Any], ...]
    checkpoint: ManifestComparison | None
    structure: tuple[Mapping[str, Any], ...]
    workload: Workload
    memory: tuple[tuple[str, MemoryEstimate], ...]
    cards: tuple[CardFit, ...]
    cost: Cost
    findings: tuple[Finding, ...]
    assumptions: tuple[str, ...]

    @property
    def selected(self) -> MemoryEstimate:
        return dict(self.memory)[self.workload.method]

    def to_json(self) -> dict[str, Any]:
        parameters = dict(self.parameters)
        parameters["checkpoint_scalars"] = (
            None if self.checkpoint is None else self.checkpoint.checkpoint_scalars
        )
        parameters["checkpoint"] = None if self.checkpoint is None else self.checkpoint.to_json()
        memory: dict[str, Any] = {m: e.to_json() for m, e in self.memory}
        memory["selected"] = self.workload.method
        return {
            "schema_version": self.schema_version,
            "model": dict(self.model),
            "parameters": parameters,
            "structure": [dict(n) for n in self.structure],
            "workload": self.workload.to_json(),
            "memory": memory,
            "cards": [c.to_json() for c in self.cards],
            "cost": self.cost.to_json(),
            "findings": [f.to_json() for f in self.findings],
            "assumptions": list(self.assumptions),
        }


def _parameter_breakdown(arch: Architecture) -> tuple[tuple[str, Any], ...]:
    embeddings = head = other = 0
    groups = arch.block_groups
    uniform = len({b.parameters for b, _ in groups}) == 1
    per_block: int | list[int] = (
        groups[0][0].parameters if uniform else [b.parameters for b in arch.blocks]
    )
    for t in arch.top_tensors:
        if t.role in ("embedding", "position"):
            embeddings += t.numel
        elif t.role == "head":
            head += t.numel
        else:
            other += t.numel
    total = arch.total_parameters
    return (
        ("total", total),
        ("embeddings", embeddings),
        ("blocks", arch.in_block_parameters),
        ("per_block", per_block),
        ("head", head),
        ("other", other),
        ("tied_word_embeddings", arch.tie_word_embeddings),
    )


def plan(
    config: Mapping[str, object],
    workload: Workload | None = None,
    manifest: WeightManifest | None = None,
) -> Plan:
    """Estimate everything for ``config`` (a parsed config.json) under ``workload``."""
    w = workload or Workload()
    target = card(w.card)
    arch = describe(config)
    if not w.all_linear:
        check_targets(arch, w.lora_targets)
    split = split_parameters(arch)
    models = method_models(arch, w, target.bf16, split)
    memory = tuple(
        (name, evaluate(model, w.batch, target.context_bytes, w.gpus))
        for name, model in models.items()
    )
    fits = tuple(fit_card(models, c, w.batch, w.gpus, w.headroom, w.precision) for c in all_cards())
    selected = models[w.method if w.method != "serve" else "full"]
    cost = estimate_cost(arch, w, target, selected, models["serve"])
    head = next((t.name for t in arch.top_tensors if t.role == "head"), None)
    checkpoint = (
        None
        if manifest is None
        else compare(manifest, split.total, arch.tie_word_embeddings, arch.declared_dtype, head)
    )
    findings = verify(Context(config, arch, manifest, target, w.precision, w.seq_len))
    assumptions = _assumptions(models[w.method].assumptions, cost.assumptions, w)
    return Plan(
        schema_version=SCHEMA_VERSION,
        model=(
            ("model_type", arch.model_type),
            ("architecture", arch.architecture),
            ("family", arch.family),
            ("head", arch.head),
            ("supported", arch.supported),
            ("num_layers", arch.num_layers),
            ("hidden_size", arch.hidden_size),
            ("vocab_size", arch.vocab_size),
            ("declared_dtype", arch.declared_dtype),
            ("max_position_embeddings", arch.max_position_embeddings),
        ),
        parameters=_parameter_breakdown(arch),
        checkpoint=checkpoint,
        structure=structure_json(arch, w.seq_len),
        workload=w,
        memory=memory,
        cards=fits,
        cost=cost,
        findings=findings,
        assumptions=assumptions,
    )


def _assumptions(method: tuple[str, ...], cost: tuple[str, ...], w: Workload) -> tuple[str, ...]:
    common = (
        "peak_allocated_bytes = torch.cuda.max_memory_allocated; reserved_bytes adds the caching "
        "allocator's reserve (2% of fixed + 30% of batch-proportional bytes); device_bytes adds "
        "the card's CUDA context (what nvidia-smi shows)",
        "optimizer state alive from the second step on; gradients freed between steps",
        f"AdamW implementation {w.adamw_impl}"
        + (
            ": the step materialises sqrt(v) for all parameters"
            if w.adamw_impl == "foreach"
            else ""
        ),
        f"cards fit when device bytes x {w.headroom} stay under the reported memory",
    )
    return (*common, *method, *cost)
