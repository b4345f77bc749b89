"""Falcon in its variants: multi-query (7B), grouped KV with two parallel LayerNorms
(``new_decoder_architecture``: 40B/180B), sequential attention/MLP, optional biases and ALiBi.
The pre-transformers ``RefinedWeb`` configs describe the same model."""

from __future__ import annotations

from dataclasses import replace

from estimator.architecture import Architecture
from estimator.blocks import attention, mlp
from estimator.blocks.layer import LayerParts, template
from estimator.config import MAX_HEADS, MAX_LAYERS, MAX_POSITIONS, MAX_VOCAB, MAX_WIDTH, Config
from estimator.families.decoder import DECODER_HEADS
from estimator.families.family import Family, Request
from estimator.families.gpt_style import GptStack, StackSizes, build_stack

FALCON_STACK = GptStack(
    family="falcon",
    base_model="transformer.",
    token_embedding="word_embeddings",
    final_norm="ln_f",
)
FALCON_ALIBI_STACK = replace(FALCON_STACK, position="alibi")


def _kv_heads(cfg: Config, heads: int, new_arch: bool) -> int:
    if new_arch:
        kv = cfg.size("num_kv_heads", heads, limit=MAX_HEADS, aliases=("n_head_kv",))
        cfg.divides("num_kv_heads", kv, "num_attention_heads", heads)
        return kv
    return 1 if cfg.flag("multi_query", True) else heads


def build(cfg: Config, req: Request) -> Architecture:
    """Falcon's tensors in any of its variants; absent keys take ``FalconConfig``'s defaults."""
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

    sizes = StackSizes(hidden, vocab, n_layers, positions, tied)
    return build_stack(cfg, req, FALCON_ALIBI_STACK if alibi else FALCON_STACK, sizes, layer)


FAMILY = Family("falcon", "Falcon", "FalconForCausalLM", DECODER_HEADS, build)
