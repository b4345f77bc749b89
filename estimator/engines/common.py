"""What every engine module shares: the device, the engines' data file, small arithmetic.

The defaults live in ``data/engines.json`` beside the source line each one
is read from; the modules hold only the engines' formulas.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from estimator.cards import card
from estimator.engines.request import EngineRequest
from estimator.errors import WorkloadError

# A card given only by its memory: CUDA context as the table models it for a mid-size card.
CUSTOM_CONTEXT_BYTES = 500_000_000


@dataclass(frozen=True)
class Device:
    """One GPU as the engine sees it: total memory (what the driver reports) and context."""

    name: str
    total_bytes: int
    context_bytes: int
    bf16: bool


@dataclass(frozen=True)
class EngineData:
    version_modelled: str
    values: Mapping[str, Any]
    sources: tuple[str, ...]


def device_for(request: EngineRequest) -> Device:
    if request.card_memory_bytes is not None:
        gib = request.card_memory_bytes / 2**30
        return Device(f"{gib:g} GiB card", request.card_memory_bytes, CUSTOM_CONTEXT_BYTES, True)
    if request.card is None:
        raise WorkloadError("engine: name a card (card='L4') or give card_memory_bytes")
    c = card(request.card)
    return Device(c.name, c.usable_bytes, c.context_bytes, c.bf16)


@cache
def _raw() -> Mapping[str, Any]:
    text = resources.files("estimator").joinpath("data/engines.json").read_text("utf-8")
    data: Mapping[str, Any] = json.loads(text)
    return data


def engine_data(name: str) -> EngineData:
    entry = _raw()["engines"][name]
    return EngineData(entry["version_modelled"], entry, tuple(entry["sources"]))


def bytes_per_weight(quantization: str) -> float:
    """Bytes per block-linear weight; ``auto`` with no checkpoint read is 16-bit."""
    key = "none" if quantization == "auto" else quantization
    return float(_raw()["quantization_bytes_per_weight"][key])


def quantization_note(quantization: str, bpw: float) -> str:
    if quantization in ("none", "auto"):
        return "weights in the checkpoint's 16-bit dtype (fp32 checkpoints are cast to 16-bit)"
    return (
        f"{quantization}: block linears at {bpw:.4g} B per weight (scales included), "
        "embeddings, head and norms 16-bit"
    )


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def largest_passing(low: int, high: int, passes: Callable[[int], bool]) -> int:
    """The largest n in [low, high] with ``passes(n)`` (monotone), or 0 when none passes.

    The same binary search as vLLM's ``estimate_max_model_len``.
    """
    if high < low or not passes(low):
        return 0
    result = low
    left, right = low, high
    while left <= right:
        mid = (left + right) // 2
        if passes(mid):
            result = mid
            left = mid + 1
        else:
            right = mid - 1
    return result


def gib(n: float) -> float:
    """Bytes in GiB rounded as vLLM's ``format_gib`` rounds them (2 places)."""
    return round(n / 2**30, 2)
