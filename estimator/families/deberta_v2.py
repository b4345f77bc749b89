"""DeBERTa-v2/v3: the BERT encoder plus disentangled relative attention.

Relative attention adds a shared ``encoder.rel_embeddings`` table (2 x
position_buckets rows, or 2 x max_relative_positions) and, unless
``share_att_key``, per-layer ``pos_key_proj`` / ``pos_query_proj`` for the c2p /
p2c terms; absolute positions exist only when ``position_biased_input``.
"""

from __future__ import annotations

from estimator.architecture import Architecture
from estimator.blocks import attention
from estimator.blocks.embeddings import embedding
from estimator.blocks.layer import LayerParts
from estimator.config import MAX_POSITIONS, MAX_SMALL, MAX_WIDTH, Config
from estimator.families.common import assemble, stack_model
from estimator.families.encoder import (
    BERT_MLM,
    ENCODER_HEADS,
    EncoderShape,
    bert_layer,
    mlm_head,
    read_encoder,
)
from estimator.families.family import Family, Request
from estimator.families.heads import num_labels

DEBERTA_ATTENTION = attention.Projections(
    "attention.self.query_proj",
    "attention.self.key_proj",
    "attention.self.value_proj",
    "attention.output.dense",
)


def _pos_att_type(cfg: Config) -> tuple[str, ...]:
    raw = cfg.raw.get("pos_att_type")
    if isinstance(raw, str):
        return tuple(x.strip() for x in raw.lower().split("|"))
    return cfg.texts("pos_att_type") or ()


def _relative_rows(cfg: Config, shape: EncoderShape) -> int:
    buckets = cfg.size("position_buckets", -1, limit=MAX_POSITIONS, minimum=-1)
    if buckets > 0:
        return 2 * buckets
    max_rel = cfg.size("max_relative_positions", -1, limit=MAX_POSITIONS, minimum=-1)
    return 2 * (max_rel if max_rel >= 1 else shape.max_positions)


def _embeddings(cfg: Config, shape: EncoderShape, width: int) -> LayerParts:
    top = LayerParts()
    embedding(top, "embeddings.word_embeddings", shape.vocab_size, width)
    if cfg.flag("position_biased_input", True):
        embedding(
            top, "embeddings.position_embeddings", shape.max_positions, width, role="position"
        )
    if shape.type_vocab_size > 0:
        embedding(top, "embeddings.token_type_embeddings", shape.type_vocab_size, width)
    if width != shape.hidden_size:
        top.linear("embeddings.embed_proj", width, shape.hidden_size, False, "embedding")
    top.norm("embeddings.LayerNorm", shape.hidden_size, True)
    return top


def _encoder_extras(cfg: Config, shape: EncoderShape, relative: bool) -> LayerParts:
    """encoder.rel_embeddings, its LayerNorm and the optional convolution after layer 0."""
    h, tail = shape.hidden_size, LayerParts()
    if relative:
        tail.param("encoder.rel_embeddings.weight", (_relative_rows(cfg, shape), h), "position")
    # The LayerNorm follows norm_rel_ebd even when relative attention is off.
    norm_rel = cfg.text("norm_rel_ebd", "none").lower().split("|")
    if "layer_norm" in (x.strip() for x in norm_rel):
        tail.norm("encoder.LayerNorm", h, True)
    kernel = cfg.size("conv_kernel_size", 0, limit=MAX_SMALL, minimum=0)
    if kernel > 0:
        groups = cfg.size("conv_groups", 1, limit=h)
        cfg.divides("conv_groups", groups, "hidden_size", h)
        tail.param("encoder.conv.conv.weight", (h, h // groups, kernel), "other")
        tail.param("encoder.conv.conv.bias", (h,), "other")
        tail.norm("encoder.conv.LayerNorm", h, True)
    return tail


def _heads(cfg: Config, req: Request, shape: EncoderShape, width: int) -> LayerParts:
    h, root = shape.hidden_size, LayerParts()
    if req.head == "masked-lm":
        if cfg.flag("legacy", True):
            mlm_head(root, BERT_MLM, shape, width)
        else:
            root.linear("lm_predictions.lm_head.dense", h, h, True, "head")
            root.norm("lm_predictions.lm_head.LayerNorm", h, True)
            root.param("lm_predictions.lm_head.bias", (shape.vocab_size,), "head")
    elif req.head == "sequence-classification":
        pooled = cfg.size("pooler_hidden_size", h, limit=MAX_WIDTH)
        root.linear("pooler.dense", pooled, pooled, True, "head")
        root.linear("classifier", h, num_labels(cfg), True, "head")
    return root


def build(cfg: Config, req: Request) -> Architecture:
    """DeBERTa-v2/v3's tensors; absent keys take ``DebertaV2Config``'s defaults."""
    shape = read_encoder(
        cfg, vocab=128100, hidden=1536, layers=24, heads=24, intermediate=6144, type_vocab=0
    )
    h = shape.hidden_size
    width = cfg.size("embedding_size", h, limit=MAX_WIDTH)
    relative = cfg.flag("relative_attention", False)
    extra = LayerParts()
    if relative and not cfg.flag("share_att_key", False):
        kinds = _pos_att_type(cfg)
        if "c2p" in kinds:
            extra.linear("attention.self.pos_key_proj", h, h, True, "attention")
        if "p2c" in kinds:
            extra.linear("attention.self.pos_query_proj", h, h, True, "attention")
    layer = bert_layer(shape, DEBERTA_ATTENTION, extra)
    model = stack_model(
        prefix="" if req.head == "base" else "deberta.",
        top=_embeddings(cfg, shape, width),
        layers_prefix="encoder.layer.",
        layers=[layer] * shape.num_layers,
        tail=_encoder_extras(cfg, shape, relative),
        head=_heads(cfg, req, shape, width),
    )
    return assemble(
        cfg,
        model,
        req,
        family="deberta-v2",
        hidden_size=h,
        vocab_size=shape.vocab_size,
        max_position_embeddings=shape.max_positions,
        tie_word_embeddings=shape.tied,
        norm="layernorm",
        position="relative" if relative else "learned",
        hidden_dropout=shape.hidden_dropout,
    )


FAMILY = Family("deberta-v2", "DebertaV2", "DebertaV2Model", ENCODER_HEADS, build)
