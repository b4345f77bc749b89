"""GPT-NeoX (Pythia): packed ``query_key_value``, biased MLP, LayerNorms, untied ``lm_head``."""

from __future__ import annotations

from estimator.architecture import Architecture
from estimator.blocks import attention, mlp
from estimator.blocks.layer import LayerParts, template
from estimator.config import MAX_HEADS, MAX_LAYERS, MAX_POSITIONS, MAX_VOCAB, MAX_WIDTH, Config
from estimator.families.decoder import DECODER_HEADS
from estimator.families.family import Family, Request
from estimator.families.gpt_style import GptStack, StackSizes, build_stack

NEOX_STACK = GptStack(
    family="gpt_neox",
    base_model="gpt_neox.",
    token_embedding="embed_in",
    layers="layers.",
    final_norm="final_layer_norm",
)


def build(cfg: Config, req: Request) -> Architecture:
    """GPT-NeoX's tensors for ``req.architecture``; absent keys take ``GPTNeoXConfig``'s."""
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

    sizes = StackSizes(hidden, vocab, n_layers, positions, tied)
    return build_stack(cfg, req, NEOX_STACK, sizes, layer)


FAMILY = Family("gpt_neox", "GPTNeoX", "GPTNeoXForCausalLM", DECODER_HEADS, build)
