"""Mistral: Llama without biases, with a sliding window over every layer when set."""

from __future__ import annotations

from estimator.architecture import Architecture
from estimator.blocks.layer import LayerTemplate
from estimator.config import Config
from estimator.families.decoder import (
    DECODER_HEADS,
    DecoderShape,
    Defaults,
    FeedForward,
    build_decoder,
    dense_mlp,
    layer_types,
    llama_layer,
    read_shape,
    self_attention,
    stamp,
    window_of,
)
from estimator.families.family import Family, Request

DEFAULTS = Defaults(
    vocab_size=32000,
    hidden_size=4096,
    intermediate_size=14336,
    num_hidden_layers=32,
    num_attention_heads=32,
    num_key_value_heads=8,
    max_position_embeddings=131072,
    tie_word_embeddings=False,
)


def windowed_layers(cfg: Config, shape: DecoderShape, ffn: FeedForward) -> list[LayerTemplate]:
    """Bias-free Llama layers with the sliding window on every layer (or on those
    ``layer_types`` marks sliding), ``ffn`` after attention (Mixtral's experts)."""
    windows = layer_types(cfg, shape, window_of(cfg))
    return stamp(
        shape.num_layers,
        lambda i: windows[i],
        lambda w: llama_layer(shape, lambda p: self_attention(p, shape, w), ffn),
    )


def build(cfg: Config, req: Request) -> Architecture:
    """Mistral's tensors for ``req.architecture``; absent keys take ``MistralConfig``'s defaults."""
    shape = read_shape(cfg, DEFAULTS)
    layers = windowed_layers(cfg, shape, dense_mlp(shape))
    return build_decoder(cfg, req, shape, layers, family="mistral")


FAMILY = Family("mistral", "Mistral", "MistralForCausalLM", DECODER_HEADS, build)
