"""vLLM's V0 engine start-up (releases before 0.8), step by step as ``vllm/worker/worker.py`` takes it.

What differs from V1 (``vllm.py``), each read from the 0.6.x source cited in
``data/engines.json`` (``lines`` -> ``v0``):

1. The profile batch: ``max_num_batched_tokens`` defaults to
   ``max(max_model_len, 2048)`` unless chunked prefill is on, and chunked
   prefill is on by default only above a 32K ``max_model_len`` (then 512
   tokens). So between 2K and 32K the profile run's activations grow with
   ``max_model_len`` and the KV cache shrinks as the context grows.
2. ``determine_num_available_blocks`` counts every non-torch byte on the
   device, the CUDA context included, inside ``gpu_memory_utilization``.
3. Every layer's cache block is full-length (no sliding-window pages), and the
   check is ``max_model_len <= block_size * num_gpu_blocks``.
"""

from __future__ import annotations

from dataclasses import dataclass

from estimator.engines import vllm
from estimator.engines.common import (
    Device,
    bytes_per_weight,
    device_for,
    engine_data,
    gib,
    largest_passing,
    quantization_note,
)
from estimator.engines.request import EngineRequest
from estimator.engines.shape import ServingShape
from estimator.engines.verdict import EngineVerdict
from estimator.engines.vllm_lines import Line


@dataclass(frozen=True)
class Start:
    """One V0 start-up at one ``max_model_len``, bytes per GPU; ``error`` None when it starts."""

    settings: vllm.Settings
    chunked: bool
    weights: int
    activation: int
    requested: float
    kv_tokens: int
    kv_bytes: int
    error: str | None


def profile_batch(
    request: EngineRequest, shape: ServingShape, length: int, line: Line
) -> tuple[int, bool]:
    """(max_num_batched_tokens, chunked prefill) as ``create_engine_config`` and
    ``SchedulerConfig`` set them for this ``max_model_len``."""
    v = line.values
    sliding = any(layer.sliding_window for layer, _ in shape.kv_layers)
    chunked = length > int(v["chunked_prefill_above_max_model_len"]) and not sliding
    if request.max_num_batched_tokens is not None:
        return request.max_num_batched_tokens, chunked
    if chunked:
        return int(v["chunked_max_num_batched_tokens"]), True
    return max(length, int(v["unchunked_min_batched_tokens"])), False


