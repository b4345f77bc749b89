"""Llama: the reference decoder; optional biases on attention and MLP."""

from __future__ import annotations

from collections.abc import Sequence

from estimator.architecture import Architecture
from estimator.blocks.layer import LayerTemplate
from estimator.config import Config
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
)
from estimator.families.family import Family, Request

DEFAULTS = Defaults(
    vocab_size=32000,
    hidden_size=4096,
    intermediate_size=11008,
    num_hidden_layers=32,
    num_attention_heads=32,
    num_key_value_heads=None,
    max_position_embeddings=2048,
    tie_word_embeddings=False,
)


def llama_layers(
    shape: DecoderShape,
    windows: Sequence[int | None],
    *,
    bias: bool = False,
    mlp_bias: bool = False,
    qk_norm: bool = False,
    sandwich: bool = False,
) -> list[LayerTemplate]:
    """Llama layers with a dense MLP, one template per sliding window in ``windows`` (one
    entry per layer, None for full attention); ``bias`` on all four attention projections
    (``attention_bias``), ``qk_norm`` for Qwen3's and Gemma 3's q/k norms, ``sandwich``
    for Gemma 2's extra norms."""

    def layer(window: int | None) -> LayerTemplate:
        return llama_layer(
            shape,
            lambda p: self_attention(
                p, shape, window, qkv_bias=bias, out_bias=bias, qk_norm=qk_norm
            ),
            dense_mlp(shape, bias=mlp_bias),
            sandwich=sandwich,
        )

    return stamp(shape.num_layers, lambda i: windows[i], layer)


def build(cfg: Config, req: Request) -> Architecture:
    """Llama's tensors for ``req.architecture``; absent keys take ``LlamaConfig``'s defaults."""
    shape = read_shape(cfg, DEFAULTS)
    bias = cfg.flag("attention_bias", False)
    mlp_bias = cfg.flag("mlp_bias", False)
    layers = llama_layers(shape, (None,) * shape.num_layers, bias=bias, mlp_bias=mlp_bias)
    return build_decoder(cfg, req, shape, layers, family="llama")


FAMILY = Family("llama", "Llama", "LlamaForCausalLM", DECODER_HEADS, build)
