"""What every engine module shares: the device, the engines' data file, small arithmetic.

The defaults live in ``data/engines.json`` beside the source line each one
is read from; the modules hold only the engines' formulas.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any, Final

from estimator.cards import card
from estimator.data_files import data_text
from estimator.engines.request import EngineRequest
from estimator.engines.shape import COMPUTE_BYTES
from estimator.errors import WorkloadError
from estimator.memory.quantized import FORMATS, GROUP_SIZE, per_weight_bytes

# The engines' --quantization names as the serving formats of memory/quantized.py.
ENGINE_FORMATS: Final = {
    "fp8": "fp8",
    "awq": "awq",
    "gptq": "gptq",
    "bnb-4bit": "nf4",
    "mxfp4": "mxfp4",
}
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
    """One engine's entry of ``data/engines.json``: release modelled, defaults, their sources."""

    version_modelled: str
    values: Mapping[str, Any]
    sources: tuple[str, ...]


def device_for(request: EngineRequest) -> Device:
    """The request's card or one of ``card_memory_bytes``; WorkloadError when it gives neither."""
    if request.card_memory_bytes is not None:
        gib = request.card_memory_bytes / 2**30
        return Device(f"{gib:g} GiB card", request.card_memory_bytes, CUSTOM_CONTEXT_BYTES, True)
    if request.card is None:
        raise WorkloadError("engine: name a card (card='L4') or give card_memory_bytes")
    c = card(request.card)
    return Device(c.name, c.usable_bytes, c.context_bytes, c.bf16)


@cache
def _raw() -> Mapping[str, Any]:
    text = data_text("engines.json")
    data: Mapping[str, Any] = json.loads(text)
    return data


@cache
def engine_data(name: str) -> EngineData:
    """The entry for engine ``name``; KeyError for an engine the file does not list.

    Built once per engine: every start-up reads it several times, on each card of the table.
    """
    entry = _raw()["engines"][name]
    return EngineData(entry["version_modelled"], entry, tuple(entry["sources"]))


def bytes_per_weight(
    quantization: str, group_size: int | None = None, dtype_bytes: int = COMPUTE_BYTES
) -> float:
    """Bytes per block-linear weight, scales included, from the serving formats' table
    (``memory/quantized.py``) at the checkpoint's group size (128 when not known).

    The engines load what the checkpoint stores: AWQ's and GPTQ's 4-bit values
    with a 16-bit scale and a 4-bit zero per group, bitsandbytes NF4 with an fp32
    absmax per 64, fp8 at one byte, gpt-oss's MXFP4 at 4.25 bits. ``none``, and
    ``auto`` with no checkpoint read, are the serving dtype (16-bit by default).
    """
    name = ENGINE_FORMATS.get(quantization)
    if name is None:
        return float(dtype_bytes)
    size = GROUP_SIZE if group_size is None else group_size
    return per_weight_bytes(FORMATS[name], False, size)


def quantization_note(quantization: str, bpw: float) -> str:
    """The verdict's line on how weights are held at ``bpw`` bytes per block-linear weight."""
    if quantization in ("none", "auto"):
        return "weights in the checkpoint's 16-bit dtype (fp32 checkpoints are cast to 16-bit)"
    return (
        f"{quantization}: block linears at {bpw:.4g} B per weight (scales included), "
        "embeddings, head and norms 16-bit"
    )


def cdiv(a: int, b: int) -> int:
    """Integer ceiling division, as the engines round pages and blocks up."""
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
