"""An estimate for model types no family module knows: a Llama-shaped decoder built from
the common fields (and their GPT-2/T5-style aliases), marked ``supported=False``.

A config lacking one of the fields this shape needs (and which has no transformers default
to fall back on, as every family's fields do) still gets a plan: the missing field stands
in as zero (no width, no layers, no vocabulary) or, for the head count, as multi-head
attention over the hidden size, and ``missing_fields`` tells the verifier which, so the
plan's ``config-field-missing`` finding names them and what was not estimated.
"""

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

HIDDEN = ("n_embd", "n_embed", "d_model", "dim", "model_dim", "embed_dim")
LAYERS = ("n_layer", "num_layers", "n_layers", "encoder_layers", "num_blocks")
HEADS = ("n_head", "num_heads", "n_heads", "encoder_attention_heads")
INTERMEDIATE = ("n_inner", "ffn_dim", "d_ff", "hidden_dim", "encoder_ffn_dim", "ffn_hidden_size")
KV_HEADS = ("num_kv_heads", "n_head_kv", "multi_query_group_num")
POSITIONS = ("n_positions", "max_seq_len", "seq_length", "n_ctx")


# What a plan lacks when the config lacks the field: the ``config-field-missing`` text.
NOT_ESTIMATED: dict[str, str] = {
    "hidden_size": "no layer width, so no parameters or memory are estimated (shown as 0)",
    "num_hidden_layers": "no layer is counted (parameters and memory are a lower bound)",
    "vocab_size": "the embeddings and output head are not counted (a lower bound)",
    "num_attention_heads": "attention is taken as multi-head over hidden_size: parameters "
    "and KV cache hold for any such head count, attention-score memory counts one head",
}
_ALIASES: dict[str, tuple[str, ...]] = {
    "hidden_size": HIDDEN,
    "num_hidden_layers": LAYERS,
    "num_attention_heads": HEADS,
    "vocab_size": (),
}


def _heads(cfg: Config, hidden: int) -> tuple[int, int]:
    """(heads, head_dim); without a head count, one head as wide as the hidden size, or
    ``hidden_size / head_dim`` heads when head_dim is given."""
    head_dim = cfg.optional_size("head_dim", limit=MAX_WIDTH)
    if cfg.first_key("num_attention_heads", *HEADS) is None:
        if head_dim is not None and hidden % head_dim == 0 and hidden:
            return hidden // head_dim, head_dim
        return 1, head_dim or hidden
    heads = cfg.size("num_attention_heads", limit=MAX_HEADS, aliases=HEADS)
    if head_dim is None:
        cfg.divides("num_attention_heads", heads, "hidden_size", hidden)
        head_dim = hidden // heads
    return heads, head_dim


def shape_of(cfg: Config) -> DecoderShape:
    """The decoder shape; a missing field of ``NOT_ESTIMATED`` takes its stand-in."""
    hidden = cfg.size("hidden_size", 0, limit=MAX_WIDTH, aliases=HIDDEN)
    heads, head_dim = _heads(cfg, hidden)
    # Multi-query models (santacoder-style ``multi_query: true``) share one K/V head.
    kv_default = 1 if cfg.raw.get("multi_query") is True else heads
    kv_heads = cfg.size("num_key_value_heads", kv_default, limit=MAX_HEADS, aliases=KV_HEADS)
    if cfg.first_key("num_attention_heads", *HEADS) is None:
        kv_heads = min(kv_heads, heads)  # the stand-in has no KV grouping
    return DecoderShape(
        vocab_size=cfg.size("vocab_size", 0, limit=MAX_VOCAB),
        hidden_size=hidden,
        intermediate_size=cfg.size(
            "intermediate_size", 4 * hidden, limit=MAX_WIDTH, aliases=INTERMEDIATE
        ),
        num_layers=cfg.size("num_hidden_layers", 0, limit=MAX_LAYERS, aliases=LAYERS),
        num_heads=heads,
        num_kv_heads=kv_heads,
        head_dim=head_dim,
        max_positions=cfg.size(
            "max_position_embeddings", 2048, limit=MAX_POSITIONS, aliases=POSITIONS
        ),
        tied=cfg.flag("tie_word_embeddings", False),
        activation=cfg.text("hidden_act", "silu"),
    )


def missing_fields(cfg: Config) -> tuple[str, ...]:
    """The ``NOT_ESTIMATED`` fields the config (or the text_config it is read from) lacks,
    named as the config spells the path (``text_config.vocab_size``)."""
    lm = _language_model(cfg)
    prefix = "" if lm is cfg else "text_config."
    return tuple(f"{prefix}{f}" for f, a in _ALIASES.items() if lm.first_key(f, *a) is None)


def _language_model(cfg: Config) -> Config:
    """Multimodal configs (Gemma 3/4, LLaVA-style) keep the language model in text_config."""
    text = cfg.mapping("text_config")
    if text is not None and cfg.first_key("hidden_size", *HIDDEN) is None:
        return Config(text, source=f"{cfg.source}: text_config")
    return cfg


def build(cfg: Config, model_type: str | None, architecture: str | None) -> Architecture:
    """A Llama-shaped partial estimate marked unsupported, for a type no family knows."""
    shape = shape_of(_language_model(cfg))
    name = architecture or "unknown"
    head = head_of(name) if architecture else None
    if head not in ("base", "causal-lm", "sequence-classification"):
        head = "causal-lm"
    req = Request(model_type or "unknown", name, head, supported=False)
    layer = llama_layer(shape, lambda p: self_attention(p, shape, None), dense_mlp(shape))
    return build_decoder(cfg, req, shape, [layer] * shape.num_layers, family="generic")
