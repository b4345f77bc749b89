"""MPNet: a BERT-shaped post-norm encoder with its own names (``attention.attn.q``), one
relative-position bias table shared by all layers, and RoBERTa-style heads.

From transformers 5.24.0 models/mpnet/modeling_mpnet.py: MPNetEncoder holds
``relative_attention_bias`` (buckets x heads); MPNetModel adds a pooler only as the
base model; MPNetLMHead's decoder is tied to the word embeddings and its bias to
``lm_head.bias``.
"""

from __future__ import annotations

from estimator.architecture import Architecture
from estimator.blocks import attention
from estimator.blocks.layer import LayerParts, ModelParts
from estimator.config import MAX_SMALL, Config
from estimator.families.common import assemble
from estimator.families.encoder import ENCODER_HEADS, bert_layer, read_encoder
from estimator.families.family import Family, Request
from estimator.families.heads import num_labels

MPNET_ATTENTION = attention.Projections(
    "attention.attn.q", "attention.attn.k", "attention.attn.v", "attention.attn.o"
)


def build(cfg: Config, req: Request) -> Architecture:
    """MPNet's tensors for ``req.architecture``; absent keys take ``MPNetConfig``'s defaults."""
    shape = read_encoder(
        cfg, vocab=30527, hidden=768, layers=12, heads=12, intermediate=3072, type_vocab=0
    )
    h = shape.hidden_size
    buckets = cfg.size("relative_attention_num_buckets", 32, limit=MAX_SMALL)
    layer = bert_layer(shape, MPNET_ATTENTION, attention_norm="attention.LayerNorm")

    prefix = "" if req.head == "base" else "mpnet."
    model = ModelParts()
    top = LayerParts()
    top.param("embeddings.word_embeddings.weight", (shape.vocab_size, h), "embedding")
    top.param("embeddings.position_embeddings.weight", (shape.max_positions, h), "position")
    top.norm("embeddings.LayerNorm", h, True)
    model.extend(prefix, top)
    model.layers(f"{prefix}encoder.layer.", [layer] * shape.num_layers)
    tail = LayerParts()
    tail.param("encoder.relative_attention_bias.weight", (buckets, shape.num_heads), "position")
    if req.head == "base":
        tail.linear("pooler.dense", h, h, True, "head")
    model.extend(prefix, tail)
    head = LayerParts()
    if req.head == "masked-lm":
        head.param("lm_head.bias", (shape.vocab_size,), "head")
        head.linear("lm_head.dense", h, h, True, "head")
        head.norm("lm_head.layer_norm", h, True)
        if not shape.tied:
            head.param("lm_head.decoder.weight", (shape.vocab_size, h), "head")
    elif req.head == "sequence-classification":
        head.linear("classifier.dense", h, h, True, "head")
        head.linear("classifier.out_proj", h, num_labels(cfg), True, "head")
    model.extend("", head)
    return assemble(
        cfg,
        model,
        req,
        family="mpnet",
        hidden_size=h,
        vocab_size=shape.vocab_size,
        max_position_embeddings=shape.max_positions,
        tie_word_embeddings=shape.tied,
        norm="layernorm",
        position="learned",
        hidden_dropout=shape.hidden_dropout,
    )


FAMILY = Family("mpnet", "MPNet", "MPNetForMaskedLM", ENCODER_HEADS, build)
