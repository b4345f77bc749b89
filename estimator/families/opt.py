"""OPT: learned positions offset by 2, optional project_in/out when the word-embedding
width differs from hidden_size, and a final LayerNorm only for pre-norm models."""

from __future__ import annotations

from estimator.architecture import Architecture
from estimator.blocks import attention, mlp
from estimator.blocks.embeddings import embedding
from estimator.blocks.layer import LayerParts, template
from estimator.config import MAX_HEADS, MAX_LAYERS, MAX_POSITIONS, MAX_VOCAB, MAX_WIDTH, Config
from estimator.families.decoder import DECODER_HEADS
from estimator.families.family import Family, Request
from estimator.families.gpt_style import GptStack, StackSizes, build_stack

OPT_ATTENTION = attention.Projections(
    "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.out_proj"
)
POSITION_OFFSET = 2
OPT_STACK = GptStack(
    family="opt",
    base_model="model.",
    decoder="decoder.",
    token_embedding="embed_tokens",
    layers="layers.",
    final_norm="final_layer_norm",
    position="learned",
)


def build(cfg: Config, req: Request) -> Architecture:
    """OPT's tensors for ``req.architecture``; absent keys take ``OPTConfig``'s defaults."""
    hidden = cfg.size("hidden_size", 768, limit=MAX_WIDTH)
    heads = cfg.size("num_attention_heads", 12, limit=MAX_HEADS)
    cfg.divides("num_attention_heads", heads, "hidden_size", hidden)
    n_layers = cfg.size("num_hidden_layers", 12, limit=MAX_LAYERS)
    positions = cfg.size("max_position_embeddings", 2048, limit=MAX_POSITIONS)
    vocab = cfg.size("vocab_size", 50272, limit=MAX_VOCAB)
    ffn_dim = cfg.size("ffn_dim", 3072, limit=MAX_WIDTH)
    proj = cfg.size("word_embed_proj_dim", hidden, limit=MAX_WIDTH)
    bias = cfg.flag("enable_bias", True)
    affine = cfg.flag("layer_norm_elementwise_affine", True)
    tied = cfg.flag("tie_word_embeddings", True)
    final_norm = cfg.flag("do_layer_norm_before", True) and not cfg.flag(
        "_remove_final_layer_norm", False
    )
    dropout = cfg.number("dropout", 0.1) or 0.0

    parts = LayerParts()
    attention.separate_qkv(
        parts, OPT_ATTENTION, hidden, heads, heads, hidden // heads, qkv_bias=bias, out_bias=bias
    )
    parts.norm("self_attn_layer_norm", hidden, True, affine=affine)
    ffn = mlp.plain(
        parts,
        "fc1",
        "fc2",
        hidden,
        ffn_dim,
        cfg.text("activation_function", "relu"),
        bias=bias,
        dropout=dropout,
    )
    parts.norm("final_layer_norm", hidden, True, affine=affine)
    spec = attention.spec(
        heads,
        heads,
        hidden // heads,
        causal=True,
        dropout=cfg.number("attention_dropout", 0.0) or 0.0,
    )
    layer = template(parts, stack="decoder", attention=spec, feed_forward=ffn)

    sizes = StackSizes(hidden, vocab, n_layers, positions, tied, hidden_dropout=dropout)
    top = _embeddings(vocab, hidden, proj, positions)
    tail = LayerParts()
    if final_norm:
        tail.norm(OPT_STACK.final_norm, hidden, True, affine=affine)
    return build_stack(cfg, req, OPT_STACK, sizes, layer, top=top, tail=tail, head_width=proj)


def _embeddings(vocab: int, hidden: int, proj: int, positions: int) -> LayerParts:
    """Word embeddings ``proj`` wide, projected to and from ``hidden`` when the widths differ."""
    top = LayerParts()
    embedding(top, OPT_STACK.token_embedding, vocab, proj)
    embedding(top, "embed_positions", positions + POSITION_OFFSET, hidden, role="position")
    if proj != hidden:
        top.linear("project_out", hidden, proj, False, "other")
        top.linear("project_in", proj, hidden, False, "other")
    return top


FAMILY = Family("opt", "OPT", "OPTForCausalLM", DECODER_HEADS, build)
