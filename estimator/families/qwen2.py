"""Qwen2: Llama with Q/K/V biases; sliding window only from ``max_window_layers`` on."""

from __future__ import annotations

from estimator.architecture import Architecture
from estimator.config import MAX_LAYERS, Config
from estimator.families.decoder import (
    DECODER_HEADS,
    DecoderShape,
    Defaults,
    build_decoder,
    dense_mlp,
    llama_layer,
    read_shape,
    self_attention,
    stamp,
    window_of,
)
from estimator.families.family import Family, Request

DEFAULTS = Defaults(
    vocab_size=151936,
    hidden_size=4096,
    intermediate_size=22016,
    num_hidden_layers=32,
    num_attention_heads=32,
    num_key_value_heads=None,
    max_position_embeddings=32768,
    tie_word_embeddings=False,
)


def qwen_windows(cfg: Config, shape: DecoderShape) -> tuple[int | None, ...]:
    """layer_types when listed, else use_sliding_window from max_window_layers on (Qwen2/3)."""
    window = window_of(cfg)
    types = cfg.texts("layer_types", length=shape.num_layers)
    if types is not None:
        return tuple(window if t == "sliding_attention" else None for t in types)
    if not cfg.flag("use_sliding_window", False):
        return (None,) * shape.num_layers
    first = cfg.size("max_window_layers", 28, limit=MAX_LAYERS, minimum=0)
    return tuple(window if i >= first else None for i in range(shape.num_layers))


def build(cfg: Config, req: Request) -> Architecture:
    """Qwen2's tensors for ``req.architecture``; absent keys take ``Qwen2Config``'s defaults."""
    shape = read_shape(cfg, DEFAULTS)
    windows = qwen_windows(cfg, shape)
    layers = stamp(
        shape.num_layers,
        lambda i: windows[i],
        lambda w: llama_layer(
            shape, lambda p: self_attention(p, shape, w, qkv_bias=True), dense_mlp(shape)
        ),
    )
    return build_decoder(cfg, req, shape, layers, family="qwen2")


FAMILY = Family("qwen2", "Qwen2", "Qwen2ForCausalLM", DECODER_HEADS, build)
