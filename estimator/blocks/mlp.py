"""Dense feed-forward blocks: gated (SwiGLU / GeGLU) and plain (fc1, activation, fc2)."""

from __future__ import annotations

from typing import NamedTuple

from estimator.architecture import FeedForwardSpec, TensorRole
from estimator.blocks.layer import LayerParts


class GatedNames(NamedTuple):
    """Relative names of a gated MLP's three projections, which differ between families."""

    gate: str
    up: str
    down: str


LLAMA_MLP = GatedNames("mlp.gate_proj", "mlp.up_proj", "mlp.down_proj")


def gated(
    parts: LayerParts,
    names: GatedNames,
    hidden: int,
    intermediate: int,
    activation: str,
    *,
    bias: bool = False,
    role: TensorRole = "mlp",
) -> FeedForwardSpec:
    """Gate, up and down projections (SwiGLU / GeGLU): three linears where a plain MLP has two."""
    parts.linear(names.gate, hidden, intermediate, bias, role)
    parts.linear(names.up, hidden, intermediate, bias, role)
    parts.linear(names.down, intermediate, hidden, bias, role)
    return FeedForwardSpec("gated", intermediate, activation)


def fused_gated(
    parts: LayerParts,
    gate_up: str,
    down: str,
    hidden: int,
    intermediate: int,
    activation: str,
    *,
    bias: bool = False,
) -> FeedForwardSpec:
    """Gate and up packed in one projection of width ``2 * intermediate`` (Phi-3)."""
    parts.linear(gate_up, hidden, 2 * intermediate, bias, "mlp")
    parts.linear(down, intermediate, hidden, bias, "mlp")
    return FeedForwardSpec("gated", intermediate, activation)


def plain(
    parts: LayerParts,
    up: str,
    down: str,
    hidden: int,
    intermediate: int,
    activation: str,
    *,
    bias: bool,
    conv1d: bool = False,
    dropout: float = 0.0,
) -> FeedForwardSpec:
    """Up and down projections around one activation; ``conv1d`` lays weights out as GPT-2 does."""
    parts.linear(up, hidden, intermediate, bias, "mlp", conv1d=conv1d)
    parts.linear(down, intermediate, hidden, bias, "mlp", conv1d=conv1d)
    return FeedForwardSpec("plain", intermediate, activation, dropout)
