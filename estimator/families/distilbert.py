"""DistilBERT: BERT distilled to half the layers, with its own names and no token types."""

from __future__ import annotations

from estimator.architecture import Architecture
from estimator.blocks import attention, mlp
from estimator.blocks.embeddings import embedding
from estimator.blocks.layer import LayerParts, template
from estimator.config import MAX_HEADS, MAX_LAYERS, MAX_POSITIONS, MAX_VOCAB, MAX_WIDTH, Config
from estimator.families.common import assemble, stack_model
from estimator.families.encoder import ENCODER_HEADS
from estimator.families.family import Family, Request
from estimator.families.heads import num_labels

DISTIL_ATTENTION = attention.Projections(
    "attention.q_lin", "attention.k_lin", "attention.v_lin", "attention.out_lin"
)


def build(cfg: Config, req: Request) -> Architecture:
    """DistilBERT's tensors, from its own keys (``dim``, ``n_layers``) or BERT-style aliases."""
    h = cfg.size("dim", 768, limit=MAX_WIDTH, aliases=("hidden_size",))
    heads = cfg.size("n_heads", 12, limit=MAX_HEADS, aliases=("num_attention_heads",))
    cfg.divides("n_heads", heads, "dim", h)
    n_layers = cfg.size("n_layers", 6, limit=MAX_LAYERS, aliases=("num_hidden_layers",))
    inner = cfg.size("hidden_dim", 3072, limit=MAX_WIDTH)
    vocab = cfg.size("vocab_size", 30522, limit=MAX_VOCAB)
    positions = cfg.size("max_position_embeddings", 512, limit=MAX_POSITIONS)
    tied = cfg.flag("tie_word_embeddings", True)
    dropout = cfg.number("dropout", 0.1) or 0.0

    parts = LayerParts()
    attention.separate_qkv(
        parts, DISTIL_ATTENTION, h, heads, heads, h // heads, qkv_bias=True, out_bias=True
    )
    parts.norm("sa_layer_norm", h, True)
    ffn = mlp.plain(
        parts,
        "ffn.lin1",
        "ffn.lin2",
        h,
        inner,
        cfg.text("activation", "gelu"),
        bias=True,
        dropout=dropout,
    )
    parts.norm("output_layer_norm", h, True)
    spec = attention.spec(
        heads, heads, h // heads, causal=False, dropout=cfg.number("attention_dropout", 0.1) or 0.0
    )
    layer = template(parts, stack="encoder", attention=spec, feed_forward=ffn)

    top = LayerParts()
    embedding(top, "embeddings.word_embeddings", vocab, h)
    embedding(top, "embeddings.position_embeddings", positions, h, role="position")
    top.norm("embeddings.LayerNorm", h, True)
    root = LayerParts()
    if req.head == "masked-lm":
        root.linear("vocab_transform", h, h, True, "head")
        root.norm("vocab_layer_norm", h, True)
        root.param("vocab_projector.bias", (vocab,), "head")
        if not tied:
            root.param("vocab_projector.weight", (vocab, h), "head")
    elif req.head == "sequence-classification":
        root.linear("pre_classifier", h, h, True, "head")
        root.linear("classifier", h, num_labels(cfg), True, "head")
    model = stack_model(
        prefix="" if req.head == "base" else "distilbert.",
        top=top,
        layers_prefix="transformer.layer.",
        layers=[layer] * n_layers,
        tail=LayerParts(),
        head=root,
    )
    return assemble(
        cfg,
        model,
        req,
        family="distilbert",
        hidden_size=h,
        vocab_size=vocab,
        max_position_embeddings=positions,
        tie_word_embeddings=tied,
        norm="layernorm",
        position="learned",
        hidden_dropout=dropout,
    )


FAMILY = Family("distilbert", "DistilBert", "DistilBertModel", ENCODER_HEADS, build)
