"""Qwen3: Llama with RMSNorm on each head's query and key (``q_norm``/``k_norm``)."""

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
from estimator.families.qwen2 import qwen_windows

DEFAULTS = Defaults(
    vocab_size=151936,
    hidden_size=4096,
    intermediate_size=22016,
    num_hidden_layers=32,
    num_attention_heads=32,
    num_key_value_heads=None,
    max_position_embeddings=32768,
    tie_word_embeddings=False,
    head_dim=128,
)


def build(cfg: Config, req: Request) -> Architecture:
    shape = read_shape(cfg, DEFAULTS)
    bias = cfg.flag("attention_bias", False)
    windows = qwen_windows(cfg, shape)
    layers = stamp(
        shape.num_layers,
        lambda i: windows[i],
        lambda w: llama_layer(
            shape,
            lambda p: self_attention(p, shape, w, qkv_bias=bias, out_bias=bias, qk_norm=True),
            dense_mlp(shape),
        ),
    )
    return build_decoder(cfg, req, shape, layers, family="qwen3")


FAMILY = Family("qwen3", "Qwen3", "Qwen3ForCausalLM", DECODER_HEADS, build)
