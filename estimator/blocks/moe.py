"""Mixture-of-experts blocks: a router plus routed experts stored as 3-D tensors.

transformers 5 keeps all routed experts of a layer in two parameters with a
leading expert dimension (``experts.gate_up_proj``, ``experts.down_proj``),
so one Tensor per projection describes all experts compactly.
"""

from __future__ import annotations

from estimator.architecture import FeedForwardSpec, Linear
from estimator.blocks.layer import LayerParts


def router(parts: LayerParts, name: str, hidden: int, num_experts: int, *, bias: bool) -> None:
    """The gate scoring each token against ``num_experts``; its role keeps it apart from experts."""
    parts.linear(name, hidden, num_experts, bias, "router")


def fused_experts(
    parts: LayerParts,
    prefix: str,
    hidden: int,
    intermediate: int,
    num_experts: int,
    activation: str,
    *,
    transposed: bool = False,
    bias: bool = False,
) -> FeedForwardSpec:
    """Gated experts: ``gate_up_proj`` (E, 2I, H) and ``down_proj`` (E, H, I).

    ``transposed`` is GPT-OSS's layout, (E, H, 2I) and (E, I, H), with biases.
    """
    gate_up = (
        (num_experts, hidden, 2 * intermediate)
        if transposed
        else (num_experts, 2 * intermediate, hidden)
    )
    down = (
        (num_experts, intermediate, hidden) if transposed else (num_experts, hidden, intermediate)
    )
    parts.param(f"{prefix}gate_up_proj", gate_up, "expert")
    if bias:
        parts.param(f"{prefix}gate_up_proj_bias", (num_experts, 2 * intermediate), "expert")
    parts.param(f"{prefix}down_proj", down, "expert")
    if bias:
        parts.param(f"{prefix}down_proj_bias", (num_experts, hidden), "expert")
    parts.linears.append(
        Linear(f"{prefix}gate_up_proj", hidden, 2 * intermediate, bias, num_experts)
    )
    parts.linears.append(Linear(f"{prefix}down_proj", intermediate, hidden, bias, num_experts))
    return FeedForwardSpec("gated", intermediate, activation)
