"""GPT-NeoX (Pythia): packed ``query_key_value``, biased MLP, LayerNorms, untied ``lm_head``."""

from __future__ import annotations

from estimator.architecture import Architecture
from estimator.blocks import attention, mlp
from estimator.blocks.embeddings import embedding
from estimator.blocks.layer import LayerParts, template
from estimator.config import MAX_HEADS, MAX_LAYERS, MAX_POSITIONS, MAX_VOCAB, MAX_WIDTH, Config
from estimator.families.common import assemble, causal_head, stack_model
from estimator.families.decoder import DECODER_HEADS
from estimator.families.family import Family, Request


def build(cfg: Config, req: Request) -> Architecture:
    hidden = cfg.size("hidden_size", 6144, limit=MAX_WIDTH)
    heads = cfg.size("num_attention_heads", 64, limit=MAX_HEADS)
    cfg.divides("num_attention_heads", heads, "hidden_size", hidden)
    n_layers = cfg.size("num_hidden_layers", 44, limit=MAX_LAYERS)
    positions = cfg.size("max_position_embeddings", 2048, limit=MAX_POSITIONS)
    vocab = cfg.size("vocab_size", 50432, limit=MAX_VOCAB)
    inner = cfg.size("intermediate_size", 24576, limit=MAX_WIDTH)
    tied = cfg.flag("tie_word_embeddings", False)
    bias = cfg.flag("attention_bias", True)

    parts = LayerParts()
    parts.norm("input_layernorm", hidden, True)
    parts.norm("post_attention_layernorm", hidden, True)
    attention.fused_qkv(
        parts,
        "attention.query_key_value",
        "attention.dense",
        hidden,
        heads,
        heads,
        hidden // heads,
        qkv_bias=bias,
        out_bias=bias,
    )
    ffn = mlp.plain(
        parts,
        "mlp.dense_h_to_4h",
        "mlp.dense_4h_to_h",
        hidden,
        inner,
        cfg.text("hidden_act", "gelu"),
        bias=True,
    )
    spec = attention.spec(heads, heads, hidden // heads, causal=True)
    layer = template(parts, stack="decoder", attention=spec, feed_forward=ffn)

    top = LayerParts()
    embedding(top, "embed_in", vocab, hidden)
    tail = LayerParts()
    tail.norm("final_layer_norm", hidden, True)
    model = stack_model(
        prefix="" if req.head == "base" else "gpt_neox.",
        top=top,
        layers_prefix="layers.",
        layers=[layer] * n_layers,
        tail=tail,
        head=causal_head(cfg, req.head, hidden, vocab, tied=tied),
    )
    return assemble(
        cfg,
        model,
        model_type=req.model_type,
        family="gpt_neox",
        architecture=req.architecture,
        head=req.head,
        hidden_size=hidden,
        vocab_size=vocab,
        max_position_embeddings=positions,
        tie_word_embeddings=tied,
        norm="layernorm",
        position="rope",
        supported=req.supported,
    )


FAMILY = Family("gpt_neox", "GPTNeoX", "GPTNeoXForCausalLM", DECODER_HEADS, build)
