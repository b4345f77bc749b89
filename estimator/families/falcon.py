"""Falcon in its variants: multi-query (7B), grouped KV with two parallel LayerNorms
(``new_decoder_architecture``: 40B/180B), sequential attention/MLP, optional biases and ALiBi.
The pre-transformers ``RefinedWeb`` configs describe the same model."""

from __future__ import annotations

from estimator.architecture import Architecture
from estimator.blocks import attention, mlp
from estimator.blocks.embeddings import embedding
from estimator.blocks.layer import LayerParts, template
from estimator.config import MAX_HEADS, MAX_LAYERS, MAX_POSITIONS, MAX_VOCAB, MAX_WIDTH, Config
from estimator.families.common import assemble, causal_head, stack_model
from estimator.families.decoder import DECODER_HEADS
from estimator.families.family import Family, Request


def _kv_heads(cfg: Config, heads: int, new_arch: bool) -> int:
    if new_arch:
        kv = cfg.size("num_kv_heads", heads, limit=MAX_HEADS, aliases=("n_head_kv",))
        cfg.divides("num_kv_heads", kv, "num_attention_heads", heads)
        return kv
    return 1 if cfg.flag("multi_query", True) else heads


def build(cfg: Config, req: Request) -> Architecture:
    hidden = cfg.size("hidden_size", 4544, limit=MAX_WIDTH, aliases=("n_embed",))
    heads = cfg.size("num_attention_heads", 71, limit=MAX_HEADS, aliases=("n_head",))
    cfg.divides("num_attention_heads", heads, "hidden_size", hidden)
    n_layers = cfg.size("num_hidden_layers", 32, limit=MAX_LAYERS, aliases=("n_layer",))
    positions = cfg.size("max_position_embeddings", 2048, limit=MAX_POSITIONS)
    vocab = cfg.size("vocab_size", 65024, limit=MAX_VOCAB)
    ffn_dim = cfg.size("ffn_hidden_size", 4 * hidden, limit=MAX_WIDTH)
    new_arch = cfg.flag("new_decoder_architecture", False)
    parallel = cfg.flag("parallel_attn", True)
    bias = cfg.flag("bias", False)
    alibi = cfg.flag("alibi", False)
    tied = cfg.flag("tie_word_embeddings", True)
    norms_in_parallel = cfg.size("num_ln_in_parallel_attn", 2 if new_arch else 1, limit=2)
    head_dim = hidden // heads
    kv_heads = _kv_heads(cfg, heads, new_arch)

    parts = LayerParts()
    attention.fused_qkv(
        parts,
        "self_attention.query_key_value",
        "self_attention.dense",
        hidden,
        heads,
        kv_heads,
        head_dim,
        qkv_bias=bias,
        out_bias=bias,
    )
    ffn = mlp.plain(
        parts,
        "mlp.dense_h_to_4h",
        "mlp.dense_4h_to_h",
        hidden,
        ffn_dim,
        cfg.text("activation", "gelu"),
        bias=bias,
    )
    if not parallel:
        parts.norm("post_attention_layernorm", hidden, True)
        parts.norm("input_layernorm", hidden, True)
    elif norms_in_parallel == 2:
        parts.norm("ln_attn", hidden, True)
        parts.norm("ln_mlp", hidden, True)
    else:
        parts.norm("input_layernorm", hidden, True)
    spec = attention.spec(heads, kv_heads, head_dim, causal=True)
    layer = template(parts, stack="decoder", attention=spec, feed_forward=ffn)

    top = LayerParts()
    embedding(top, "word_embeddings", vocab, hidden)
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
        family="falcon",
        architecture=req.architecture,
        head=req.head,
        hidden_size=hidden,
        vocab_size=vocab,
        max_position_embeddings=positions,
        tie_word_embeddings=tied,
        norm="layernorm",
        position="alibi" if alibi else "rope",
        supported=req.supported,
    )


FAMILY = Family("falcon", "Falcon", "FalconForCausalLM", DECODER_HEADS, build)
