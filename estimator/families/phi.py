"""Phi-1/2: one LayerNorm per block (attention and MLP in parallel), biased projections,
an optional per-head LayerNorm on Q and K, and an ``lm_head`` with a bias."""

from __future__ import annotations

from estimator.architecture import Architecture
from estimator.blocks import attention, mlp
from estimator.blocks.layer import LayerParts, template
from estimator.config import MAX_HEADS, MAX_LAYERS, MAX_POSITIONS, MAX_VOCAB, MAX_WIDTH, Config
from estimator.families.decoder import DECODER_HEADS
from estimator.families.family import Family, Request
from estimator.families.gpt_style import GptStack, StackSizes, build_stack

PHI_ATTENTION = attention.Projections(
    "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.dense"
)

PHI_STACK = GptStack(
    family="phi",
    base_model="model.",
    token_embedding="embed_tokens",
    layers="layers.",
    final_norm="final_layernorm",
    head_bias=True,
)


def build(cfg: Config, req: Request) -> Architecture:
    """Phi-1/2's tensors for ``req.architecture``; absent keys take ``PhiConfig``'s defaults."""
    hidden = cfg.size("hidden_size", 2048, limit=MAX_WIDTH)
    heads = cfg.size("num_attention_heads", 32, limit=MAX_HEADS)
    cfg.divides("num_attention_heads", heads, "hidden_size", hidden)
    kv_heads = cfg.size("num_key_value_heads", heads, limit=MAX_HEADS)
    cfg.divides("num_key_value_heads", kv_heads, "num_attention_heads", heads)
    head_dim = cfg.optional_size("head_dim", limit=MAX_WIDTH) or hidden // heads
    n_layers = cfg.size("num_hidden_layers", 24, limit=MAX_LAYERS)
    positions = cfg.size("max_position_embeddings", 2048, limit=MAX_POSITIONS)
    vocab = cfg.size("vocab_size", 51200, limit=MAX_VOCAB)
    inner = cfg.size("intermediate_size", 8192, limit=MAX_WIDTH)
    tied = cfg.flag("tie_word_embeddings", False)

    parts = LayerParts()
    attention.separate_qkv(
        parts, PHI_ATTENTION, hidden, heads, kv_heads, head_dim, qkv_bias=True, out_bias=True
    )
    if cfg.flag("qk_layernorm", False):
        parts.norm("self_attn.q_layernorm", hidden // heads, True)
        parts.norm("self_attn.k_layernorm", hidden // heads, True)
    ffn = mlp.plain(
        parts, "mlp.fc1", "mlp.fc2", hidden, inner, cfg.text("hidden_act", "gelu_new"), bias=True
    )
    parts.norm("input_layernorm", hidden, True)
    spec = attention.spec(heads, kv_heads, head_dim, causal=True)
    layer = template(parts, stack="decoder", attention=spec, feed_forward=ffn)

    sizes = StackSizes(hidden, vocab, n_layers, positions, tied)
    return build_stack(cfg, req, PHI_STACK, sizes, layer)


FAMILY = Family("phi", "Phi", "PhiForCausalLM", DECODER_HEADS, build)
