"""Memory per method (full, lora, qlora, serve), broken down, at any batch and card.

``method_models`` builds one ``MethodModel`` per method from the
Architecture and the Workload (no card involved: byte widths do not
depend on it); ``evaluate`` turns one into a ``MemoryEstimate`` for a
batch on a card, adding the allocator reserve and the CUDA context.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from estimator.architecture import Architecture
from estimator.memory.layers import block_slots
from estimator.memory.overhead import context_bytes
from estimator.memory.phases import BREAKDOWN_KEYS, MethodModel
from estimator.memory.serving import kv_cache_bytes_per_sequence, serving_model
from estimator.memory.states import ParameterSplit, split_parameters
from estimator.memory.training import training_model
from estimator.workload import METHODS, Workload

__all__ = [
    "BREAKDOWN_KEYS",
    "MemoryEstimate",
    "MethodModel",
    "evaluate",
    "kv_cache_bytes_per_sequence",
    "method_models",
    "split_parameters",
]


@dataclass(frozen=True)
class MemoryEstimate:
    """One method at one batch on one card.

    ``breakdown`` sums to ``peak_allocated_bytes`` (the tensors alive at
    ``peak_phase``); ``reserved_bytes`` adds the caching allocator's reserve
    (``max_memory_reserved``); ``device_bytes`` adds the CUDA context (what
    nvidia-smi shows). ``assumptions`` are not in the Plan JSON (the plan's
    own list carries the selected method's), so they are not compared: a
    Plan read back with ``Plan.from_json`` equals the one that was written.
    """

    method: str
    batch: int
    peak_allocated_bytes: int
    reserved_bytes: int
    device_bytes: int
    context_bytes: int
    breakdown: tuple[tuple[str, int], ...]
    peak_phase: str
    numerics: str
    notes: tuple[str, ...]
    assumptions: tuple[str, ...] = field(default=(), compare=False)


def method_models(
    arch: Architecture, workload: Workload, has_bf16: bool, split: ParameterSplit | None = None
) -> dict[str, MethodModel]:
    """One MethodModel per method; ``has_bf16`` False estimates a bf16 workload in fp16."""
    split = split or split_parameters(arch)
    slots = block_slots(arch)
    models = {
        m: training_model(arch, split, workload, m, has_bf16, slots)
        for m in METHODS
        if m != "serve"
    }
    models["serve"] = serving_model(arch, split, workload)
    return models


def evaluate(model: MethodModel, batch: int, card_context: int, gpus: int) -> MemoryEstimate:
    """``model`` at ``batch``: peak tensors, allocator reserve, CUDA context (and NCCL's)."""
    phase = model.peak_phase(batch)
    breakdown = phase.breakdown(batch)
    allocated = sum(breakdown.values())
    reserved = max(model.reserved(batch), allocated)
    context = context_bytes(card_context, gpus)
    return MemoryEstimate(
        method=model.method,
        batch=batch,
        peak_allocated_bytes=allocated,
        reserved_bytes=reserved,
        device_bytes=reserved + context,
        context_bytes=context,
        breakdown=tuple(breakdown.items()),
        peak_phase=phase.name,
        numerics=model.numerics,
        notes=model.notes,
        assumptions=model.assumptions,
    )
