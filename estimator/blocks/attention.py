"""Attention building blocks: separate or fused Q/K/V (MHA, GQA, MQA) and DeepSeek's MLA.

Each function adds the layer's projections to a ``LayerParts`` under the
names transformers uses and returns the ``AttentionSpec`` the memory and
KV-cache formulas read.
"""

from __future__ import annotations

from typing import NamedTuple

from estimator.architecture import AttentionKind, AttentionSpec
from estimator.blocks.layer import LayerParts


class Projections(NamedTuple):
    """Relative names of the query, key, value and output projections."""

    q: str
    k: str
    v: str
    o: str


LLAMA = Projections("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj")


def kind_of(num_heads: int, num_kv_heads: int) -> AttentionKind:
    """MHA when every query head has its own KV head, MQA with one shared, GQA in between."""
    if num_kv_heads == num_heads:
        return "mha"
    return "mqa" if num_kv_heads == 1 else "gqa"


def spec(
    num_heads: int,
    num_kv_heads: int,
    head_dim: int,
    *,
    causal: bool,
    sliding_window: int | None = None,
    dropout: float = 0.0,
) -> AttentionSpec:
    """The spec of standard attention whose K and V have ``head_dim`` per KV head."""
    return AttentionSpec(
        kind=kind_of(num_heads, num_kv_heads),
        num_heads=num_heads,
        num_kv_heads=num_kv_heads,
        head_dim=head_dim,
        v_head_dim=head_dim,
        causal=causal,
        sliding_window=sliding_window,
        kv_cache_elements_per_token=2 * num_kv_heads * head_dim,
        dropout=dropout,
    )


def separate_qkv(
    parts: LayerParts,
    names: Projections,
    hidden: int,
    num_heads: int,
    num_kv_heads: int,
    head_dim: int,
    *,
    qkv_bias: bool,
    out_bias: bool,
) -> None:
    """Four nn.Linear projections (Llama, BERT, OPT, T5 ...)."""
    q_out = num_heads * head_dim
    kv_out = num_kv_heads * head_dim
    parts.linear(names.q, hidden, q_out, qkv_bias, "attention")
    parts.linear(names.k, hidden, kv_out, qkv_bias, "attention")
    parts.linear(names.v, hidden, kv_out, qkv_bias, "attention")
    parts.linear(names.o, q_out, hidden, out_bias, "attention")


def fused_qkv(
    parts: LayerParts,
    qkv_name: str,
    out_name: str,
    hidden: int,
    num_heads: int,
    num_kv_heads: int,
    head_dim: int,
    *,
    qkv_bias: bool,
    out_bias: bool,
    conv1d: bool = False,
) -> None:
    """One packed Q/K/V projection plus the output projection (GPT-2, NeoX, Bloom, Falcon, Phi-3)."""
    qkv_out = (num_heads + 2 * num_kv_heads) * head_dim
    parts.linear(qkv_name, hidden, qkv_out, qkv_bias, "attention", conv1d=conv1d)
    parts.linear(out_name, num_heads * head_dim, hidden, out_bias, "attention", conv1d=conv1d)


class MlaShape(NamedTuple):
    """DeepSeek multi-head latent attention sizes."""

    num_heads: int
    q_lora_rank: int | None
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int


def mla(
    parts: LayerParts, prefix: str, hidden: int, shape: MlaShape, *, bias: bool
) -> AttentionSpec:
    """Low-rank Q (optional), compressed KV latent with a shared RoPE key, and the output."""
    qk_head_dim = shape.qk_nope_head_dim + shape.qk_rope_head_dim
    heads = shape.num_heads
    if shape.q_lora_rank is None:
        parts.linear(f"{prefix}q_proj", hidden, heads * qk_head_dim, False, "attention")
    else:
        parts.linear(f"{prefix}q_a_proj", hidden, shape.q_lora_rank, bias, "attention")
        parts.norm(f"{prefix}q_a_layernorm", shape.q_lora_rank, False)
        parts.linear(
            f"{prefix}q_b_proj", shape.q_lora_rank, heads * qk_head_dim, False, "attention"
        )
    latent = shape.kv_lora_rank + shape.qk_rope_head_dim
    parts.linear(f"{prefix}kv_a_proj_with_mqa", hidden, latent, bias, "attention")
    parts.norm(f"{prefix}kv_a_layernorm", shape.kv_lora_rank, False)
    kv_b_out = heads * (shape.qk_nope_head_dim + shape.v_head_dim)
    parts.linear(f"{prefix}kv_b_proj", shape.kv_lora_rank, kv_b_out, False, "attention")
    parts.linear(f"{prefix}o_proj", heads * shape.v_head_dim, hidden, bias, "attention")
    return AttentionSpec(
        kind="mla",
        num_heads=heads,
        num_kv_heads=heads,
        head_dim=qk_head_dim,
        v_head_dim=shape.v_head_dim,
        causal=True,
        sliding_window=None,
        kv_cache_elements_per_token=latent,
    )
