"""BART and mBART: encoder-decoder with learned positions offset by 2, a LayerNorm on the
embeddings, biased projections, and the LM head tied to ``shared``. mBART adds a final
LayerNorm to each stack."""

from __future__ import annotations

from collections.abc import Callable

from estimator.architecture import Architecture, AttentionSpec, HeadKind, Stack
from estimator.blocks import attention, mlp
from estimator.blocks.embeddings import embedding
from estimator.blocks.layer import LayerParts, LayerTemplate, ModelParts, template
from estimator.config import MAX_HEADS, MAX_LAYERS, MAX_POSITIONS, MAX_VOCAB, MAX_WIDTH, Config
from estimator.families.common import assemble
from estimator.families.family import Family, Request
from estimator.families.heads import num_labels
from estimator.families.t5 import SEQ2SEQ_HEADS

POSITION_OFFSET = 2


def _projections(name: str) -> attention.Projections:
    return attention.Projections(
        f"{name}.q_proj", f"{name}.k_proj", f"{name}.v_proj", f"{name}.out_proj"
    )


Attend = Callable[[LayerParts, str, int, int], None]
"""Adds one attention block's projections: (parts, name, d_model, heads)."""


def _attention(parts: LayerParts, name: str, d: int, heads: int) -> None:
    """BartAttention: q, k, v and out all carry a bias."""
    attention.separate_qkv(
        parts, _projections(name), d, heads, heads, d // heads, qkv_bias=True, out_bias=True
    )


def encoder_decoder_layer(
    cfg: Config,
    d: int,
    heads: int,
    ffn_dim: int,
    decoder: bool,
    *,
    attend: Attend = _attention,
    dropout: float = 0.1,
) -> LayerTemplate:
    """The BART layer's tensors (self-attention, cross-attention in the decoder, fc1/fc2, a
    LayerNorm beside each), also Marian's, and Whisper's with its own ``attend`` and
    ``dropout`` default: where the norms sit (post- or pre-norm) changes no tensor."""
    side: Stack = "decoder" if decoder else "encoder"
    cfg.divides(f"{side}_attention_heads", heads, "d_model", d)
    parts = LayerParts()
    attend(parts, "self_attn", d, heads)
    parts.norm("self_attn_layer_norm", d, True)
    cross: AttentionSpec | None = None
    if decoder:
        attend(parts, "encoder_attn", d, heads)
        parts.norm("encoder_attn_layer_norm", d, True)
        cross = attention.spec(heads, heads, d // heads, causal=False)
    ffn = mlp.plain(
        parts,
        "fc1",
        "fc2",
        d,
        ffn_dim,
        cfg.text("activation_function", "gelu"),
        bias=True,
        dropout=cfg.number("dropout", dropout) or 0.0,
    )
    parts.norm("final_layer_norm", d, True)
    spec = attention.spec(
        heads,
        heads,
        d // heads,
        causal=decoder,
        dropout=cfg.number("attention_dropout", 0.0) or 0.0,
    )
    return template(parts, stack=side, attention=spec, cross_attention=cross, feed_forward=ffn)


def encoder_decoder_stacks(
    cfg: Config,
    d: int,
    defaults: tuple[int, int, int],
    *,
    attend: Attend = _attention,
    dropout: float = 0.1,
) -> list[tuple[Stack, int, LayerTemplate]]:
    """(side, layer count, layer) of the encoder then the decoder, read from ``{side}_layers``,
    ``{side}_attention_heads`` and ``{side}_ffn_dim`` with ``defaults`` in that order."""
    layers, heads, ffn_dim = defaults
    stacks: list[tuple[Stack, int, LayerTemplate]] = []
    for side, decoder in (("encoder", False), ("decoder", True)):
        count = cfg.size(f"{side}_layers", layers, limit=MAX_LAYERS)
        side_heads = cfg.size(f"{side}_attention_heads", heads, limit=MAX_HEADS)
        side_ffn = cfg.size(f"{side}_ffn_dim", ffn_dim, limit=MAX_WIDTH)
        layer = encoder_decoder_layer(
            cfg, d, side_heads, side_ffn, decoder, attend=attend, dropout=dropout
        )
        stacks.append((layer.stack, count, layer))
    return stacks


def _build(cfg: Config, req: Request, *, mbart: bool) -> Architecture:
    d = cfg.size("d_model", 1024, limit=MAX_WIDTH, aliases=("hidden_size",))
    vocab = cfg.size("vocab_size", 250027 if mbart else 50265, limit=MAX_VOCAB)
    positions = cfg.size("max_position_embeddings", 1024, limit=MAX_POSITIONS)
    stacks = encoder_decoder_stacks(cfg, d, (12, 16, 4096))

    prefix = "" if req.head == "base" else "model."
    model = ModelParts()
    model.param(f"{prefix}shared.weight", (vocab, d), "embedding")
    first = 0
    for side, count, layer in stacks:
        top = LayerParts()
        embedding(top, "embed_positions", positions + POSITION_OFFSET, d, role="position")
        top.norm("layernorm_embedding", d, True)
        if mbart:
            top.norm("layer_norm", d, True)
        model.extend(f"{prefix}{side}.", top)
        model.layers(f"{prefix}{side}.layers.", [layer] * count, first_index=first)
        first += count
    if req.head == "sequence-classification":
        head = LayerParts()
        head.linear("classification_head.dense", d, d, True, "head")
        head.linear("classification_head.out_proj", d, num_labels(cfg), True, "head")
        model.extend("", head)
    return assemble(
        cfg,
        model,
        req,
        family="bart",
        hidden_size=d,
        vocab_size=vocab,
        max_position_embeddings=positions,
        tie_word_embeddings=True,
        norm="layernorm",
        position="learned",
        hidden_dropout=cfg.number("dropout", 0.1) or 0.0,
    )


def build_bart(cfg: Config, req: Request) -> Architecture:
    """BART's tensors for ``req.architecture``; absent keys take ``BartConfig``'s defaults."""
    return _build(cfg, req, mbart=False)


def build_mbart(cfg: Config, req: Request) -> Architecture:
    """mBART: BART plus a final LayerNorm per stack; absent keys take ``MBartConfig``'s defaults."""
    return _build(cfg, req, mbart=True)


HEADS: frozenset[HeadKind] = SEQ2SEQ_HEADS | {"sequence-classification"}
BART = Family("bart", "Bart", "BartForConditionalGeneration", HEADS, build_bart)
MBART = Family("mbart", "MBart", "MBartForConditionalGeneration", HEADS, build_mbart)
