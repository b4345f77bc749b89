"""Training time and price, and serving decode speed, on one card.

Training FLOPs follow MosaicML's accounting: ``6·N`` per token plus
``12·L·h·s`` for attention scores (3 x forward), with ``N`` the active
parameters for MoE. LoRA skips the frozen weights' gradient GEMMs (~4·N);
QLoRA multiplies by a dequantisation factor (LitGPT measured 1.56x for
Llama-2-7B); gradient checkpointing adds one more forward. Time is the
larger of compute at the stated MFU and the memory traffic of the states.
Decode speed is the bandwidth roofline over the active weights plus the KV
cache read per token.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from estimator.architecture import Architecture
from estimator.cards import Card
from estimator.memory import MethodModel
from estimator.workload import Workload

QLORA_DEQUANT_FACTOR: Final = 1.56
MEMORY_EFFICIENCY: Final = 0.9
INFERENCE_FLOP_EFFICIENCY: Final = 0.7
STATE_PASSES: Final = 3  # forward read, backward read, optimizer read-modify-write


@dataclass(frozen=True)
class Cost:
    card: str
    method: str
    training_flops: float
    tokens: float
    steps: float
    compute_seconds: float
    bandwidth_seconds: float
    seconds: float
    bound: str
    usd: float | None
    price_source: str | None
    mfu: float
    decode_tokens_per_s_batch1: float
    decode_tokens_per_s: float
    active_parameters: int
    assumptions: tuple[str, ...]

    def to_json(self) -> dict[str, object]:
        out = dict(vars(self))
        out["assumptions"] = list(self.assumptions)
        return out


def active_parameters(arch: Architecture) -> int:
    """Parameters one token touches: routed experts count top_k of num_experts."""
    inactive = 0
    for block, count in arch.block_groups:
        moe = block.moe
        if moe is None:
            continue
        for lin in block.linears:
            if lin.copies == moe.num_experts and lin.copies > 1:
                share = lin.parameters * (moe.num_experts - moe.top_k) // moe.num_experts
                inactive += share * count
    return arch.total_parameters - inactive


def flops_per_token(arch: Architecture, w: Workload, method: str, active: int) -> float:
    attention = 12.0 * arch.num_layers * arch.hidden_size * w.seq_len
    weights = 6.0 * active if method == "full" else 4.0 * active
    if w.grad_checkpointing:
        weights += 2.0 * active
        attention *= 4 / 3
    total = weights + attention
    return total * QLORA_DEQUANT_FACTOR if method == "qlora" else total


def _state_bytes(model: MethodModel) -> float:
    step = model.phases[-1]
    return sum(t.fixed for t in step.terms if t.key != "activations")


def estimate_cost(
    arch: Architecture, w: Workload, card: Card, model: MethodModel, serve_model: MethodModel
) -> Cost:
    method = w.method if w.method != "serve" else "full"
    active = active_parameters(arch)
    tokens = w.epochs * w.samples * w.seq_len
    steps = tokens / (w.tokens_per_step * w.gpus)
    flops = flops_per_token(arch, w, method, active) * tokens
    compute_s = flops / (w.gpus * card.dense_tflops * 1e12 * w.mfu)
    bandwidth = card.bandwidth_gbs * 1e9 * MEMORY_EFFICIENCY
    bandwidth_s = steps * STATE_PASSES * _state_bytes(model) / bandwidth
    seconds = max(compute_s, bandwidth_s)
    price = card.price
    usd = None if price is None else seconds / 3600 * price.usd_per_hour * w.gpus
    weight_bytes = next(t.fixed for t in serve_model.phases[0].terms if t.key == "weights")
    active_bytes = weight_bytes * active / max(arch.total_parameters, 1)
    kv_per_seq = next(t.per_sample for t in serve_model.phases[0].terms if t.key == "kv_cache")
    peak = card.dense_tflops * 1e12 * INFERENCE_FLOP_EFFICIENCY

    def decode(batch: int) -> float:
        t = max((active_bytes + batch * kv_per_seq) / bandwidth, 2.0 * active * batch / peak)
        return batch / t if t > 0 else 0.0

    assumptions = (
        f"training FLOPs 6N (LoRA 4N) + 12·L·h·s per token at MFU {w.mfu} on {card.name}",
        f"{w.epochs:g} epochs x {w.samples} samples x {w.seq_len} tokens, batch {w.batch}",
        "decode: bandwidth roofline at 90% of peak over active weights + full-context KV read",
    )
    return Cost(
        card=card.name,
        method=method,
        training_flops=flops,
        tokens=tokens,
        steps=steps,
        compute_seconds=compute_s,
        bandwidth_seconds=bandwidth_s,
        seconds=seconds,
        bound="compute" if compute_s >= bandwidth_s else "memory bandwidth",
        usd=usd,
        price_source=(
            card.price_note if price is None else f"{price.provider}, {price.date} ({price.source})"
        ),
        mfu=w.mfu,
        decode_tokens_per_s_batch1=decode(1),
        decode_tokens_per_s=decode(w.batch),
        active_parameters=active,
        assumptions=assumptions,
    )
