"""BLOOM: ALiBi (no position table), a LayerNorm right after the word embeddings,
packed ``query_key_value`` and 4h MLP, all biased."""

from __future__ import annotations

from estimator.architecture import Architecture
from estimator.blocks import attention, mlp
from estimator.blocks.embeddings import embedding
from estimator.blocks.layer import LayerParts, template
from estimator.config import MAX_HEADS, MAX_LAYERS, MAX_VOCAB, MAX_WIDTH, Config
from estimator.families.common import assemble, causal_head, stack_model
from estimator.families.decoder import DECODER_HEADS
from estimator.families.family import Family, Request


def build(cfg: Config, req: Request) -> Architecture:
    hidden = cfg.size("hidden_size", 64, limit=MAX_WIDTH, aliases=("n_embed",))
    heads = cfg.size("n_head", 8, limit=MAX_HEADS, aliases=("num_attention_heads",))
    cfg.divides("n_head", heads, "hidden_size", hidden)
    n_layers = cfg.size("n_layer", 2, limit=MAX_LAYERS, aliases=("num_hidden_layers",))
    vocab = cfg.size("vocab_size", 250880, limit=MAX_VOCAB)
    tied = cfg.flag("tie_word_embeddings", True)

    parts = LayerParts()
    parts.norm("input_layernorm", hidden, True)
    attention.fused_qkv(
        parts,
        "self_attention.query_key_value",
        "self_attention.dense",
        hidden,
        heads,
        heads,
        hidden // heads,
        qkv_bias=True,
        out_bias=True,
    )
    parts.norm("post_attention_layernorm", hidden, True)
    ffn = mlp.plain(
        parts, "mlp.dense_h_to_4h", "mlp.dense_4h_to_h", hidden, 4 * hidden, "gelu", bias=True
    )
    spec = attention.spec(heads, heads, hidden // heads, causal=True)
    layer = template(parts, stack="decoder", attention=spec, feed_forward=ffn)

    top = LayerParts()
    embedding(top, "word_embeddings", vocab, hidden)
    top.norm("word_embeddings_layernorm", hidden, True)
    tail = LayerParts()
    tail.norm("ln_f", hidden, True)
    model = stack_model(
        prefix="" if req.head == "base" else "transformer.",
        top=top,
        layers_prefix="h.",
        layers=[layer] * n_layers,
        tail=tail,
        head=causal_head(cfg, req.head, hidden, vocab, tied=tied),
    )
    return assemble(
        cfg,
        model,
        model_type=req.model_type,
        family="bloom",
        architecture=req.architecture,
        head=req.head,
        hidden_size=hidden,
        vocab_size=vocab,
        max_position_embeddings=None,
        tie_word_embeddings=tied,
        norm="layernorm",
        position="alibi",
        supported=req.supported,
    )


FAMILY = Family("bloom", "Bloom", "BloomForCausalLM", DECODER_HEADS, build)
