"""GPT-2: learned positions, Conv1D projections stored ``(in, out)``, biases everywhere.

``build_gpt_style`` is shared with GPTBigCode (santacoder, StarCoder), the
same layer with nn.Linear projections and optionally one shared K/V head.
"""

from __future__ import annotations

from dataclasses import replace

from estimator.architecture import Architecture
from estimator.blocks import attention, mlp
from estimator.blocks.layer import LayerParts, template
from estimator.config import MAX_HEADS, MAX_LAYERS, MAX_POSITIONS, MAX_VOCAB, MAX_WIDTH, Config
from estimator.families.decoder import DECODER_HEADS
from estimator.families.family import Family, Request
from estimator.families.gpt_style import GptStack, StackSizes, build_stack

GPT2_STACK = GptStack(
    family="gpt2",
    base_model="transformer.",
    token_embedding="wte",
    position_embedding="wpe",
    final_norm="ln_f",
    position="learned",
)


def build(cfg: Config, req: Request) -> Architecture:
    """GPT-2's tensors for ``req.architecture``; absent keys take ``GPT2Config``'s defaults."""
    return build_gpt_style(cfg, req, family="gpt2", multi_query=False, conv1d=True)


def build_gpt_style(
    cfg: Config, req: Request, *, family: str, multi_query: bool, conv1d: bool
) -> Architecture:
    """A GPT-2-shaped decoder; ``multi_query`` gives K and V one head shared by all queries."""
    hidden = cfg.size("n_embd", 768, limit=MAX_WIDTH, aliases=("hidden_size",))
    heads = cfg.size("n_head", 12, limit=MAX_HEADS, aliases=("num_attention_heads",))
    cfg.divides("n_head", heads, "n_embd", hidden)
    kv_heads = 1 if multi_query else heads
    n_layers = cfg.size("n_layer", 12, limit=MAX_LAYERS, aliases=("num_hidden_layers",))
    positions = cfg.size(
        "n_positions", 1024, limit=MAX_POSITIONS, aliases=("max_position_embeddings",)
    )
    vocab = cfg.size("vocab_size", 50257, limit=MAX_VOCAB)
    inner = cfg.size("n_inner", 4 * hidden, limit=MAX_WIDTH)
    tied = cfg.flag("tie_word_embeddings", True)
    act = cfg.text("activation_function", "gelu_new")
    dropout = cfg.number("resid_pdrop", 0.1) or 0.0

    parts = LayerParts()
    parts.norm("ln_1", hidden, True)
    attention.fused_qkv(
        parts,
        "attn.c_attn",
        "attn.c_proj",
        hidden,
        heads,
        kv_heads,
        hidden // heads,
        qkv_bias=True,
        out_bias=True,
        conv1d=conv1d,
    )
    parts.norm("ln_2", hidden, True)
    ffn = mlp.plain(
        parts,
        "mlp.c_fc",
        "mlp.c_proj",
        hidden,
        inner,
        act,
        bias=True,
        conv1d=conv1d,
        dropout=dropout,
    )
    spec = attention.spec(
        heads, kv_heads, hidden // heads, causal=True, dropout=cfg.number("attn_pdrop", 0.1) or 0.0
    )
    layer = template(parts, stack="decoder", attention=spec, feed_forward=ffn)

    sizes = StackSizes(hidden, vocab, n_layers, positions, tied, hidden_dropout=dropout)
    return build_stack(cfg, req, replace(GPT2_STACK, family=family), sizes, layer)


FAMILY = Family("gpt2", "GPT2", "GPT2LMHeadModel", DECODER_HEADS, build)
