"""GPT-J: bias-free attention, biased MLP, one LayerNorm per block, ``lm_head`` with a bias."""

from __future__ import annotations

from collections.abc import Callable

from estimator.architecture import Architecture
from estimator.blocks import attention, mlp
from estimator.blocks.layer import LayerParts, LayerTemplate, template
from estimator.config import MAX_HEADS, MAX_LAYERS, MAX_POSITIONS, MAX_VOCAB, MAX_WIDTH, Config
from estimator.families.decoder import DECODER_HEADS
from estimator.families.family import Family, Request
from estimator.families.gpt_style import GptStack, StackSizes, build_stack

GPTJ_ATTENTION = attention.Projections("attn.q_proj", "attn.k_proj", "attn.v_proj", "attn.out_proj")

GPTJ_STACK = GptStack(
    family="gptj",
    base_model="transformer.",
    token_embedding="wte",
    final_norm="ln_f",
    head_bias=True,
)


def parallel_layer(
    cfg: Config, hidden: int, heads: int, inner: int, attend: Callable[[LayerParts], None]
) -> LayerTemplate:
    """GPT-J's block: one LayerNorm (``ln_1``) feeding both the bias-free attention that
    ``attend`` adds and the biased fc_in/fc_out MLP; CodeGen's block too, with its packed
    ``qkv_proj``."""
    parts = LayerParts()
    parts.norm("ln_1", hidden, True)
    attend(parts)
    ffn = mlp.plain(
        parts,
        "mlp.fc_in",
        "mlp.fc_out",
        hidden,
        inner,
        cfg.text("activation_function", "gelu_new"),
        bias=True,
    )
    spec = attention.spec(heads, heads, hidden // heads, causal=True)
    return template(parts, stack="decoder", attention=spec, feed_forward=ffn)


def build(cfg: Config, req: Request) -> Architecture:
    """GPT-J's tensors for ``req.architecture``; absent keys take ``GPTJConfig``'s defaults."""
    hidden = cfg.size("n_embd", 4096, limit=MAX_WIDTH, aliases=("hidden_size",))
    heads = cfg.size("n_head", 16, limit=MAX_HEADS, aliases=("num_attention_heads",))
    cfg.divides("n_head", heads, "n_embd", hidden)
    n_layers = cfg.size("n_layer", 28, limit=MAX_LAYERS, aliases=("num_hidden_layers",))
    positions = cfg.size(
        "n_positions", 2048, limit=MAX_POSITIONS, aliases=("max_position_embeddings",)
    )
    vocab = cfg.size("vocab_size", 50400, limit=MAX_VOCAB)
    inner = cfg.size("n_inner", 4 * hidden, limit=MAX_WIDTH)
    tied = cfg.flag("tie_word_embeddings", False)

    def attend(parts: LayerParts) -> None:
        attention.separate_qkv(
            parts,
            GPTJ_ATTENTION,
            hidden,
            heads,
            heads,
            hidden // heads,
            qkv_bias=False,
            out_bias=False,
        )

    layer = parallel_layer(cfg, hidden, heads, inner, attend)

    sizes = StackSizes(hidden, vocab, n_layers, positions, tied)
    return build_stack(cfg, req, GPTJ_STACK, sizes, layer)


FAMILY = Family("gptj", "GPTJ", "GPTJForCausalLM", DECODER_HEADS, build)
