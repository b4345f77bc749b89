"""Serving memory: weights in the serving dtype, KV cache, prefill working set.

The KV cache is counted layer by layer from each attention's own width
(GQA/MQA heads, MLA's compressed latent) and capped at the sliding window
where a layer has one; encoders keep no cache at all. The prefill peaks at
one of two moments: inside the widest layer (its transient tensors for the
whole prompt; nothing is kept for backward), or at the head, where the
logits exist in 16 bit and as their fp32 copy: of the last position only
(transformers' ``generate`` since ``logits_to_keep``, PR #31292, v4.45), or
of every prompt position (``prompt_logits``: older ``generate`` and loops that
call the model directly).

``awq_fused`` is AutoAWQ's fused-module runtime (``from_quantized(...,
fuse_layers=True)``, v0.1.6; transformers' ``AwqConfig(do_fuse=True)`` uses
the same modules):

* each layer preallocates its KV cache for ``max_seq_len`` tokens (here
  ``seq_len``: the benchmark passes ``max_new_tokens``) and a complex64 RoPE
  table ``(2 * max_seq_len, head_dim / 2)`` of its own
  (``awq/modules/fused/attn.py``);
* the fuser concatenates every layer's q/k/v into a new ``qkv_proj`` while
  the unfused projections are still referenced (``fused_utils.fuse_qkv``;
  freed when ``fuse_layers`` returns): a load-time peak of the weights plus
  all q/k/v once more, beside the caches;
* prompt attention is eager in 16 bit with K/V repeated to every query head,
  then ``softmax(scores.float())``: the masked scores, their fp32 copy and
  the fp32 softmax (10 B per score) are alive at once.
"""

from __future__ import annotations

from typing import Final

from estimator.architecture import VOCAB_HEADS, Architecture
from estimator.memory.phases import MethodModel, Phase, Term
from estimator.memory.quantized import (
    DEQUANT_FROM_TOKENS,
    FORMATS,
    GROUP_SIZE,
    WeightFormat,
    linear_bytes,
    quantised_weights,
)
from estimator.memory.states import ParameterSplit
from estimator.workload import Workload

RESERVE_STATIC: Final = 0.01
RESERVE_DYNAMIC: Final = 0.10
CUBLAS_WORKSPACE: Final = 32 * 2**20
# AutoAWQ fused attention at the softmax: 16-bit masked scores, their fp32 copy, the fp32 softmax.
AWQ_FUSED_SCORE_BYTES: Final = 2 + 4 + 4
# awq_ext's GEMM splits the reduction over 8 slices, each written out in 16 bit, then summed.
AWQ_SPLIT_K: Final = 8
# Its RoPE table per layer: complex64 (8 B) of shape (2 * max_seq_len, head_dim / 2).
AWQ_ROPE_BYTES_PER_POSITION_AND_DIM: Final = 8
# The projections AutoAWQ's fuser concatenates into qkv_proj (llama-like layers).
SEPARATE_QKV: Final = ("q_proj", "k_proj", "v_proj")


def kv_cache_bytes_per_sequence(
    arch: Architecture, context: int, kv_bytes: int, *, windowed: bool = True
) -> int:
    """KV cache of one sequence of ``context`` tokens, summed over decoder layers.

    ``windowed=False``: a runtime that allocates every layer's cache for the
    whole context whatever its sliding window (AutoAWQ's fused cache).
    """
    total = 0
    for block, count in arch.block_groups:
        if block.stack != "decoder":
            continue
        att = block.attention
        window = att.sliding_window if windowed else None
        tokens = min(context, window) if window else context
        total += att.kv_cache_elements_per_token * tokens * count
        if block.cross_attention is not None:
            total += block.cross_attention.kv_cache_elements_per_token * context * count
    return total * kv_bytes


def _layer_per_sequence(arch: Architecture, w: Workload, compute: int) -> float:
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
    return worst


def _awq_fused_layer_per_sequence(arch: Architecture, s: int, compute: int) -> float:
    """AutoAWQ's fused layer: the larger of its softmax moment and its MLP's split-k GEMM.

    At the softmax: the residual and its norm, the fused q/k/v output, the
    rotated query, K and V repeated to every head, the attention output and
    the key-store copy beside the scores. In the MLP: ``gemm_forward_cuda``
    with split-k 8 writes an ``(8, tokens, out)`` fp16 buffer and sums it
    (``awq_ext``), for ``up_proj`` while ``gate_proj``'s output is held.
    """
    h = arch.hidden_size
    worst = 0.0
    for block, _ in arch.block_groups:
        att = block.attention
        heads, kv_heads, d = att.num_heads, att.num_kv_heads, att.head_dim
        qkv = heads * d + kv_heads * (d + att.v_head_dim)
        attention = compute * (2 * h + qkv + 4 * heads * d + 2 * kv_heads * d)
        attention += AWQ_FUSED_SCORE_BYTES * heads * s
        worst = max(worst, attention * s)
        if block.feed_forward is not None:
            intermediate = block.feed_forward.intermediate_size
            mlp = compute * 2 * h + (AWQ_SPLIT_K * compute + 2 * compute) * intermediate
            worst = max(worst, mlp * s)
    return worst


def _logits_per_sequence(arch: Architecture, w: Workload, compute: int) -> float:
    """The head's output beside the final hidden states: 16-bit logits and their fp32 copy."""
    if arch.head not in VOCAB_HEADS:
        return 0.0
    if arch.head == "masked-lm" or w.prompt_logits:
        tokens = w.seq_len
    else:
        tokens = 1 if arch.has_kv_cache else 0
    return (compute + 4) * arch.vocab_size * tokens + compute * arch.hidden_size * w.seq_len


