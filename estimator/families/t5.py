"""T5 and mT5: encoder-decoder with RMS-style LayerNorms, no biases, and a relative
position bias table in the first block of each stack only. ``gated-*`` feed-forward
projections (T5 v1.1, mT5) split ``wi`` into ``wi_0``/``wi_1``. transformers 5 always
ties the LM head to ``shared`` (``tie_word_embeddings: false`` only stops the output
rescaling), so no separate ``lm_head`` is listed."""

from __future__ import annotations

from dataclasses import dataclass

from estimator.architecture import Architecture, AttentionSpec, FeedForwardSpec, HeadKind
from estimator.blocks import attention, mlp
from estimator.blocks.layer import LayerParts, LayerTemplate, ModelParts, sharing_specs, template
from estimator.config import MAX_HEADS, MAX_LAYERS, MAX_SMALL, MAX_VOCAB, MAX_WIDTH, Config
from estimator.families.common import assemble
from estimator.families.family import Family, Request

SEQ2SEQ_HEADS: frozenset[HeadKind] = frozenset({"base", "conditional-generation"})


@dataclass(frozen=True)
class T5Shape:
    """One T5 stack's sizes as read from config.json; ``gated`` for ``gated-*`` feed-forwards."""

    d_model: int
    d_kv: int
    d_ff: int
    heads: int
    buckets: int
    gated: bool
    activation: str
    dropout: float


def _projections(name: str) -> attention.Projections:
    return attention.Projections(f"{name}.q", f"{name}.k", f"{name}.v", f"{name}.o")


def _attention(parts: LayerParts, prefix: str, s: T5Shape, relative: bool) -> None:
    attention.separate_qkv(
        parts,
        _projections(prefix),
        s.d_model,
        s.heads,
        s.heads,
        s.d_kv,
        qkv_bias=False,
        out_bias=False,
    )
    if relative:
        parts.param(f"{prefix}.relative_attention_bias.weight", (s.buckets, s.heads), "position")


def _ffn(parts: LayerParts, prefix: str, s: T5Shape) -> FeedForwardSpec:
    if s.gated:
        names = mlp.GatedNames(f"{prefix}.wi_0", f"{prefix}.wi_1", f"{prefix}.wo")
        return mlp.gated(parts, names, s.d_model, s.d_ff, s.activation)
    return mlp.plain(
        parts,
        f"{prefix}.wi",
        f"{prefix}.wo",
        s.d_model,
        s.d_ff,
        s.activation,
        bias=False,
        dropout=s.dropout,
    )


def _block(s: T5Shape, decoder: bool, relative: bool) -> LayerTemplate:
    parts = LayerParts()
    _attention(parts, "layer.0.SelfAttention", s, relative)
    parts.norm("layer.0.layer_norm", s.d_model, False)
    cross: AttentionSpec | None = None
    ffn_index = 1
    if decoder:
        _attention(parts, "layer.1.EncDecAttention", s, False)
        parts.norm("layer.1.layer_norm", s.d_model, False)
        cross = attention.spec(s.heads, s.heads, s.d_kv, causal=False, dropout=s.dropout)
        ffn_index = 2
    ffn = _ffn(parts, f"layer.{ffn_index}.DenseReluDense", s)
    parts.norm(f"layer.{ffn_index}.layer_norm", s.d_model, False)
    spec = attention.spec(s.heads, s.heads, s.d_kv, causal=decoder, dropout=s.dropout)
    return template(
        parts,
        stack="decoder" if decoder else "encoder",
        attention=spec,
        cross_attention=cross,
        feed_forward=ffn,
    )


def _stack(s: T5Shape, count: int, decoder: bool) -> list[LayerTemplate]:
    if count == 0:
        return []
    rest = _block(s, decoder, False)
    return [sharing_specs(_block(s, decoder, True), rest)] + [rest] * (count - 1)


def _build(cfg: Config, req: Request, *, mt5: bool) -> Architecture:
    d_model = cfg.size("d_model", 512, limit=MAX_WIDTH, aliases=("hidden_size",))
    projection = cfg.text("feed_forward_proj", "gated-gelu" if mt5 else "relu")
    act = projection.split("-")
    if len(act) > 2 or (len(act) == 2 and act[0] != "gated"):
        raise cfg.error("feed_forward_proj", f"({projection!r}) must be ACT or gated-ACT")
    s = T5Shape(
        d_model=d_model,
        d_kv=cfg.size("d_kv", 64, limit=MAX_WIDTH, aliases=("head_dim",)),
        d_ff=cfg.size("d_ff", 1024 if mt5 else 2048, limit=MAX_WIDTH),
        heads=cfg.size(
            "num_heads", 6 if mt5 else 8, limit=MAX_HEADS, aliases=("num_attention_heads",)
        ),
        buckets=cfg.size("relative_attention_num_buckets", 32, limit=MAX_SMALL),
        # Explicit is_gated_act / dense_act_fn keys override what feed_forward_proj implies.
        gated=cfg.flag("is_gated_act", act[0] == "gated"),
        activation=cfg.text("dense_act_fn", "gelu_new" if projection == "gated-gelu" else act[-1]),
        dropout=cfg.number("dropout_rate", 0.1) or 0.0,
    )
    vocab = cfg.size("vocab_size", 250112 if mt5 else 32128, limit=MAX_VOCAB)
    enc_layers = cfg.size(
        "num_layers", 8 if mt5 else 6, limit=MAX_LAYERS, aliases=("num_hidden_layers",)
    )
    dec_layers = cfg.size("num_decoder_layers", enc_layers, limit=MAX_LAYERS)

    model = ModelParts()
    model.param("shared.weight", (vocab, d_model), "embedding")
    model.layers("encoder.block.", _stack(s, enc_layers, False))
    model.param("encoder.final_layer_norm.weight", (d_model,), "norm")
    model.layers("decoder.block.", _stack(s, dec_layers, True), first_index=enc_layers)
    model.param("decoder.final_layer_norm.weight", (d_model,), "norm")
    return assemble(
        cfg,
        model,
        req,
        family="t5",
        hidden_size=d_model,
        vocab_size=vocab,
        max_position_embeddings=None,
        tie_word_embeddings=True,
        norm="rmsnorm",
        position="relative",
        hidden_dropout=s.dropout,
    )


def build_t5(cfg: Config, req: Request) -> Architecture:
    """T5's tensors for ``req.architecture``; absent keys take ``T5Config``'s defaults."""
    return _build(cfg, req, mt5=False)


def build_mt5(cfg: Config, req: Request) -> Architecture:
    """mT5's tensors for ``req.architecture``; absent keys take ``MT5Config``'s defaults."""
    return _build(cfg, req, mt5=True)


T5 = Family("t5", "T5", "T5ForConditionalGeneration", SEQ2SEQ_HEADS, build_t5)
MT5 = Family("mt5", "MT5", "MT5ForConditionalGeneration", SEQ2SEQ_HEADS, build_mt5)
