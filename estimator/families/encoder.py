"""The BERT encoder layer that BERT, RoBERTa, XLM-R and DeBERTa-v2 share, and the
masked-LM head transform they all put on top of it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from estimator.architecture import HeadKind
from estimator.blocks import attention, mlp
from estimator.blocks.layer import LayerParts, LayerTemplate, template
from estimator.config import (
    MAX_HEADS,
    MAX_LAYERS,
    MAX_POSITIONS,
    MAX_SMALL,
    MAX_VOCAB,
    MAX_WIDTH,
    Config,
)

BERT_ATTENTION = attention.Projections(
    "attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"
)
ENCODER_HEADS: frozenset[HeadKind] = frozenset({"base", "masked-lm", "sequence-classification"})


@dataclass(frozen=True)
class EncoderShape:
    """A BERT-style encoder's sizes and dropouts as read from config.json."""

    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    max_positions: int
    type_vocab_size: int
    tied: bool
    activation: str
    hidden_dropout: float
    attention_dropout: float


def read_encoder(
    cfg: Config,
    *,
    vocab: int,
    hidden: int,
    layers: int,
    heads: int,
    intermediate: int,
    type_vocab: int,
) -> EncoderShape:
    """The encoder's sizes from ``cfg``; the keyword arguments are the family's defaults."""
    h = cfg.size("hidden_size", hidden, limit=MAX_WIDTH)
    n_heads = cfg.size("num_attention_heads", heads, limit=MAX_HEADS)
    cfg.divides("num_attention_heads", n_heads, "hidden_size", h)
    return EncoderShape(
        vocab_size=cfg.size("vocab_size", vocab, limit=MAX_VOCAB),
        hidden_size=h,
        intermediate_size=cfg.size("intermediate_size", intermediate, limit=MAX_WIDTH),
        num_layers=cfg.size("num_hidden_layers", layers, limit=MAX_LAYERS),
        num_heads=n_heads,
        max_positions=cfg.size("max_position_embeddings", 512, limit=MAX_POSITIONS),
        type_vocab_size=cfg.size("type_vocab_size", type_vocab, limit=MAX_SMALL, minimum=0),
        tied=cfg.flag("tie_word_embeddings", True),
        activation=cfg.text("hidden_act", "gelu"),
        hidden_dropout=cfg.number("hidden_dropout_prob", 0.1) or 0.0,
        attention_dropout=cfg.number("attention_probs_dropout_prob", 0.1) or 0.0,
    )


def bert_layer(
    shape: EncoderShape,
    names: attention.Projections = BERT_ATTENTION,
    extra: LayerParts | None = None,
    attention_norm: str = "attention.output.LayerNorm",
) -> LayerTemplate:
    """Post-norm encoder layer; ``extra`` adds family-specific projections (DeBERTa's pos_*),
    ``attention_norm`` names the norm after attention (MPNet's ``attention.LayerNorm``)."""
    h = shape.hidden_size
    parts = LayerParts()
    attention.separate_qkv(
        parts,
        names,
        h,
        shape.num_heads,
        shape.num_heads,
        h // shape.num_heads,
        qkv_bias=True,
        out_bias=True,
    )
    if extra is not None:
        parts.tensors.extend(extra.tensors)
        parts.linears.extend(extra.linears)
    parts.norm(attention_norm, h, True)
    ffn = mlp.plain(
        parts,
        "intermediate.dense",
        "output.dense",
        h,
        shape.intermediate_size,
        shape.activation,
        bias=True,
        dropout=shape.hidden_dropout,
    )
    parts.norm("output.LayerNorm", h, True)
    spec = attention.spec(
        shape.num_heads,
        shape.num_heads,
        h // shape.num_heads,
        causal=False,
        dropout=shape.attention_dropout,
    )
    return template(parts, stack="encoder", attention=spec, feed_forward=ffn)


class MlmNames(NamedTuple):
    """Where a masked-LM head puts its transform: prefix, dense layer and LayerNorm."""

    prefix: str
    dense: str
    norm: str


BERT_MLM = MlmNames("cls.predictions.", "transform.dense", "transform.LayerNorm")
"""BertOnlyMLMHead's names, also DeBERTa-v2's legacy head."""
ROBERTA_MLM = MlmNames("lm_head.", "dense", "layer_norm")


def mlm_head(parts: LayerParts, names: MlmNames, shape: EncoderShape, width: int) -> None:
    """dense -> LayerNorm -> vocabulary decoder; a tied decoder shares the embedding and bias.
    ``width`` is the embedding width the transform projects to (DeBERTa's embedding_size)."""
    h, vocab = shape.hidden_size, shape.vocab_size
    parts.linear(f"{names.prefix}{names.dense}", h, width, True, "head")
    parts.norm(f"{names.prefix}{names.norm}", width, True)
    parts.param(f"{names.prefix}bias", (vocab,), "head")
    if not shape.tied:
        parts.linear(f"{names.prefix}decoder", width, vocab, True, "head")
