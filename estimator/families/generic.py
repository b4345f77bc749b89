"""An estimate for model types no family module knows: a Llama-shaped decoder built from
the common fields (and their GPT-2/T5-style aliases), marked ``supported=False``."""

from __future__ import annotations

from estimator.architecture import Architecture
from estimator.config import MAX_HEADS, MAX_LAYERS, MAX_POSITIONS, MAX_VOCAB, MAX_WIDTH, Config
from estimator.families.decoder import (
    DecoderShape,
    build_decoder,
    dense_mlp,
    llama_layer,
    self_attention,
)
from estimator.families.family import Request
from estimator.families.heads import head_of

HIDDEN = ("n_embd", "d_model", "dim", "model_dim", "embed_dim")
LAYERS = ("n_layer", "num_layers", "n_layers", "encoder_layers", "num_blocks")
HEADS = ("n_head", "num_heads", "n_heads", "encoder_attention_heads")
INTERMEDIATE = ("n_inner", "ffn_dim", "d_ff", "hidden_dim", "encoder_ffn_dim", "ffn_hidden_size")
KV_HEADS = ("num_kv_heads", "n_head_kv", "multi_query_group_num")
POSITIONS = ("n_positions", "max_seq_len", "seq_length", "n_ctx")


def shape_of(cfg: Config) -> DecoderShape:
    hidden = cfg.size("hidden_size", limit=MAX_WIDTH, aliases=HIDDEN)
    heads = cfg.size("num_attention_heads", limit=MAX_HEADS, aliases=HEADS)
    # Multi-query models (santacoder-style ``multi_query: true``) share one K/V head.
    kv_default = 1 if cfg.raw.get("multi_query") is True else heads
    kv_heads = cfg.size("num_key_value_heads", kv_default, limit=MAX_HEADS, aliases=KV_HEADS)
    head_dim = cfg.optional_size("head_dim", limit=MAX_WIDTH)
    if head_dim is None:
        cfg.divides("num_attention_heads", heads, "hidden_size", hidden)
        head_dim = hidden // heads
    return DecoderShape(
        vocab_size=cfg.size("vocab_size", limit=MAX_VOCAB),
        hidden_size=hidden,
        intermediate_size=cfg.size(
            "intermediate_size", 4 * hidden, limit=MAX_WIDTH, aliases=INTERMEDIATE
        ),
        num_layers=cfg.size("num_hidden_layers", limit=MAX_LAYERS, aliases=LAYERS),
        num_heads=heads,
        num_kv_heads=kv_heads,
        head_dim=head_dim,
        max_positions=cfg.size(
            "max_position_embeddings", 2048, limit=MAX_POSITIONS, aliases=POSITIONS
        ),
        tied=cfg.flag("tie_word_embeddings", False),
        activation=cfg.text("hidden_act", "silu"),
    )


def _language_model(cfg: Config) -> Config:
    """Multimodal configs (Gemma 3/4, LLaVA-style) keep the language model in text_config."""
    text = cfg.mapping("text_config")
    if text is not None and cfg.first_key("hidden_size", *HIDDEN) is None:
        return Config(text, source=f"{cfg.source}: text_config")
    return cfg


def build(cfg: Config, model_type: str | None, architecture: str | None) -> Architecture:
    shape = shape_of(_language_model(cfg))
    name = architecture or "unknown"
    head = head_of(name) if architecture else None
    if head not in ("base", "causal-lm", "sequence-classification"):
        head = "causal-lm"
    req = Request(model_type or "unknown", name, head, supported=False)
    layer = llama_layer(shape, lambda p: self_attention(p, shape, None), dense_mlp(shape))
    return build_decoder(cfg, req, shape, [layer] * shape.num_layers, family="generic")
