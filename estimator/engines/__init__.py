"""Serving engines' start-up decisions: would vLLM, SGLang, TGI or transformers start, and with what KV cache.

``simulate_engine(arch, split, request)`` runs the chosen engine's own
arithmetic (one module per engine, defaults as data in ``data/engines.json``)
and returns an ``EngineVerdict``. The table ``ENGINES`` is the one place an
engine is registered.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Final

from estimator.architecture import Architecture
from estimator.engines import sglang, tgi, transformers, vllm
from estimator.engines.request import (
    ENGINE_NAMES,
    KV_CACHE_DTYPES,
    QUANTIZATIONS,
    EngineRequest,
)
from estimator.engines.shape import ServingShape, serving_shape
from estimator.engines.verdict import EngineVerdict
from estimator.memory.states import ParameterSplit

Simulator = Callable[[ServingShape, EngineRequest], EngineVerdict]

ENGINES: Final[Mapping[str, Simulator]] = {
    "transformers": transformers.simulate,
    "vllm": vllm.simulate,
    "sglang": sglang.simulate,
    "tgi": tgi.simulate,
}


def simulate_engine(
    arch: Architecture, split: ParameterSplit, request: EngineRequest
) -> EngineVerdict:
    """The engine's start-up verdict for this model on ``request``'s card and flags.

    A ``quantization`` still ``auto`` here had no config to read: 16-bit weights.
    """
    if request.quantization == "auto":
        request = replace(request, quantization="none")
    shape = serving_shape(
        arch, split, request.unquantized if request.quantization != "none" else ()
    )
    return ENGINES[request.engine](shape, request)


__all__ = [
    "ENGINES",
    "ENGINE_NAMES",
    "KV_CACHE_DTYPES",
    "QUANTIZATIONS",
    "EngineRequest",
    "EngineVerdict",
    "ServingShape",
    "serving_shape",
    "simulate_engine",
]
