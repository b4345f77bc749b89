"""BLOOM: ALiBi (no position table), a LayerNorm right after the word embeddings,
packed ``query_key_value`` and 4h MLP, all biased."""

from __future__ import annotations

from estimator.architecture import Architecture
from estimator.blocks import attention, mlp
from estimator.blocks.layer import LayerParts, template
from estimator.config import MAX_HEADS, MAX_LAYERS, MAX_VOCAB, MAX_WIDTH, Config
from estimator.families.decoder import DECODER_HEADS
from estimator.families.family import Family, Request
from estimator.families.gpt_style import GptStack, StackSizes, build_stack

BLOOM_STACK = GptStack(
    family="bloom",
    base_model="transformer.",
    token_embedding="word_embeddings",
    embedding_norm="word_embeddings_layernorm",
    final_norm="ln_f",
    position="alibi",
)


def build(cfg: Config, req: Request) -> Architecture:
    """BLOOM's tensors for ``req.architecture``; absent keys take ``BloomConfig``'s defaults."""
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

    sizes = StackSizes(hidden, vocab, n_layers, None, tied)
    return build_stack(cfg, req, BLOOM_STACK, sizes, layer)


FAMILY = Family("bloom", "Bloom", "BloomForCausalLM", DECODER_HEADS, build)
