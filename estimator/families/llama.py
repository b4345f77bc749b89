"""Llama: the reference decoder; optional biases on attention and MLP."""

from __future__ import annotations

from estimator.architecture import Architecture
from estimator.config import Config
from estimator.families.decoder import (
    DECODER_HEADS,
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


def build(cfg: Config, req: Request) -> Architecture:
    shape = read_shape(cfg, DEFAULTS)
    qkv_bias = cfg.flag("attention_bias", False)
    mlp_bias = cfg.flag("mlp_bias", False)
    layer = llama_layer(
        shape,
        lambda p: self_attention(p, shape, None, qkv_bias=qkv_bias, out_bias=qkv_bias),
        dense_mlp(shape, bias=mlp_bias),
    )
    layers = stamp(shape.num_layers, lambda i: 0, lambda k: layer)
    return build_decoder(cfg, req, shape, layers, family="llama")


FAMILY = Family("llama", "Llama", "LlamaForCausalLM", DECODER_HEADS, build)
