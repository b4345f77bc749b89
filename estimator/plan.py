"""``plan(config, workload, manifest) -> Plan``: the one entry point.

A Plan is frozen and carries everything the CLI, the feeds and the
tracker's deltas print: parameters (against the checkpoint when a manifest
is given), structure, memory per method, card fits, cost and findings,
plus every assumption behind them. ``Plan.to_json()`` is described by
``estimator/schema/plan.schema.json`` and versioned by ``SCHEMA_VERSION``;
``Plan.from_json`` rebuilds the typed Plan from that JSON, so readers in
other rooms (deltas, pages, alerts) work on typed values, not dict paths;
both are ``estimator.plan_json``'s one converter (imported on first use, as
it loads the engine verdict types).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Final

from estimator.architecture import Architecture
from estimator.cards import all_cards, card
from estimator.cost import Cost, estimate_cost
from estimator.errors import ConfigError
from estimator.families import ExactParameters, describe
from estimator.fit import CardFit, fit_cards
from estimator.manifest import ManifestComparison, WeightManifest, compare
from estimator.memory import MemoryEstimate, evaluate, method_models, split_parameters
from estimator.memory.lora import resolve_targets
from estimator.stored_quantization import engine_request, serving_workload, stored_quantization
from estimator.structure import Structure, layout
from estimator.verifier import Context, Finding, rules, verify
from estimator.workload import Workload

if TYPE_CHECKING:
    # The engine models and the stack tables load only for a plan that asks for an
    # engine (or a document that holds one): a plain plan never needs them.
    from estimator.engine_cards import CardEngineVerdict
    from estimator.engines import EngineRequest, EngineVerdict
    from estimator.memory.states import ParameterSplit

SCHEMA_VERSION: Final = "1.0"


@dataclass(frozen=True)
class Plan:
    """All a plan computed from a config and a workload; ``to_json``/``from_json`` round-trip."""

    schema_version: str
    model: tuple[tuple[str, Any], ...]
    parameters: tuple[tuple[str, Any], ...]
    checkpoint: ManifestComparison | None
    structure: Structure
    workload: Workload
    memory: tuple[tuple[str, MemoryEstimate], ...]
    cards: tuple[CardFit, ...]
    cost: Cost
    findings: tuple[Finding, ...]
    assumptions: tuple[str, ...]
    # The serving engine's start-up verdict, when the plan was asked for one (``engine=``).
    engine: EngineVerdict | None = None
    # The same engine on every card (``engine_on_every_card=True``), in table order.
    engine_cards: tuple[CardEngineVerdict, ...] = ()
    # One cost per method on the workload's card (a method that does not fit is not priced).
    costs: tuple[Cost, ...] = ()

    @property
    def selected(self) -> MemoryEstimate:
        """The memory estimate of the workload's own method."""
        return dict(self.memory)[self.workload.method]

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> Plan:
        """The Plan that ``to_json`` wrote (``estimator.plan_json`` reads it)."""
        from estimator.plan_json import from_json

        return from_json(document)

    def to_json(self) -> dict[str, Any]:
        """The Plan JSON document (``estimator.plan_json`` writes it)."""
        from estimator.plan_json import to_json

        return to_json(self)


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
    engine: EngineRequest | None = None,
    exact: ExactParameters | None = None,
    engine_on_every_card: bool = False,
) -> Plan:
    """Estimate everything for ``config`` (a parsed config.json) under ``workload``.

    With ``engine``, the plan also carries that serving engine's start-up
    verdict (``serving.engine`` in the JSON): would it start, with what KV cache.
    With ``engine_on_every_card`` as well, the same engine on every card of the table
    (``serving.cards``: starts, KV cache tokens, the largest max_model_len that starts).
    ``exact`` builds the parameter list of a type no family knows (see describe()).
    A serving format or engine quantization left ``auto`` becomes the one the
    checkpoint declares (config.json's ``quantization_config``), as engines load it.
    """
    arch = describe(config, exact)
    stored = stored_quantization(config)
    w = serving_workload(workload or Workload(), stored)
    engine = None if engine is None else engine_request(engine, stored)
    target = card(w.card)
    if arch.total_parameters == 0:
        raise ConfigError(
            "config.json: could not estimate: it gives no layer width (hidden_size or an alias "
            "such as d_model or n_embd), so there are no parameters to count",
            field="hidden_size",
        )
    split = split_parameters(arch)
    models = method_models(arch, w, target.bf16, split)
    memory = tuple(
        (name, evaluate(model, w.batch, target.context_bytes, w.gpus))
        for name, model in models.items()
    )
    fits = fit_cards(models, all_cards(), w.batch, w.gpus, w.headroom, w.precision)
    on_target = next(f for f in fits if f.card.name == target.name)
    costs = tuple(
        estimate_cost(arch, w, target, models[m], models["serve"], on_target.method(m).fits)
        for m in models
    )
    cost = next(c for c in costs if c.method == w.method)
    head = next((t.name for t in arch.top_tensors if t.role == "head"), None)
    checkpoint = (
        None
        if manifest is None
        else compare(manifest, split.total, arch.tie_word_embeddings, arch.declared_dtype, head)
    )
    findings = verify(Context(config, arch, manifest, target, w.precision, w.seq_len, stored))
    findings += _target_findings(arch, w)
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
        structure=layout(arch, w.seq_len),
        workload=w,
        memory=memory,
        cards=fits,
        cost=cost,
        costs=costs,
        findings=findings,
        assumptions=assumptions,
        **({} if engine is None else _serving(arch, split, engine, w, engine_on_every_card)),
    )


