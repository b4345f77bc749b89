"""Qwen (v1, remote code): a GPT-style stack (``transformer.wte`` -> ``h.{i}`` -> ``ln_f``)
with RMSNorm, one fused Q/K/V projection that always has a bias, and a SwiGLU MLP
whose two input projections (``w1``, ``w2``) are each half of ``intermediate_size``.

Read from Qwen's modeling_qwen.py and configuration_qwen.py as published with
Qwen/Qwen-7B (transformers_version 4.32.0 in its config): ``c_attn`` is
nn.Linear(hidden, 3 * kv_channels * heads) with bias, ``c_proj`` and the MLP carry a
bias only when ``no_bias`` is false, ``ff_dim_in = intermediate_size // 2``.
transformers has no class for it, so the test checks against the checkpoint index.
"""

from __future__ import annotations

from estimator.architecture import Architecture
from estimator.blocks import attention, mlp
from estimator.blocks.layer import LayerParts, template
from estimator.config import MAX_HEADS, MAX_LAYERS, MAX_POSITIONS, MAX_VOCAB, MAX_WIDTH, Config
from estimator.families.decoder import DECODER_HEADS
from estimator.families.family import Family, Request
from estimator.families.gpt_style import GptStack, StackSizes, build_stack

QWEN_STACK = GptStack(
    family="qwen",
    base_model="transformer.",
    token_embedding="wte",
    final_norm="ln_f",
    norm="rmsnorm",
)


def build(cfg: Config, req: Request) -> Architecture:
    """Qwen (v1) as its remote code names it; ConfigError when ``kv_channels`` mismatches."""
    hidden = cfg.size("hidden_size", 4096, limit=MAX_WIDTH)
    heads = cfg.size("num_attention_heads", 32, limit=MAX_HEADS)
    cfg.divides("num_attention_heads", heads, "hidden_size", hidden)
    head_dim = cfg.size("kv_channels", hidden // heads, limit=MAX_WIDTH)
    if head_dim * heads != hidden:
        raise cfg.error(
            "kv_channels",
            f"({head_dim}) times num_attention_heads ({heads}) must equal hidden_size ({hidden})",
        )
    bias = not cfg.flag("no_bias", True)
    ff_in = cfg.size("intermediate_size", 22016, limit=MAX_WIDTH, minimum=2) // 2
    parts = LayerParts()
    parts.norm("ln_1", hidden, False)
    attention.fused_qkv(
        parts,
        "attn.c_attn",
        "attn.c_proj",
        hidden,
        heads,
        heads,
        head_dim,
        qkv_bias=True,
        out_bias=bias,
    )
    parts.norm("ln_2", hidden, False)
    ffn = mlp.gated(
        parts, mlp.GatedNames("mlp.w2", "mlp.w1", "mlp.c_proj"), hidden, ff_in, "silu", bias=bias
    )
    spec = attention.spec(
        heads, heads, head_dim, causal=True, dropout=cfg.number("attn_dropout_prob", 0.0) or 0.0
    )
    layer = template(parts, stack="decoder", attention=spec, feed_forward=ffn)
    sizes = StackSizes(
        hidden,
        cfg.size("vocab_size", 151936, limit=MAX_VOCAB),
        cfg.size("num_hidden_layers", 32, limit=MAX_LAYERS),
        cfg.size("max_position_embeddings", 8192, limit=MAX_POSITIONS, aliases=("seq_length",)),
        cfg.flag("tie_word_embeddings", False),
    )
    tail = LayerParts()
    tail.norm("ln_f", hidden, False)
    return build_stack(cfg, req, QWEN_STACK, sizes, layer, tail=tail)


FAMILY = Family("qwen", "QWen", "QWenLMHeadModel", DECODER_HEADS, build)
