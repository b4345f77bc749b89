"""BERT, RoBERTa and XLM-RoBERTa: one encoder, three sets of head names.

BERT pools for its base model, classifier and pre-training heads; RoBERTa's
classifier has its own dense layer instead. RoBERTa's position table is
``max_position_embeddings`` rows (the padding offset is already inside it).
"""

from __future__ import annotations

from estimator.architecture import Architecture, HeadKind
from estimator.blocks.embeddings import embedding
from estimator.blocks.layer import LayerParts
from estimator.config import Config
from estimator.families.common import assemble, stack_model
from estimator.families.encoder import (
    BERT_MLM,
    ENCODER_HEADS,
    ROBERTA_MLM,
    EncoderShape,
    bert_layer,
    mlm_head,
    read_encoder,
)
from estimator.families.family import Family, Request
from estimator.families.heads import num_labels


def embeddings(shape: EncoderShape, *, words: bool = True) -> LayerParts:
    """Embedding tables and their LayerNorm; ``words=False`` when the head lists the word table."""
    top = LayerParts()
    if words:
        embedding(top, "embeddings.word_embeddings", shape.vocab_size, shape.hidden_size)
    embedding(
        top,
        "embeddings.position_embeddings",
        shape.max_positions,
        shape.hidden_size,
        role="position",
    )
    embedding(top, "embeddings.token_type_embeddings", shape.type_vocab_size, shape.hidden_size)
    top.norm("embeddings.LayerNorm", shape.hidden_size, True)
    return top


def _pooler(parts: LayerParts, prefix: str, hidden: int) -> None:
    parts.linear(f"{prefix}pooler.dense", hidden, hidden, True, "head")


def _bert_heads(cfg: Config, head: HeadKind, shape: EncoderShape) -> tuple[LayerParts, LayerParts]:
    """(parts under the base model, parts at the root)."""
    h, inner, root = shape.hidden_size, LayerParts(), LayerParts()
    if head in ("base", "sequence-classification", "pretraining"):
        _pooler(inner, "", h)
    if head in ("masked-lm", "pretraining"):
        mlm_head(root, BERT_MLM, shape, h)
    if head == "pretraining":
        root.linear("cls.seq_relationship", h, 2, True, "head")
    if head == "sequence-classification":
        root.linear("classifier", h, num_labels(cfg), True, "head")
    return inner, root


def _roberta_heads(
    cfg: Config, head: HeadKind, shape: EncoderShape
) -> tuple[LayerParts, LayerParts]:
    h, inner, root = shape.hidden_size, LayerParts(), LayerParts()
    if head == "base":
        _pooler(inner, "", h)
    if head == "masked-lm":
        mlm_head(root, ROBERTA_MLM, shape, h)
    if head == "sequence-classification":
        root.linear("classifier.dense", h, h, True, "head")
        root.linear("classifier.out_proj", h, num_labels(cfg), True, "head")
    return inner, root


def _build(cfg: Config, req: Request, *, roberta: bool, family: str) -> Architecture:
    defaults = (50265, 1) if roberta else (30522, 2)
    if req.model_type == "xlm-roberta":
        defaults = (30522, 2)
    shape = read_encoder(
        cfg, vocab=defaults[0], hidden=768, layers=12, heads=12, intermediate=3072, type_vocab=2
    )
    inner, root = (_roberta_heads if roberta else _bert_heads)(cfg, req.head, shape)
    # XLMRobertaForMaskedLM registers lm_head before roberta, so named_parameters() reports
    # the tied word embedding under the decoder's name.
    decoder_first = req.model_type == "xlm-roberta" and req.head == "masked-lm" and shape.tied
    if decoder_first:
        root.param("lm_head.decoder.weight", (shape.vocab_size, shape.hidden_size), "embedding")
    base = "roberta." if roberta else "bert."
    model = stack_model(
        prefix="" if req.head == "base" else base,
        top=embeddings(shape, words=not decoder_first),
        layers_prefix="encoder.layer.",
        layers=[bert_layer(shape)] * shape.num_layers,
        tail=inner,
        head=root,
    )
    return assemble(
        cfg,
        model,
        req,
        family=family,
        hidden_size=shape.hidden_size,
        vocab_size=shape.vocab_size,
        max_position_embeddings=shape.max_positions,
        tie_word_embeddings=shape.tied,
        norm="layernorm",
        position="learned",
        hidden_dropout=shape.hidden_dropout,
    )


def build_bert(cfg: Config, req: Request) -> Architecture:
    """BERT's tensors for ``req.architecture``; absent keys take ``BertConfig``'s defaults."""
    return _build(cfg, req, roberta=False, family="bert")


def build_roberta(cfg: Config, req: Request) -> Architecture:
    """RoBERTa or XLM-R: BERT's encoder under ``roberta.``, with RoBERTa's heads and defaults."""
    return _build(cfg, req, roberta=True, family=req.model_type)


BERT = Family("bert", "Bert", "BertModel", ENCODER_HEADS | {"pretraining"}, build_bert)
ROBERTA = Family("roberta", "Roberta", "RobertaModel", ENCODER_HEADS, build_roberta)
XLM_ROBERTA = Family("xlm-roberta", "XLMRoberta", "XLMRobertaModel", ENCODER_HEADS, build_roberta)
