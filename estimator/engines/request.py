"""What the user passes to a serving engine: an ``EngineRequest``, validated once.

``None`` means "the engine's own default", resolved by each engine module
from ``data/engines.json`` (vLLM's defaults even depend on the card), so a
verdict can say which value it used and where that default comes from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, Literal, get_args

from estimator.errors import WorkloadError

EngineName = Literal["transformers", "vllm", "sglang", "tgi"]
KvCacheDtype = Literal["auto", "fp8"]
Quantization = Literal["auto", "none", "fp8", "awq", "gptq", "bnb-4bit", "mxfp4"]
EngineDtype = Literal["auto", "bf16", "fp16", "fp32"]

ENGINE_NAMES: Final = get_args(EngineName)
KV_CACHE_DTYPES: Final = get_args(KvCacheDtype)
QUANTIZATIONS: Final = get_args(Quantization)
ENGINE_DTYPES: Final = get_args(EngineDtype)
# Bytes per weight, activation and (with kv_cache_dtype auto) KV value of each dtype;
# ``auto`` is the checkpoint's 16-bit dtype (engines cast an fp32 checkpoint down).
DTYPE_BYTES: Final = {"auto": 2, "bf16": 2, "fp16": 2, "fp32": 4}
_VERSION: Final = re.compile(r"[0-9][0-9A-Za-z.+!_-]{0,63}")

MAX_CARD_BYTES: Final = 1 << 44  # 16 TiB: no single device is larger
MAX_TOKENS: Final = 1 << 24
MAX_TP: Final = 1024


@dataclass(frozen=True)
class EngineRequest:
    """One engine start-up: the engine, the device and the engine's flags.

    ``card_memory_bytes`` is the device's total memory as the driver reports
    it; when it is None the card table's entry for ``card`` is used. ``plan()``
    fills a missing ``card`` with its workload's card. ``quantization`` ``auto``
    is what the engines do without the flag: the checkpoint's own format
    (``plan()`` reads it from config.json, with ``unquantized``, the layer
    modules the checkpoint keeps 16-bit, and ``group_size``, inputs per AWQ/GPTQ
    scale, 128 when not known); where no config is known, none.
    ``version``: the engine's release (``0.6.4``), which picks the start-up
    arithmetic of that line (``data/engines.json``: vLLM's V0 engine before
    0.8, V1 after); None is the current release. ``dtype``: the engine's
    ``--dtype`` (``fp32`` holds weights, activations and an ``auto`` KV cache
    at 4 B); ``plan()`` fills ``auto`` from the workload's precision.
    """

    engine: EngineName = "transformers"
    card: str | None = None
    card_memory_bytes: int | None = None
    gpu_memory_utilization: float | None = None
    max_model_len: int | None = None
    block_size: int | None = None
    kv_cache_dtype: KvCacheDtype = "auto"
    quantization: Quantization = "auto"
    unquantized: tuple[str, ...] = ()
    group_size: int | None = None
    tensor_parallel: int = 1
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    version: str | None = None
    dtype: EngineDtype = "auto"

    @property
    def dtype_bytes(self) -> int:
        """Bytes per weight and activation under ``--dtype`` (``auto``: the checkpoint's, 2)."""
        return DTYPE_BYTES[self.dtype]

    def __post_init__(self) -> None:
        _choice("engine", self.engine, ENGINE_NAMES)
        _choice("dtype", self.dtype, ENGINE_DTYPES)
        if self.version is not None and (
            not isinstance(self.version, str) or not _VERSION.fullmatch(self.version)
        ):
            raise WorkloadError(
                f"engine: version must be a release such as '0.6.4', got {self.version!r}"
            )
        _choice("kv_cache_dtype", self.kv_cache_dtype, KV_CACHE_DTYPES)
        _choice("quantization", self.quantization, QUANTIZATIONS)
        if not isinstance(self.unquantized, tuple) or not all(
            isinstance(m, str) and m for m in self.unquantized
        ):
            raise WorkloadError("engine: unquantized must be module-name prefixes")
        if self.group_size is not None:
            _bounded("group_size", self.group_size, 0, 1 << 16)
        if self.card is not None and (not isinstance(self.card, str) or not self.card):
            raise WorkloadError("engine: card must be a card name such as 'L4'")
        _bounded("tensor_parallel", self.tensor_parallel, 1, MAX_TP)
        _optional("card_memory_bytes", self.card_memory_bytes, 1 << 20, MAX_CARD_BYTES)
        _optional("max_model_len", self.max_model_len, 1, MAX_TOKENS)
        _optional("block_size", self.block_size, 1, 1 << 16)
        _optional("max_num_seqs", self.max_num_seqs, 1, 1 << 20)
        _optional("max_num_batched_tokens", self.max_num_batched_tokens, 1, MAX_TOKENS)
        u = self.gpu_memory_utilization
        if u is not None and (
            isinstance(u, bool) or not isinstance(u, (int, float)) or not 0.0 < float(u) <= 1.0
        ):
            raise WorkloadError(f"engine: gpu_memory_utilization must be in (0, 1], got {u!r}")


def _choice(name: str, value: object, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise WorkloadError(f"engine: {name} must be one of {', '.join(allowed)}, got {value!r}")


def _bounded(name: str, value: object, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise WorkloadError(f"engine: {name} must be an integer, got {value!r}")
    if not low <= value <= high:
        raise WorkloadError(f"engine: {name} must be between {low} and {high}, got {value}")


def _optional(name: str, value: object, low: int, high: int) -> None:
    if value is not None:
        _bounded(name, value, low, high)
