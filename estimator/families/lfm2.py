"""LFM2 (Liquid): a hybrid decoder whose layers are either gated short convolutions
(depthwise Conv1d between ``in_proj`` and ``out_proj``) or GQA attention with per-head
RMSNorm on Q and K; every layer has a SwiGLU ``feed_forward`` (w1, w3, w2) whose width
is auto-adjusted from ``intermediate_size`` as Llama's ``2/3 * 4h`` rounding does.

From transformers 5.24.0 models/lfm2/modeling_lfm2.py (Lfm2MLP, Lfm2ShortConv,
Lfm2Attention, the final norm named ``embedding_norm``) and configuration_lfm2.py
(``full_attn_idxs`` -> layer_types, ``block_ff_dim`` / ``tie_embedding`` aliases).
A conv layer holds no per-token KV cache (its constant conv state is not counted).
"""

from __future__ import annotations

from estimator.architecture import Architecture, AttentionSpec, HeadKind
from estimator.blocks import attention, mlp
from estimator.blocks.layer import LayerParts, LayerTemplate, template
from estimator.config import MAX_LAYERS, MAX_SMALL, MAX_WIDTH, Config
from estimator.families.decoder import (
    DecoderShape,
    Defaults,
    build_decoder,
    read_shape,
    stamp,
)
from estimator.families.family import Family, Request

DEFAULTS = Defaults(
    vocab_size=65536,
    hidden_size=2560,
    intermediate_size=12288,
    num_hidden_layers=32,
    num_attention_heads=32,
    num_key_value_heads=8,
    max_position_embeddings=128_000,
    tie_word_embeddings=True,
)
HEADS: frozenset[HeadKind] = frozenset({"base", "causal-lm"})
LFM2_ATTENTION = attention.Projections(
    "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.out_proj"
)


def feed_forward_width(cfg: Config, intermediate: int) -> int:
    """Lfm2MLP: int(2/3 * I), times the multiplier, rounded up to ``block_multiple_of``."""
    if not cfg.flag("block_auto_adjust_ff_dim", True):
        return intermediate
    width = int(2 * intermediate / 3)
    multiplier = cfg.number("block_ffn_dim_multiplier", 1.0)
    if multiplier is None:
        return width
    width = int(multiplier * width)
    step = cfg.size("block_multiple_of", 256, limit=MAX_WIDTH)
    return step * ((width + step - 1) // step)


def _layer(shape: DecoderShape, width: int, conv: bool, kernel: int, bias: bool) -> LayerTemplate:
    h = shape.hidden_size
    parts = LayerParts()
    if conv:
        parts.param("conv.conv.weight", (h, 1, kernel), "other")
        if bias:
            parts.param("conv.conv.bias", (h,), "other")
        parts.linear("conv.in_proj", h, 3 * h, bias, "other")
        parts.linear("conv.out_proj", h, h, bias, "other")
        spec = AttentionSpec(
            kind=attention.kind_of(shape.num_heads, shape.num_kv_heads),
            num_heads=shape.num_heads,
            num_kv_heads=shape.num_kv_heads,
            head_dim=shape.head_dim,
            v_head_dim=shape.head_dim,
            causal=True,
            sliding_window=None,
            kv_cache_elements_per_token=0,
        )
    else:
        attention.separate_qkv(
            parts, LFM2_ATTENTION, h, shape.num_heads, shape.num_kv_heads, shape.head_dim,
            qkv_bias=False, out_bias=False,
        )  # fmt: skip
        parts.norm("self_attn.q_layernorm", shape.head_dim, False)
        parts.norm("self_attn.k_layernorm", shape.head_dim, False)
        spec = attention.spec(shape.num_heads, shape.num_kv_heads, shape.head_dim, causal=True)
    ffn = mlp.gated(
        parts,
        mlp.GatedNames("feed_forward.w1", "feed_forward.w3", "feed_forward.w2"),
        h,
        width,
        "silu",
    )
    parts.norm("operator_norm", h, False)
    parts.norm("ffn_norm", h, False)
    return template(parts, stack="decoder", attention=spec, feed_forward=ffn)


def build(cfg: Config, req: Request) -> Architecture:
    """LFM2's tensors; aliases (``block_ff_dim``, ``full_attn_idxs``) read as transformers does."""
    aliased = dict(cfg.raw)
    for alias, key in (
        ("block_ff_dim", "intermediate_size"),
        ("tie_embedding", "tie_word_embeddings"),
    ):
        if alias in aliased:
            aliased[key] = aliased[alias]
    cfg = Config(aliased, source=cfg.source)
    shape = read_shape(cfg, DEFAULTS)
    types = cfg.texts("layer_types", length=shape.num_layers)
    if types is None:
        attn = cfg.ints("full_attn_idxs", limit=MAX_LAYERS)
        full = set(range(shape.num_layers)) if attn is None else set(attn)
        types = tuple("full_attention" if i in full else "conv" for i in range(shape.num_layers))
    width = feed_forward_width(cfg, shape.intermediate_size)
    kernel = cfg.size("conv_L_cache", 3, limit=MAX_SMALL)
    bias = cfg.flag("conv_bias", False)
    layers = stamp(
        shape.num_layers,
        lambda i: types[i] == "conv",
        lambda conv: _layer(shape, width, conv, kernel, bias),
    )
    return build_decoder(cfg, req, shape, layers, family="lfm2", final_norm="embedding_norm")


FAMILY = Family("lfm2", "Lfm2", "Lfm2ForCausalLM", HEADS, build)
