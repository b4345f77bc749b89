"""Model states: optimizer bytes per tensor, LoRA adapter sizes, 4-bit storage.

Optimizer state is computed tensor by tensor because the optimizers differ
in shape, not just in a per-parameter constant: Adafactor factors every
matrix into a row and a column vector; bitsandbytes' 8-bit Adam keeps
tensors under 4096 elements in 32-bit.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from estimator.architecture import VOCAB_HEADS, Architecture
from estimator.architecture import shape_numel as numel
from estimator.memory.quantized import FORMATS, GROUP_SIZE

BNB_MIN_8BIT_SIZE: Final = 4096
BNB_BLOCK: Final = 256
NF4_BLOCK: Final = 64
NF4_DOUBLE_QUANT_BLOCK: Final = 256


def optimizer_bytes(name: str, shape: tuple[int, ...], numel: int, state_bytes: int) -> float:
    """Persistent optimizer state of one tensor."""
    if name == "adamw":
        return 2.0 * state_bytes * numel
    if name == "adamw8bit":
        if numel < BNB_MIN_8BIT_SIZE:
            return 8.0 * numel
        return 2.0 * numel * (1 + 4 / BNB_BLOCK)
    if name == "sgd":
        return 0.0
    # Adafactor (transformers, beta1=None): fp32 row and column second moments.
    if len(shape) >= 2:
        lead = numel // (shape[-1] * shape[-2])
        return 4.0 * lead * (shape[-1] + shape[-2])
    return 4.0 * numel


def step_temporary_bytes(
    name: str, impl: str, largest_numel: int, total_numel: int, state_bytes: int
) -> float:
    """Transient bytes inside ``optimizer.step()``.

    torch's foreach AdamW (the default implementation of ``torch.optim.AdamW``
    on CUDA) materialises ``sqrt(v)`` for the whole parameter group at once:
    one more copy of the state's width. bitsandbytes updates in place;
    Adafactor's per-parameter loop materialises an fp32 gradient copy, the
    squared update and the factored estimate of the largest tensor.
    """
    if name == "adamw":
        return float(state_bytes * total_numel) if impl == "foreach" else 0.0
    return 12.0 * largest_numel if name == "adafactor" else 0.0


def total_optimizer_bytes(
    shape_counts: Mapping[tuple[int, ...], int], name: str, state_bytes: int
) -> float:
    """Optimizer state of all tensors, computed once per distinct shape."""
    return sum(
        n * optimizer_bytes(name, shape, numel(shape), state_bytes)
        for shape, n in shape_counts.items()
    )


@dataclass(frozen=True)
class ParameterSplit:
    """Parameter counts the memory formulas need, computed once per plan."""

    total: int
    in_blocks: int
    block_linears: int
    largest_tensor: int
    largest_linear: int
    vocab_matmul: int

    @property
    def layer_fraction(self) -> float:
        """Share of parameters in the blocks, which a layer split spreads; 0.0 for none."""
        return self.in_blocks / self.total if self.total else 0.0


def split_parameters(arch: Architecture) -> ParameterSplit:
    """The counts every memory formula reads, walking each layer template once."""
    total = arch.total_parameters
    in_blocks = arch.in_block_parameters
    largest = max((numel(shape) for shape in arch.shape_counts), default=0)
    # Blocks stamped from one template share their linears tuple: walk each once.
    per_template: dict[int, tuple[int, int]] = {}
    linears = 0
    largest_linear = 0
    for block, count in arch.block_groups:
        key = id(block.linears)
        if key not in per_template:
            per_template[key] = (
                sum(lin.parameters for lin in block.linears),
                max((lin.in_features * lin.out_features for lin in block.linears), default=0),
            )
        params, widest = per_template[key]
        linears += params * count
        largest_linear = max(largest_linear, widest)
    vocab = arch.vocab_size * arch.hidden_size if _has_vocab_head(arch) else 0
    return ParameterSplit(total, in_blocks, linears, largest, largest_linear, vocab)


def _has_vocab_head(arch: Architecture) -> bool:
    return arch.head in VOCAB_HEADS


def lora_parameters(placed_linears: list[tuple[int, int, int]], rank: int) -> int:
    """r·(in + out) per adapted linear copy: ``(in, out, copies)`` triples."""
    return sum(rank * (i + o) * copies for i, o, copies in placed_linears)


def base_4bit_bytes(quantized: int, fmt: str, double_quant: bool) -> tuple[float, float]:
    """(packed 4-bit weights, quantisation constants) of QLoRA's frozen base.

    ``nf4``: bitsandbytes (``nf4_bytes``). ``gptq``: a GPTQ checkpoint's
    QuantLinear (AutoGPTQ, and fms-acceleration's copy of it): ``qweight``
    int32 [in/8, out], ``scales`` 16-bit and ``qzeros`` 4-bit per group of 128
    inputs and per output; ``g_idx`` (4 B per input row) is under 0.1% and left out.
    """
    if fmt == "gptq":
        return quantized / 2, quantized * FORMATS["gptq"].group_bytes / GROUP_SIZE
    return nf4_bytes(quantized, double_quant)


def nf4_bytes(quantized: int, double_quant: bool) -> tuple[float, float]:
    """(packed 4-bit weights, quantisation constants) for ``quantized`` parameters.

    NF4 stores two weights per byte plus one absmax per 64-weight block:
    fp32, or with double quantisation 8-bit plus an fp32 constant per 256 blocks.
    """
    packed = quantized / 2
    blocks = quantized / NF4_BLOCK
    absmax = blocks * (1 + 4 / NF4_DOUBLE_QUANT_BLOCK) if double_quant else blocks * 4
    return packed, absmax
