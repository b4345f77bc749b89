"""Qwen3: Llama with RMSNorm on each head's query and key (``q_norm``/``k_norm``)."""

from __future__ import annotations

from dataclasses import replace

from estimator.architecture import Architecture
from estimator.config import Config
from estimator.families import qwen2
from estimator.families.decoder import DECODER_HEADS, build_decoder, read_shape
from estimator.families.family import Family, Request
from estimator.families.llama import llama_layers
from estimator.families.qwen2 import qwen_windows

DEFAULTS = replace(qwen2.DEFAULTS, head_dim=128)
"""Qwen3Config's defaults are Qwen2Config's plus an explicit head_dim."""


def build(cfg: Config, req: Request) -> Architecture:
    """Qwen3's tensors for ``req.architecture``; absent keys take ``Qwen3Config``'s defaults."""
    shape = read_shape(cfg, DEFAULTS)
    bias = cfg.flag("attention_bias", False)
    layers = llama_layers(shape, qwen_windows(cfg, shape), bias=bias, qk_norm=True)
    return build_decoder(cfg, req, shape, layers, family="qwen3")


FAMILY = Family("qwen3", "Qwen3", "Qwen3ForCausalLM", DECODER_HEADS, build)