def _serving(
    arch: Architecture,
    split: ParameterSplit,
    engine: EngineRequest,
    w: Workload,
    every_card: bool,
) -> dict[str, Any]:
    """The engine's verdict (and on every card when asked): imported only for such a plan."""
    from estimator.engine_cards import on_every_card
    from estimator.engines import simulate_engine

    return {
        "engine": simulate_engine(arch, split, _on_card(engine, w)),
        "engine_cards": on_every_card(arch, split, engine, all_cards()) if every_card else (),
    }


def _on_card(engine: EngineRequest, w: Workload) -> EngineRequest:
    """The engine runs on the workload's card unless it names its own (or its memory),
    at the workload's precision (its ``--dtype``) unless it names its own, and at the
    version the workload's stack pins (estimator/stacks) unless it names its own."""
    if engine.card is None and engine.card_memory_bytes is None:
        engine = replace(engine, card=w.card)
    if engine.dtype == "auto" and w.precision == "fp32":
        engine = replace(engine, dtype="fp32")
    if engine.version is None:
        from estimator.stacks import engine_version

        engine = replace(engine, version=engine_version(w.stack, engine.engine))
    return engine


def _target_findings(arch: Architecture, w: Workload) -> tuple[Finding, ...]:
    """LoRA target names matching no linear: a finding listing the model's own, not an exit."""
    if w.all_linear or w.method not in ("lora", "qlora"):
        return ()
    resolution = resolve_targets(arch, w.lora_targets)
    if not resolution.unmatched:
        return ()
    rule = rules()["lora-targets-unmatched"]
    message = rule["message"].format(
        unmatched=", ".join(resolution.unmatched), linears=", ".join(resolution.available)
    )
    return (Finding(rule["id"], rule["severity"], message, rule["fix"]),)


def _assumptions(method: tuple[str, ...], cost: tuple[str, ...], w: Workload) -> tuple[str, ...]:
    common = (
        "peak_allocated_bytes = torch.cuda.max_memory_allocated; reserved_bytes adds the caching "
        "allocator's reserve (2% of fixed + "
        + (
            "none of the batch-proportional bytes: expandable segments"
            if w.expandable_segments
            else "none of the batch-proportional bytes: the cache is emptied after each step"
            if w.empty_cache_each_step
            else "30% of batch-proportional bytes"
        )
        + "); device_bytes adds the card's CUDA context (what nvidia-smi shows)",
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
