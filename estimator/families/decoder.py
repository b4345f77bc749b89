"""The decoder-only layout most modern families share (Llama and its descendants).

``model.embed_tokens`` -> layers of (norm, attention, norm, MLP or MoE) -> ``model.norm``
-> ``lm_head`` / ``score``. Families read their own defaults into a
``DecoderShape`` and supply how one layer looks; everything else is here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from estimator.architecture import (
    Architecture,
    AttentionSpec,
    FeedForwardSpec,
    HeadKind,
    MoeSpec,
    NormKind,
    PositionKind,
)
from estimator.blocks import attention, mlp
from estimator.blocks.embeddings import embedding, lm_head
from estimator.blocks.layer import LayerParts, LayerTemplate, ModelParts, template
from estimator.config import (
    MAX_HEADS,
    MAX_LAYERS,
    MAX_POSITIONS,
    MAX_VOCAB,
    MAX_WIDTH,
    Config,
)
from estimator.families.common import assemble
from estimator.families.family import Request
from estimator.families.heads import num_labels


@dataclass(frozen=True)
class Defaults:
    """The transformers configuration class defaults a family falls back on."""

    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int | None
    max_position_embeddings: int
    tie_word_embeddings: bool
    head_dim: int | None = None
    activation: str = "silu"
    activation_key: str = "hidden_act"


@dataclass(frozen=True)
class DecoderShape:
    """A decoder's sizes as read from config.json, defaults and divisibility already checked."""

    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    max_positions: int
    tied: bool
    activation: str


def read_shape(cfg: Config, d: Defaults) -> DecoderShape:
    """The sizes from ``cfg``, ``d`` for absent keys; ConfigError names a bad one."""
    hidden = cfg.size("hidden_size", d.hidden_size, limit=MAX_WIDTH)
    heads = cfg.size("num_attention_heads", d.num_attention_heads, limit=MAX_HEADS)
    head_dim = cfg.optional_size("head_dim", limit=MAX_WIDTH) or d.head_dim
    if head_dim is None:
        cfg.divides("num_attention_heads", heads, "hidden_size", hidden)
        head_dim = hidden // heads
    kv_heads = cfg.size("num_key_value_heads", d.num_key_value_heads or heads, limit=MAX_HEADS)
    cfg.divides("num_key_value_heads", kv_heads, "num_attention_heads", heads)
    return DecoderShape(
        vocab_size=cfg.size("vocab_size", d.vocab_size, limit=MAX_VOCAB),
        hidden_size=hidden,
        intermediate_size=cfg.size("intermediate_size", d.intermediate_size, limit=MAX_WIDTH),
        num_layers=cfg.size("num_hidden_layers", d.num_hidden_layers, limit=MAX_LAYERS),
        num_heads=heads,
        num_kv_heads=kv_heads,
        head_dim=head_dim,
        max_positions=cfg.size(
            "max_position_embeddings", d.max_position_embeddings, limit=MAX_POSITIONS
        ),
        tied=cfg.flag("tie_word_embeddings", d.tie_word_embeddings),
        activation=cfg.text(d.activation_key, d.activation),
    )


def layer_types(cfg: Config, shape: DecoderShape, window: int | None) -> tuple[int | None, ...]:
    """Per-layer sliding window from ``layer_types`` when the config lists them."""
    types = cfg.texts("layer_types", length=shape.num_layers)
    if types is None:
        return (window,) * shape.num_layers
    return tuple(window if t == "sliding_attention" else None for t in types)


def window_of(cfg: Config) -> int | None:
    """The config's ``sliding_window`` in tokens; None when unset (full attention)."""
    return cfg.optional_size("sliding_window", limit=MAX_POSITIONS)


