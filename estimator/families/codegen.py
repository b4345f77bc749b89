"""CodeGen: GPT-J's parallel block (one LayerNorm feeding attention and MLP) with a single
bias-free ``qkv_proj``, a bias-free ``out_proj``, a biased MLP and a biased LM head.

From transformers 5.24.0 models/codegen/modeling_codegen.py (CodeGenAttention,
CodeGenMLP: ``n_inner`` defaults to 4 * n_embd) and configuration_codegen.py.
"""

from __future__ import annotations

from estimator.architecture import Architecture, HeadKind
from estimator.blocks import attention
from estimator.blocks.layer import LayerParts
from estimator.config import MAX_HEADS, MAX_LAYERS, MAX_POSITIONS, MAX_VOCAB, MAX_WIDTH, Config
from estimator.families.family import Family, Request
from estimator.families.gpt_style import GptStack, StackSizes, build_stack
from estimator.families.gptj import parallel_layer

CODEGEN_HEADS: frozenset[HeadKind] = frozenset({"base", "causal-lm"})
CODEGEN_STACK = GptStack(
    family="codegen",
    base_model="transformer.",
    token_embedding="wte",
    final_norm="ln_f",
    head_bias=True,
)


def build(cfg: Config, req: Request) -> Architecture:
    """CodeGen's tensors for ``req.architecture``; absent keys take ``CodeGenConfig``'s defaults."""
    hidden = cfg.size("n_embd", 4096, limit=MAX_WIDTH, aliases=("hidden_size",))
    heads = cfg.size("n_head", 16, limit=MAX_HEADS, aliases=("num_attention_heads",))
    cfg.divides("n_head", heads, "n_embd", hidden)
    inner = cfg.size("n_inner", 4 * hidden, limit=MAX_WIDTH)

    def attend(parts: LayerParts) -> None:
        attention.fused_qkv(
            parts,
            "attn.qkv_proj",
            "attn.out_proj",
            hidden,
            heads,
            heads,
            hidden // heads,
            qkv_bias=False,
            out_bias=False,
        )

    layer = parallel_layer(cfg, hidden, heads, inner, attend)
    sizes = StackSizes(
        hidden,
        cfg.size("vocab_size", 50400, limit=MAX_VOCAB),
        cfg.size("n_layer", 28, limit=MAX_LAYERS, aliases=("num_hidden_layers",)),
        cfg.size("n_positions", 2048, limit=MAX_POSITIONS, aliases=("max_position_embeddings",)),
        cfg.flag("tie_word_embeddings", False),
        hidden_dropout=cfg.number("resid_pdrop", 0.0) or 0.0,
    )
    return build_stack(cfg, req, CODEGEN_STACK, sizes, layer)


FAMILY = Family("codegen", "CodeGen", "CodeGenForCausalLM", CODEGEN_HEADS, build)
