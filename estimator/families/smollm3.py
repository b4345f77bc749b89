"""SmolLM3: Llama layout with tied embeddings by default (NoPE layers change no parameters)."""

from __future__ import annotations

from estimator.architecture import Architecture
from estimator.config import Config
from estimator.families.decoder import DECODER_HEADS, Defaults, build_decoder, read_shape
from estimator.families.family import Family, Request
from estimator.families.llama import llama_layers
from estimator.families.qwen2 import qwen_windows

DEFAULTS = Defaults(
    vocab_size=128256,
    hidden_size=2048,
    intermediate_size=11008,
    num_hidden_layers=36,
    num_attention_heads=16,
    num_key_value_heads=4,
    max_position_embeddings=32768,
    tie_word_embeddings=True,
)


def build(cfg: Config, req: Request) -> Architecture:
    """SmolLM3's tensors for ``req.architecture``; absent keys take ``SmolLM3Config``'s defaults."""
    shape = read_shape(cfg, DEFAULTS)
    bias = cfg.flag("attention_bias", False)
    mlp_bias = cfg.flag("mlp_bias", False)
    layers = llama_layers(shape, qwen_windows(cfg, shape), bias=bias, mlp_bias=mlp_bias)
    return build_decoder(cfg, req, shape, layers, family="smollm3")


FAMILY = Family("smollm3", "SmolLM3", "SmolLM3ForCausalLM", DECODER_HEADS, build)
