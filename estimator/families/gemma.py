"""Gemma 1/2/3 (text): tied embeddings, head_dim 256 by default; Gemma 2/3 add
pre/post feed-forward norms, Gemma 3 adds q/k norms, and both alternate
sliding-window and global layers."""

from __future__ import annotations

from estimator.architecture import Architecture
from estimator.blocks.layer import LayerTemplate
from estimator.config import MAX_LAYERS, Config
from estimator.families.decoder import (
    DECODER_HEADS,
    DecoderShape,
    Defaults,
    build_decoder,
    read_shape,
    window_of,
)
from estimator.families.family import Family, Request
from estimator.families.llama import llama_layers

GEMMA = Defaults(
    vocab_size=256000,
    hidden_size=3072,
    intermediate_size=24576,
    num_hidden_layers=28,
    num_attention_heads=16,
    num_key_value_heads=16,
    max_position_embeddings=8192,
    tie_word_embeddings=True,
    head_dim=256,
    activation="gelu_pytorch_tanh",
)
GEMMA2 = Defaults(
    vocab_size=256000,
    hidden_size=2304,
    intermediate_size=9216,
    num_hidden_layers=26,
    num_attention_heads=8,
    num_key_value_heads=4,
    max_position_embeddings=8192,
    tie_word_embeddings=True,
    head_dim=256,
    activation="gelu_pytorch_tanh",
    activation_key="hidden_activation",
)
GEMMA3 = Defaults(
    vocab_size=262208,
    hidden_size=2304,
    intermediate_size=9216,
    num_hidden_layers=26,
    num_attention_heads=8,
    num_key_value_heads=4,
    max_position_embeddings=131072,
    tie_word_embeddings=True,
    head_dim=256,
    activation="gelu_pytorch_tanh",
    activation_key="hidden_activation",
)


def alternating(cfg: Config, shape: DecoderShape, default_pattern: int) -> tuple[int | None, ...]:
    """layer_types if listed; else every ``pattern``-th layer global, the rest sliding."""
    window = window_of(cfg)
    types = cfg.texts("layer_types", length=shape.num_layers)
    if types is not None:
        return tuple(window if t == "sliding_attention" else None for t in types)
    pattern = cfg.size("sliding_window_pattern", default_pattern, limit=MAX_LAYERS)
    return tuple(None if (i + 1) % pattern == 0 else window for i in range(shape.num_layers))


def build_gemma(cfg: Config, req: Request) -> Architecture:
    """Gemma 1's tensors; absent keys take ``GemmaConfig``'s defaults."""
    shape = read_shape(cfg, GEMMA)
    bias = cfg.flag("attention_bias", False)
    layers = llama_layers(shape, (None,) * shape.num_layers, bias=bias)
    return build_decoder(cfg, req, shape, layers, family="gemma")


def _sandwich(cfg: Config, req: Request, d: Defaults, pattern: int, qk_norm: bool) -> Architecture:
    shape, layers = sandwich_layers(cfg, d, pattern, qk_norm)
    return build_decoder(cfg, req, shape, layers, family=req.model_type)


def sandwich_layers(
    cfg: Config, d: Defaults, pattern: int, qk_norm: bool
) -> tuple[DecoderShape, list[LayerTemplate]]:
    """Gemma 2/3's shape and layers (also the language model of Gemma 3's VLM wrapper)."""
    shape = read_shape(cfg, d)
    bias = cfg.flag("attention_bias", False)
    windows = alternating(cfg, shape, pattern)
    layers = llama_layers(shape, windows, bias=bias, qk_norm=qk_norm, sandwich=True)
    return shape, layers


def build_gemma2(cfg: Config, req: Request) -> Architecture:
    """Gemma 2: sandwich norms, every second layer global; absent keys take ``Gemma2Config``'s."""
    return _sandwich(cfg, req, GEMMA2, 2, qk_norm=False)


def build_gemma3(cfg: Config, req: Request) -> Architecture:
    """Gemma 3 text: Q/K norms, every sixth layer global; ``Gemma3TextConfig`` defaults."""
    return _sandwich(cfg, req, GEMMA3, 6, qk_norm=True)


FAMILY = Family("gemma", "Gemma", "GemmaForCausalLM", DECODER_HEADS, build_gemma)
FAMILY2 = Family("gemma2", "Gemma2", "Gemma2ForCausalLM", DECODER_HEADS, build_gemma2)
FAMILY3 = Family("gemma3_text", "Gemma3", "Gemma3ForCausalLM", DECODER_HEADS, build_gemma3)
