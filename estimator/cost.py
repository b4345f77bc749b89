"""Training time and price, and serving decode speed, on one card.

Training FLOPs follow MosaicML's accounting: ``6·N`` per token plus
``12·L·h·s`` for attention scores (3 x forward), with ``N`` the active
parameters for MoE. An encoder-decoder runs each stack over its own tokens:
the encoder over ``seq_len``, the decoder, embeddings and head over
``target_len``, each decoder layer's cross-attention scores over both. LoRA skips the frozen weights' gradient GEMMs (~4·N);
QLoRA multiplies by a dequantisation factor (LitGPT measured 1.56x for
Llama-2-7B); gradient checkpointing adds one more forward. Time is the
larger of compute at the stated MFU and the memory traffic of the states.
Decode speed is the bandwidth roofline over the active weights plus the KV
cache read per token. Serving is priced per million generated tokens at that
speed, never as a fine-tune. A job that does not fit its card is not priced:
its ``usd`` is None and ``price_source`` says why.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from estimator.architecture import Architecture
from estimator.cards import Card
from estimator.memory import MethodModel
from estimator.parameters import active_parameters, idle_in_block
from estimator.workload import Workload

QLORA_DEQUANT_FACTOR: Final = 1.56
MEMORY_EFFICIENCY: Final = 0.9
INFERENCE_FLOP_EFFICIENCY: Final = 0.7
STATE_PASSES: Final = 3  # forward read, backward read, optimizer read-modify-write
SERVED_TOKENS: Final = 1_000_000  # serving is priced per million generated tokens


@dataclass(frozen=True)
class Cost:
    """Time and money for one method on one card: seconds, USD (None when unpriced), tokens/s."""

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


def is_seq2seq(arch: Architecture) -> bool:
    """An encoder-decoder: some layer attends across to the encoder's output."""
    return any(b.cross_attention is not None for b, _ in arch.block_groups)


def flops_per_sample(arch: Architecture, w: Workload, method: str, active: int) -> float:
    """Training FLOPs of one sample (``seq_len`` tokens; an encoder-decoder's decoder
    runs over ``target_len``)."""
    source = w.seq_len
    target = source
    encoder_layers = encoder = 0
    if is_seq2seq(arch):
        target = w.target_len or source
        for b, c in arch.block_groups:
            if b.stack == "encoder":
                encoder_layers += c
                encoder += (b.parameters - idle_in_block(b)) * c
    decoder_layers = arch.num_layers - encoder_layers
    # Score and context matmuls: per layer 12·h per query token and key token.
    scores = 12.0 * arch.hidden_size * (encoder_layers * source * source)
    scores += 12.0 * arch.hidden_size * decoder_layers * target * target
    if encoder_layers:
        scores += 12.0 * arch.hidden_size * decoder_layers * target * source  # cross-attention
    per_weight = 6.0 if method == "full" else 4.0
    if w.grad_checkpointing:
        per_weight += 2.0
        scores *= 4 / 3
    total = per_weight * (encoder * source + (active - encoder) * target) + scores
    return total * QLORA_DEQUANT_FACTOR if method == "qlora" else total


def _state_bytes(model: MethodModel) -> float:
    step = model.phases[-1]
    return sum(t.fixed for t in step.terms if t.key != "activations")


def estimate_cost(
    arch: Architecture,
    w: Workload,
    card: Card,
    model: MethodModel,
    serve_model: MethodModel,
    fits: bool = True,
) -> Cost:
    """The cost of ``model``'s method under ``w`` on ``card``; ``fits`` is the card table's
    verdict for it there. The method is the model's, not ``w.method``: a plan prices every
    method of one workload, and a Workload per method would validate every field again."""
    method = model.method
    active = active_parameters(arch)
    bandwidth = card.bandwidth_gbs * 1e9 * MEMORY_EFFICIENCY
    weight_bytes = next(t.fixed for t in serve_model.phases[0].terms if t.key == "weights")
    active_bytes = weight_bytes * active / max(arch.total_parameters, 1)
    kv_per_seq = next(t.per_sample for t in serve_model.phases[0].terms if t.key == "kv_cache")
    peak = card.dense_tflops * 1e12 * INFERENCE_FLOP_EFFICIENCY

    def decode(batch: int) -> float:
        t = max((active_bytes + batch * kv_per_seq) / bandwidth, 2.0 * active * batch / peak)
        return batch / t if t > 0 else 0.0

    decode_tps = decode(w.batch)
    if method == "serve":
        tokens = float(SERVED_TOKENS)
        steps = flops = 0.0
        compute_s = bandwidth_s = SERVED_TOKENS / decode_tps if decode_tps > 0 else 0.0
        assumptions: tuple[str, ...] = (
            f"serving {SERVED_TOKENS:,} generated tokens at batch {w.batch} on {card.name}, "
            f"decoding {decode_tps:,.0f} tokens/s",
            "decode: bandwidth roofline at 90% of peak over active weights + full-context KV read",
        )
    else:
        tokens = w.epochs * w.samples * w.seq_len
        steps = tokens / (w.tokens_per_step * w.gpus)
        flops = flops_per_sample(arch, w, method, active) * w.epochs * w.samples
        compute_s = flops / (w.gpus * card.dense_tflops * 1e12 * w.mfu)
        bandwidth_s = steps * STATE_PASSES * _state_bytes(model) / bandwidth
        assumptions = (
            f"training FLOPs 6N (LoRA 4N) + 12·L·h·s per token at MFU {w.mfu} on {card.name}"
            + (
                f"; the decoder over {w.target_len or w.seq_len} tokens" if is_seq2seq(arch) else ""
            ),
            f"{w.epochs:g} epochs x {w.samples} samples x {w.seq_len} tokens, batch {w.batch}",
            "decode: bandwidth roofline at 90% of peak over active weights + full-context KV read",
        )
    seconds = max(compute_s, bandwidth_s)
    price = card.price
    if not fits:
        usd = None
        source: str | None = f"not priced: does not fit {card.name} at batch {w.batch}"
    else:
        usd = None if price is None else seconds / 3600 * price.usd_per_hour * w.gpus
        source = (
            card.price_note if price is None else f"{price.provider}, {price.date} ({price.source})"
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
        bound="compute" if method != "serve" and compute_s >= bandwidth_s else "memory bandwidth",
        usd=usd,
        price_source=source,
        mfu=w.mfu,
        decode_tokens_per_s_batch1=decode(1),
        decode_tokens_per_s=decode_tps,
        active_parameters=active,
        assumptions=assumptions,
    )