def start(
    shape: ServingShape, request: EngineRequest, device: Device, length: int, line: Line
) -> Start:
    """The V0 worker's start-up at ``length``: profile run, cache blocks, CUDA graphs."""
    d = engine_data(vllm.NAME).values
    batched, chunked = profile_batch(request, shape, length, line)
    s = vllm.Settings(
        gpu_memory_utilization=request.gpu_memory_utilization or d["gpu_memory_utilization"],
        block_size=request.block_size or d["block_size"],
        max_num_batched_tokens=batched,
        max_num_seqs=request.max_num_seqs or int(line.values["max_num_seqs"]),
        kv_cache_dtype=request.kv_cache_dtype,
        quantization=request.quantization,
        derived_max_model_len=vllm.derived_max_model_len(shape),
        dtype_bytes=request.dtype_bytes,
    )
    tp = request.tensor_parallel
    bpw = bytes_per_weight(s.quantization, request.group_size, s.dtype_bytes)
    weights = shape.weights_bytes(bpw, tp, s.dtype_bytes)
    activation = vllm.activation_peak(shape, s, tp, int(d["sampler_bytes_per_logit"]))
    non_torch = int(d["non_torch_bytes"]) + device.context_bytes
    total = device.total_bytes
    requested = total * s.gpu_memory_utilization
    free_at_start = total - device.context_bytes
    kv_dtype = 1 if s.kv_cache_dtype == "fp8" else s.dtype_bytes
    block_bytes = s.block_size * shape.kv_bytes_per_token(kv_dtype, tp)
    available = requested - (weights + activation + non_torch)
    blocks = max(int(available // block_bytes), 0) if block_bytes else 0
    tokens, kv_bytes = blocks * s.block_size, blocks * block_bytes
    error = _error(s, length, weights, activation, int(d["non_torch_bytes"]), free_at_start, total)
    if error is None and block_bytes and blocks <= 0:
        error = (
            "No available memory for the cache blocks. Try increasing "
            "`gpu_memory_utilization` when initializing the engine."
        )
    if error is None and block_bytes and length > tokens:
        error = (
            f"The model's max seq len ({length}) is larger than the maximum number of tokens "
            f"that can be stored in KV cache ({tokens}). Try increasing "
            "`gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine."
        )
    left = free_at_start - weights - int(d["non_torch_bytes"]) - kv_bytes
    if error is None and int(d["cuda_graph_bytes"]) > left:
        error = (
            "torch.OutOfMemoryError: CUDA out of memory while capturing CUDA graphs "
            f"({gib(left)} GiB left outside gpu_memory_utilization); pass --enforce-eager"
        )
    return Start(s, chunked, weights, activation, requested, tokens, kv_bytes, error)


def _error(
    s: vllm.Settings,
    length: int,
    weights: int,
    activation: int,
    non_torch: int,
    free_at_start: int,
    total: int,
) -> str | None:
    if length > s.derived_max_model_len:
        return (
            f"User-specified max_model_len ({length}) is greater than the derived "
            f"max_model_len (max_position_embeddings={s.derived_max_model_len} or "
            "model_max_length=None in model's config.json). This may lead to incorrect "
            "model outputs or CUDA errors. Make sure the value is correct and within the "
            "model context size."
        )
    if weights > free_at_start:
        return (
            "torch.OutOfMemoryError: CUDA out of memory while loading the model weights "
            f"({gib(weights)} GiB per GPU on a {gib(total)} GiB device)"
        )
    if weights + activation + non_torch > free_at_start:
        return (
            "torch.OutOfMemoryError: CUDA out of memory during the profile run of "
            f"max_num_batched_tokens={s.max_num_batched_tokens} tokens"
        )
    return None


def max_model_len_that_starts(
    shape: ServingShape, request: EngineRequest, device: Device, line: Line, derived: int
) -> int:
    """The largest length that starts. The profile batch follows the length up to the
    32K chunked-prefill threshold and is fixed above it, so each side is monotone and
    is searched on its own."""
    threshold = int(line.values["chunked_prefill_above_max_model_len"])

    def passes(n: int) -> bool:
        return start(shape, request, device, n, line).error is None

    above = largest_passing(threshold + 1, derived, passes) if derived > threshold else 0
    return above or largest_passing(1, min(threshold, derived), passes)


def simulate(shape: ServingShape, request: EngineRequest, line: Line) -> EngineVerdict:
    """The V0 engine's verdict at the requested (or derived) ``max_model_len``."""
    device = device_for(request)
    derived = vllm.derived_max_model_len(shape)
    length = request.max_model_len or derived
    at = start(shape, request, device, length, line)
    s = at.settings
    d = engine_data(vllm.NAME).values
    non_torch, graphs = int(d["non_torch_bytes"]), int(d["cuda_graph_bytes"])
    bpw = bytes_per_weight(s.quantization, request.group_size, s.dtype_bytes)
    return EngineVerdict(
        name=vllm.NAME,
        version_modelled=line.stated(request.version, ""),
        card=device.name,
        total_memory_bytes=device.total_bytes,
        tensor_parallel=request.tensor_parallel,
        settings=(
            ("gpu_memory_utilization", s.gpu_memory_utilization),
            ("block_size", s.block_size),
            ("max_num_batched_tokens", s.max_num_batched_tokens),
            ("enable_chunked_prefill", at.chunked),
            ("max_num_seqs", s.max_num_seqs),
            ("kv_cache_dtype", s.kv_cache_dtype),
            ("quantization", s.quantization),
            ("derived_max_model_len", derived),
            ("dtype", request.dtype),
        ),
        weights_bytes=at.weights,
        activation_peak_bytes=at.activation,
        non_torch_bytes=non_torch + device.context_bytes,
        cuda_graph_bytes=graphs,
        reserved_bytes=int(device.total_bytes - at.requested),
        kv_cache_bytes=at.kv_bytes,
        kv_cache_tokens=at.kv_tokens,
        max_model_len=length,
        max_concurrency=round(at.kv_tokens / length, 2) if shape.has_kv_cache else None,
        starts=at.error is None,
        error=at.error,
        max_model_len_that_starts=max_model_len_that_starts(shape, request, device, line, derived),
        assumptions=(
            quantization_note(s.quantization, bpw),
            f"weights, activations and KV cache in {request.dtype} ({s.dtype_bytes} B)",
            f"profile run over max_num_batched_tokens={s.max_num_batched_tokens} "
            f"({'chunked prefill, on by default above 32K' if at.chunked else 'max(max_model_len, 2048): no chunked prefill at or below 32K'})",
            f"the CUDA context ({gib(device.context_bytes)} GiB) counts inside "
            "gpu_memory_utilization, as V0's non-torch allocations do",
        ),
        sources=line.sources,
    )
