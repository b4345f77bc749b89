"""SGLang's start-up decision: ``mem_fraction_static`` and the token pool it leaves.

``ServerArgs._handle_gpu_memory_settings`` picks ``chunked_prefill_size`` and
``cuda_graph_max_bs`` by device memory (MiB), reserves
``512 + max(chunked_prefill_size, 2048) * 1.5 + cuda_graph_max_bs * 2 +
tp * pp / 8 * 1024`` MiB (at least 10 GiB above 60 GiB) and sets
``mem_fraction_static = round((gpu_mem - reserved) / gpu_mem, 3)``. After the
weights load, ``ModelRunner.profile_max_num_token`` keeps
``rest = available - total * (1 - mem_fraction_static)`` GB for the KV pool,
``max_total_num_tokens = int(rest * 2**30 // cell_size)``. SGLang does not
refuse a context longer than the pool: it starts and rejects such prompts
per request, so ``starts`` is false only when the pool is empty or the
weights do not load.

Before 0.5 (``EngineRequest.version``; ``data/engines.json`` ``lines``) the
fraction did not depend on the device: ``mem_fraction_static`` was 0.88 on one
GPU, lower with more tensor-parallel ranks, and ``chunked_prefill_size`` 2048
below 25,000 MB, else 8192.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from estimator.engines.common import (
    bytes_per_weight,
    device_for,
    engine_data,
    gib,
    quantization_note,
)
from estimator.engines.request import EngineRequest
from estimator.engines.shape import ServingShape
from estimator.engines.verdict import EngineVerdict

NAME = "sglang"
MIB = 2**20


def bucket(values: Mapping[str, Any], gpu_mem_mib: float, tp: int) -> tuple[int, int]:
    """(chunked_prefill_size, cuda_graph_max_bs) for this device, as server_args picks them."""
    for entry in values["buckets_mib"]:
        if entry["below_mib"] is None or gpu_mem_mib < entry["below_mib"]:
            graphs = entry["cuda_graph_max_bs_tp4" if tp >= 4 else "cuda_graph_max_bs"]
            return int(entry["chunked_prefill_size"]), int(graphs)
    raise AssertionError("the last bucket has no upper bound")


def mem_fraction_static(
    values: Mapping[str, Any], gpu_mem_mib: float, chunked: int, graphs: int, tp: int
) -> float:
    """SGLang's default fraction for the device (MiB): what the reservation leaves, 3 decimals."""
    reserved = 512 + max(chunked, 2048) * 1.5 + graphs * 2 + tp * 1 / 8 * 1024
    if gpu_mem_mib > 60 * 1024:
        reserved = max(reserved, float(values["reserved_floor_mib_above_60gib"]))
    return round((gpu_mem_mib - reserved) / gpu_mem_mib, 3)


def _line(version: str | None) -> Mapping[str, Any]:
    from estimator.stacks.pins import at_least, release

    lines = engine_data(NAME).values["lines"]
    if version is None:
        return dict(lines[-1])
    parsed = release(version)
    for line in lines:
        low = line["from"] is None or at_least(parsed, release(line["from"]))
        high = line["below"] is None or not at_least(parsed, release(line["below"]))
        if low and high:
            return dict(line)
    return dict(lines[-1])


def ladder_fraction(line: Mapping[str, Any], tp: int) -> float:
    """The 0.4 line's ``mem_fraction_static`` for ``tp`` ranks."""
    return float(next(f for ranks, f in line["mem_fraction_static_by_tp"] if tp >= ranks))


def cell_size(shape: ServingShape, dtype_bytes: int, tp: int) -> int:
    """Bytes of one token in the pool, summed over layers (K and V, or MLA's latent)."""
    return shape.kv_bytes_per_token(dtype_bytes, tp)


def simulate(shape: ServingShape, request: EngineRequest) -> EngineVerdict:
    """Whether SGLang starts with ``request``'s flags and the KV token pool it gets."""
    data = engine_data(NAME)
    d = data.values
    device = device_for(request)
    tp = request.tensor_parallel
    gpu_mem_mib = device.total_bytes / MIB
    line = _line(request.version)
    chunked, graphs = bucket(d, gpu_mem_mib, tp)
    if "mem_fraction_static_by_tp" in line:
        small = gpu_mem_mib < line["chunked_prefill_small_below_mib"]
        chunked = int(line["chunked_prefill_small" if small else "chunked_prefill_large"])
    if request.max_num_batched_tokens is not None:
        chunked = request.max_num_batched_tokens
    fraction = request.gpu_memory_utilization or (
        ladder_fraction(line, tp)
        if "mem_fraction_static_by_tp" in line
        else mem_fraction_static(d, gpu_mem_mib, chunked, graphs, tp)
    )
    bpw = bytes_per_weight(request.quantization, request.group_size, request.dtype_bytes)
    weights = shape.weights_bytes(bpw, tp, request.dtype_bytes)
    dtype_bytes = 1 if request.kv_cache_dtype == "fp8" else request.dtype_bytes
    cell = cell_size(shape, dtype_bytes, tp)
    # total_gpu_memory: free memory when the runner starts, before the weights load
    total_free = device.total_bytes - device.context_bytes
    available_after_weights = total_free - weights
    rest = available_after_weights - total_free * (1 - fraction)
    tokens = int(rest // cell) if cell and rest > 0 else 0
    context_len = request.max_model_len or shape.max_position_embeddings or 2048
    error: str | None = None
    if weights > total_free:
        error = (
            "torch.OutOfMemoryError: CUDA out of memory while loading the model weights "
            f"({gib(weights)} GiB per GPU on a {gib(device.total_bytes)} GiB device)"
        )
    elif cell and tokens <= 0:
        error = "Not enough memory. Please try to increase --mem-fraction-static."
    elif cell and min(context_len - 1, tokens - 1) - 5 <= 0:
        # tp_worker: max_req_input_len = min(context_len - 1, max_total_num_tokens - 1) - 5
        error = "AssertionError: Memory pool size is too small"
    starts = error is None
    return EngineVerdict(
        name=NAME,
        version_modelled=(
            f"current release: {data.version_modelled}"
            if request.version is None
            else f"sglang {request.version}: {line['version_modelled']}"
        ),
        card=device.name,
        total_memory_bytes=device.total_bytes,
        tensor_parallel=tp,
        settings=(
            ("mem_fraction_static", fraction),
            ("chunked_prefill_size", chunked),
            ("cuda_graph_max_bs", graphs),
            ("page_size", request.block_size or int(d["page_size"])),
            ("kv_cache_dtype", request.kv_cache_dtype),
            ("quantization", request.quantization),
            ("context_length", context_len),
        ),
        weights_bytes=weights,
        activation_peak_bytes=shape.forward_peak_bytes(chunked, tp, request.dtype_bytes),
        non_torch_bytes=0,
        cuda_graph_bytes=0,
        reserved_bytes=int(total_free * (1 - fraction)),
        kv_cache_bytes=tokens * cell if starts else 0,
        kv_cache_tokens=tokens if starts else 0,
        max_model_len=context_len,
        max_concurrency=round(tokens / context_len, 2) if starts and cell else None,
        starts=starts,
        error=error,
        max_model_len_that_starts=context_len if starts else 0,
        assumptions=(
            quantization_note(request.quantization, bpw),
            "activations and CUDA graphs live in the (1 - mem_fraction_static) reserve; "
            "SGLang does not measure them at start-up",
            f"prompts longer than max_total_num_tokens - 1 ({max(tokens - 1, 0):,}) are "
            "rejected per request; the server still starts",
        ),
        sources=data.sources + tuple(line["sources"]),
    )