def self_attention(
    parts: LayerParts,
    shape: DecoderShape,
    window: int | None,
    *,
    qkv_bias: bool = False,
    out_bias: bool = False,
    qk_norm: bool = False,
) -> AttentionSpec:
    """Llama's Q/K/V/O projections, optional biases and per-head Q/K RMSNorm, into ``parts``."""
    attention.separate_qkv(
        parts,
        attention.LLAMA,
        shape.hidden_size,
        shape.num_heads,
        shape.num_kv_heads,
        shape.head_dim,
        qkv_bias=qkv_bias,
        out_bias=out_bias,
    )
    if qk_norm:
        parts.norm("self_attn.q_norm", shape.head_dim, False)
        parts.norm("self_attn.k_norm", shape.head_dim, False)
    return attention.spec(
        shape.num_heads, shape.num_kv_heads, shape.head_dim, causal=True, sliding_window=window
    )


FeedForward = Callable[[LayerParts], tuple[FeedForwardSpec | None, MoeSpec | None]]


def llama_layer(
    shape: DecoderShape,
    attn: Callable[[LayerParts], AttentionSpec],
    ffn: FeedForward,
    *,
    sandwich: bool = False,
) -> LayerTemplate:
    """input_layernorm, attention, post_attention_layernorm, MLP (+ Gemma-2's extra norms)."""
    parts = LayerParts()
    spec = attn(parts)
    feed_forward, moe = ffn(parts)
    parts.norm("input_layernorm", shape.hidden_size, False)
    parts.norm("post_attention_layernorm", shape.hidden_size, False)
    if sandwich:
        parts.norm("pre_feedforward_layernorm", shape.hidden_size, False)
        parts.norm("post_feedforward_layernorm", shape.hidden_size, False)
    return template(parts, stack="decoder", attention=spec, feed_forward=feed_forward, moe=moe)


DECODER_HEADS: frozenset[HeadKind] = frozenset({"base", "causal-lm", "sequence-classification"})


def build_decoder(
    cfg: Config,
    req: Request,
    shape: DecoderShape,
    layers: list[LayerTemplate],
    *,
    family: str,
    norm: NormKind = "rmsnorm",
    position: PositionKind = "rope",
    final_norm: str = "norm",
    norm_bias: bool = False,
    head_bias: bool = False,
) -> Architecture:
    """Embeddings, ``layers``, final norm and the head ``req`` names, as an Architecture."""
    model = ModelParts()
    prefix = "" if req.head == "base" else "model."
    top = LayerParts()
    embedding(top, "embed_tokens", shape.vocab_size, shape.hidden_size)
    model.extend(prefix, top)
    model.layers(f"{prefix}layers.", layers)
    tail = LayerParts()
    tail.norm(final_norm, shape.hidden_size, norm_bias)
    model.extend(prefix, tail)
    out = LayerParts()
    if req.head == "causal-lm":
        lm_head(
            out, "lm_head", shape.hidden_size, shape.vocab_size, tied=shape.tied, bias=head_bias
        )
    elif req.head == "sequence-classification":
        out.param("score.weight", (num_labels(cfg), shape.hidden_size), "head")
    model.extend("", out)
    return assemble(
        cfg,
        model,
        req,
        family=family,
        hidden_size=shape.hidden_size,
        vocab_size=shape.vocab_size,
        max_position_embeddings=shape.max_positions,
        tie_word_embeddings=shape.tied,
        norm=norm,
        position=position,
    )


K = TypeVar("K")


def stamp(
    num_layers: int, key_of: Callable[[int], K], build: Callable[[K], LayerTemplate]
) -> list[LayerTemplate]:
    """One template per distinct layer key, reused for every layer that shares it."""
    cache: dict[K, LayerTemplate] = {}
    out: list[LayerTemplate] = []
    for i in range(num_layers):
        key = key_of(i)
        tpl = cache.get(key)
        if tpl is None:
            tpl = cache[key] = build(key)
        out.append(tpl)
    return out


def dense_mlp(shape: DecoderShape, *, bias: bool = False) -> FeedForward:
    """The gated MLP at the shape's intermediate size, as a ``FeedForward`` for ``llama_layer``."""

    def ffn(parts: LayerParts) -> tuple[FeedForwardSpec | None, MoeSpec | None]:
        return (
            mlp.gated(
                parts,
                mlp.LLAMA_MLP,
                shape.hidden_size,
                shape.intermediate_size,
                shape.activation,
                bias=bias,
            ),
            None,
        )

    return ffn
