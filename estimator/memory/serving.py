"""Serving memory: weights in the serving dtype, KV cache, prefill working set.

The KV cache is counted layer by layer from each attention's own width
(GQA/MQA heads, MLA's compressed latent) and capped at the sliding window
where a layer has one; encoders keep no cache at all. The prefill working
set is one layer's transient tensors for the whole prompt (nothing is kept
for backward), plus the logits of the last position in fp32.
"""

from __future__ import annotations

from typing import Final

from estimator.architecture import Architecture
from estimator.memory.phases import MethodModel, Phase, Term
from estimator.memory.quantized import (
    DEQUANT_FROM_TOKENS,
    FORMATS,
    GROUP_SIZE,
    quantised_weights,
)
from estimator.memory.states import ParameterSplit
from estimator.workload import Workload

RESERVE_STATIC: Final = 0.01
RESERVE_DYNAMIC: Final = 0.10
CUBLAS_WORKSPACE: Final = 32 * 2**20


def kv_cache_bytes_per_sequence(arch: Architecture, context: int, kv_bytes: int) -> int:
    """KV cache of one sequence of ``context`` tokens, summed over decoder layers."""
    total = 0
    for block, count in arch.block_groups:
        if block.stack != "decoder":
            continue
        att = block.attention
        window = att.sliding_window
        tokens = min(context, window) if window else context
        total += att.kv_cache_elements_per_token * tokens * count
        if block.cross_attention is not None:
            total += block.cross_attention.kv_cache_elements_per_token * context * count
    return total * kv_bytes


def _prefill_per_sequence(arch: Architecture, w: Workload, compute: int) -> float:
    """Largest one-layer transient for a prompt of ``seq_len`` tokens (no autograd)."""
    s = w.seq_len
    h = arch.hidden_size
    worst = 0.0
    seen: set[int] = set()
    for block, _ in arch.block_groups:
        if id(block.linears) in seen:
            continue
        seen.add(id(block.linears))
        att = block.attention
        qkv = att.num_heads * att.head_dim + att.num_kv_heads * (att.head_dim + att.v_head_dim)
        per_token = compute * (4 * h + qkv)
        if w.attention == "eager" or arch.position == "relative":
            per_token += (4 + compute) * att.num_heads * s
        if block.feed_forward is not None:
            per_token += compute * 3 * block.feed_forward.intermediate_size
        if block.moe is not None:
            per_token += compute * 3 * block.moe.expert.intermediate_size * block.moe.top_k
        worst = max(worst, per_token * s)
    logits_tokens = s if arch.head == "masked-lm" else (1 if arch.has_kv_cache else 0)
    if arch.head in ("causal-lm", "masked-lm", "conditional-generation", "pretraining"):
        worst += (compute + 4) * arch.vocab_size * logits_tokens
    return worst


def serving_model(arch: Architecture, split: ParameterSplit, w: Workload) -> MethodModel:
    compute = 2 if w.precision != "fp32" else 4
    fmt = FORMATS.get(w.serve_weights) if w.precision != "fp32" else None
    scratch = 0.0
    scratch_per_token = 0.0
    if fmt is None:
        weights = split.total * compute / w.gpus
    else:
        q = quantised_weights(arch, fmt, w.double_quant, w.seq_len, compute)
        weights = (q.quantised_bytes + q.unquantised_parameters * compute) / w.gpus
        scratch = q.scratch_fixed / w.gpus
        scratch_per_token = q.scratch_per_token / w.gpus
    kv = kv_cache_bytes_per_sequence(arch, w.seq_len, w.kv_cache_bytes) / w.gpus
    prefill = _prefill_per_sequence(arch, w, compute) / w.gpus + scratch_per_token * w.seq_len
    phase = Phase(
        "prefill",
        (
            Term("weights", weights),
            Term("kv_cache", 0.0, kv),
            Term("activations", 0.0, prefill),
            Term("quantization_overhead", scratch),
            Term("framework_overhead", CUBLAS_WORKSPACE),
        ),
    )
    assumptions = [
        f"serving: block linears in {w.serve_weights}"
        + (
            f" (group size {GROUP_SIZE}: scales and zeros per group"
            if fmt is not None and fmt.group_bytes
            else ""
        )
        + (")" if fmt is not None and fmt.group_bytes else "")
        + "; embeddings, LM head, norms, biases and MoE routers 16-bit; "
        f"KV cache {w.kv_cache_bytes} B per element for {w.seq_len} tokens per sequence",
    ]
    if scratch:
        assumptions.append(
            f"{w.serve_weights}: prompts of {DEQUANT_FROM_TOKENS}+ tokens dequantise the largest "
            "fused linear to 16 bit before the matmul"
        )
    if not arch.has_kv_cache:
        assumptions.append("encoder: no KV cache; memory is weights plus one layer's transient")
    if w.gpus > 1:
        assumptions.append(f"tensor parallel over {w.gpus} GPUs: weights and KV cache split evenly")
    return MethodModel(
        method="serve",
        phases=(phase,),
        numerics=f"{w.serve_weights} weights",
        num_layers=arch.num_layers,
        layer_fraction=split.layer_fraction,
        notes=(f"serve: {w.serve_weights} weights, batch {w.batch} x {w.seq_len} tokens",),
        assumptions=tuple(assumptions),
        reserve_static=RESERVE_STATIC,
        reserve_dynamic=RESERVE_DYNAMIC,
    )
