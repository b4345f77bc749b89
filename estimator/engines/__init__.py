"""Serving engines' start-up decisions: would vLLM, SGLang, TGI or transformers start, and with what KV cache.

``simulate_engine(arch, split, request)`` runs the chosen engine's own
arithmetic (one module per engine, defaults as data in ``data/engines.json``)
and returns an ``EngineVerdict``. The table ``ENGINES`` (``estimator.engines.simulate``)
is the one place an engine is registered.

Names are imported on first use (PEP 562): every plan reads
``estimator.engines.request`` for the checkpoint's quantization, and a package
``__init__`` that imported the four engines made each of them pay for those.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from estimator.engines.request import (
        ENGINE_NAMES,
        KV_CACHE_DTYPES,
        QUANTIZATIONS,
        EngineRequest,
    )
    from estimator.engines.shape import ServingShape, serving_shape
    from estimator.engines.simulate import ENGINES, simulate_engine
    from estimator.engines.verdict import EngineVerdict

_HOMES: Final[dict[str, str]] = {
    "ENGINES": "simulate",
    "ENGINE_NAMES": "request",
    "KV_CACHE_DTYPES": "request",
    "QUANTIZATIONS": "request",
    "EngineRequest": "request",
    "EngineVerdict": "verdict",
    "ServingShape": "shape",
    "serving_shape": "shape",
    "simulate_engine": "simulate",
}


def __getattr__(name: str) -> Any:
    """Import the module that defines ``name`` on first use and keep the name here."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


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
