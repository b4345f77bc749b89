"""GPT-2: learned positions, Conv1D projections stored ``(in, out)``, biases everywhere.

``build_gpt_style`` is shared with GPTBigCode (santacoder, StarCoder), the
same layer with nn.Linear projections and optionally one shared K/V head.
"""

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

    top = LayerParts()
    embedding(top, "wte", vocab, hidden)
    embedding(top, "wpe", positions, hidden, role="position")
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
        family=family,
        architecture=req.architecture,
        head=req.head,
        hidden_size=hidden,
        vocab_size=vocab,
        max_position_embeddings=positions,
        tie_word_embeddings=tied,
        norm="layernorm",
        position="learned",
        hidden_dropout=dropout,
        supported=req.supported,
    )


FAMILY = Family("gpt2", "GPT2", "GPT2LMHeadModel", DECODER_HEADS, build)
