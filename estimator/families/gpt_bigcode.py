"""GPTBigCode (santacoder, StarCoder): GPT-2's layer with nn.Linear projections.

``multi_query`` (the default) shares one K/V head among all query heads, so
``c_attn`` projects to ``hidden + 2 * head_dim`` and the KV cache is one head wide.
"""

from __future__ import annotations

from estimator.architecture import Architecture
from estimator.config import Config
from estimator.families.decoder import DECODER_HEADS
from estimator.families.family import Family, Request
from estimator.families.gpt2 import build_gpt_style


def build(cfg: Config, req: Request) -> Architecture:
    """GPTBigCode's tensors; multi-query attention unless ``multi_query`` is false."""
    multi_query = cfg.flag("multi_query", True)
    return build_gpt_style(cfg, req, family="gpt_bigcode", multi_query=multi_query, conv1d=False)


FAMILY = Family("gpt_bigcode", "GPTBigCode", "GPTBigCodeForCausalLM", DECODER_HEADS, build)
