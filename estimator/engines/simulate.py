"""``simulate_engine``: one engine's start-up verdict, through the table ``ENGINES``."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import replace
from functools import cache
from typing import Final

from estimator.architecture import Architecture
from estimator.engines.request import EngineRequest
from estimator.engines.shape import ServingShape, serving_shape
from estimator.engines.verdict import EngineVerdict
from estimator.memory.states import ParameterSplit

Simulator = Callable[[ServingShape, EngineRequest], EngineVerdict]


def _on_first_use(name: str) -> Simulator:
    """Engine ``name``'s ``simulate``, its module imported by the first call."""

    def simulate(shape: ServingShape, request: EngineRequest) -> EngineVerdict:
        return _engine(name)(shape, request)

    return simulate


@cache
def _engine(name: str) -> Simulator:
    """The module's ``simulate``, looked up once: a plan asks it on every card of the table."""
    engine: Simulator = importlib.import_module(f"estimator.engines.{name}").simulate
    return engine


ENGINES: Final[Mapping[str, Simulator]] = {
    name: _on_first_use(name) for name in ("transformers", "vllm", "sglang", "tgi")
}
"""The one place an engine is registered; each engine's module loads on its first call."""


def simulate_engine(
    arch: Architecture, split: ParameterSplit, request: EngineRequest
) -> EngineVerdict:
    """The engine's start-up verdict for this model on ``request``'s card and flags."""
    shape, request = engine_input(arch, split, request)
    return ENGINES[request.engine](shape, request)


def engine_input(
    arch: Architecture, split: ParameterSplit, request: EngineRequest
) -> tuple[ServingShape, EngineRequest]:
    """What ``simulate_engine`` hands the engine: the model's serving shape and the request.

    A ``quantization`` still ``auto`` here had no config to read: 16-bit weights.
    Neither depends on the card, so the card table's verdicts (``engine_cards``)
    compute them once for every card.
    """
    if request.quantization == "auto":
        request = replace(request, quantization="none")
    shape = serving_shape(
        arch, split, request.unquantized if request.quantization != "none" else ()
    )
    return shape, request


__all__ = ["ENGINES", "Simulator", "engine_input", "simulate_engine"]