def _rope_tables(arch: Architecture, w: Workload) -> float:
    """The fused runtime's RoPE tables: one per layer, not one per model."""
    if arch.position != "rope":
        return 0.0
    per_position = sum(block.attention.head_dim * count for block, count in arch.block_groups)
    return AWQ_ROPE_BYTES_PER_POSITION_AND_DIM * w.seq_len * per_position


def _separate_qkv_bytes(arch: Architecture, fmt: WeightFormat, group_size: int) -> float:
    """Stored bytes of every layer's q/k/v projections: what the fuser holds twice while loading."""
    total = 0.0
    for block, count in arch.block_groups:
        parts = [lin for lin in block.linears if lin.name.rpartition(".")[2] in SEPARATE_QKV]
        if len(parts) == len(SEPARATE_QKV):
            total += count * sum(
                linear_bytes(fmt, lin.in_features, lin.out_features, False, group_size)
                for lin in parts
            )
    return total


def _group_size(w: Workload) -> int:
    """Inputs per scale: the workload's (plan() fills in the checkpoint's), else 128."""
    return GROUP_SIZE if w.quant_group_size is None else w.quant_group_size


def serving_model(arch: Architecture, split: ParameterSplit, w: Workload) -> MethodModel:
    """Serving memory: weights per ``w.serve_weights`` over ``w.gpus``, KV cache, prefill."""
    compute = 2 if w.precision != "fp32" else 4
    fmt = FORMATS.get(w.serve_weights) if w.precision != "fp32" else None
    group = _group_size(w)
    scratch: float = 0.0
    scratch_per_token: float = 0.0
    if fmt is None:
        weights = split.total * compute / w.gpus
    else:
        q = quantised_weights(
            arch,
            fmt,
            w.double_quant,
            w.seq_len,
            compute,
            group,
            w.serve_unquantized,
        )
        weights = (q.quantised_bytes + q.unquantised_parameters * compute) / w.gpus
        scratch = q.scratch_fixed / w.gpus
        scratch_per_token = q.scratch_per_token / w.gpus
    fused = fmt if w.awq_fused else None
    if fused is not None:
        scratch = scratch_per_token = 0.0  # its kernels' scratch is in the layer's moments
    cached = kv_cache_bytes_per_sequence(arch, w.seq_len, w.kv_cache_bytes, windowed=fused is None)
    kv = cached / w.gpus
    rope = _rope_tables(arch, w) / w.gpus if fused is not None else 0.0
    # The fused model's 16-bit causal mask of the prompt, one for the whole batch.
    buffers = rope + (2 * w.seq_len * w.seq_len / w.gpus if fused is not None else 0.0)
    layer = (
        _awq_fused_layer_per_sequence(arch, w.seq_len, compute)
        if fused is not None
        else _layer_per_sequence(arch, w, compute)
    )
    layer = layer / w.gpus + scratch_per_token * w.seq_len
    logits = _logits_per_sequence(arch, w, compute) / w.gpus
    resident = (Term("weights", weights), Term("kv_cache", 0.0, kv))
    phases = [
        Phase(
            "prefill: widest layer",
            (
                *resident,
                Term("activations", 0.0, layer),
                Term("quantization_overhead", scratch),
                Term("framework_overhead", CUBLAS_WORKSPACE + buffers),
            ),
        ),
        Phase(
            "prefill: logits",
            (
                *resident,
                Term("activations", 0.0, logits),
                Term("framework_overhead", CUBLAS_WORKSPACE + buffers),
            ),
        ),
    ]
    if fused is not None:
        phases.append(
            Phase(
                "load: fused qkv_proj beside q/k/v",
                (
                    *resident,
                    Term(
                        "quantization_overhead",
                        _separate_qkv_bytes(arch, fused, group) / w.gpus,
                    ),
                    Term("framework_overhead", rope),
                ),
            )
        )
    assumptions = [
        f"serving: block linears in {w.serve_weights}"
        + (
            f" (group size {fmt.fixed_group or group or 'per channel'}: scales per group"
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
    if fmt is not None and w.serve_unquantized:
        kept = ", ".join(w.serve_unquantized)
        assumptions.append(f"the checkpoint keeps {kept} in 16 bit (modules_to_not_convert)")
    if not arch.has_kv_cache:
        assumptions.append("encoder: no KV cache; memory is weights plus one layer's transient")
    if w.gpus > 1:
        assumptions.append(f"tensor parallel over {w.gpus} GPUs: weights and KV cache split evenly")
    if fused is not None:
        assumptions.append(
            "AutoAWQ fused modules: per-layer KV cache and RoPE table for "
            f"{w.seq_len} tokens; q/k/v held twice while the fuser builds qkv_proj; "
            "eager prompt attention with an fp32 softmax"
        )
    if w.prompt_logits:
        assumptions.append(
            "the prefill returns logits for every prompt position, with an fp32 copy"
        )
    return MethodModel(
        method="serve",
        phases=tuple(phases),
        numerics=f"{w.serve_weights} weights",
        num_layers=arch.num_layers,
        layer_fraction=split.layer_fraction,
        notes=(f"serve: {w.serve_weights} weights, batch {w.batch} x {w.seq_len} tokens",),
        assumptions=tuple(assumptions),
        reserve_static=RESERVE_STATIC,
        reserve_dynamic=RESERVE_DYNAMIC,
    )
