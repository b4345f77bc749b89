"""transformers ``generate()``: no start-up check and no pre-allocated KV pool.

The model loads when its weights fit; each sequence's cache then grows
token by token (a dynamic cache keeps every layer's K and V for all tokens).
So "starts at max_model_len" means: the weights, one prefill of
``max_model_len`` tokens and that sequence's cache fit on the card; the
KV cache figures are what the memory left after the weights would hold.
"""

from __future__ import annotations

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

NAME = "transformers"
LOGIT_BYTES = 2 + 4  # last position's logits in 16-bit, upcast to fp32 by generate()


def _needs(shape: ServingShape, length: int, dtype_bytes: int, tp: int) -> int:
    prefill = shape.forward_peak_bytes(length, tp) + LOGIT_BYTES * shape.vocab_size
    return prefill + length * shape.kv_bytes_per_token(dtype_bytes, tp)


def _error(shape: ServingShape, device: Device, weights: int, length: int, need: int) -> str | None:
    room = device.total_bytes - device.context_bytes
    if weights > room:
        return (
            "torch.OutOfMemoryError: CUDA out of memory while loading the model weights "
            f"({gib(weights)} GiB per GPU on a {gib(device.total_bytes)} GiB device)"
        )
    if weights + need > room:
        return (
            f"torch.OutOfMemoryError: CUDA out of memory: one sequence of {length} tokens needs "
            f"{gib(need)} GiB beside {gib(weights)} GiB of weights on a "
            f"{gib(device.total_bytes)} GiB device"
        )
    return None


def simulate(shape: ServingShape, request: EngineRequest) -> EngineVerdict:
    """Whether ``generate()`` holds the weights and one ``max_model_len`` sequence on the card."""
    data = engine_data(NAME)
    device = device_for(request)
    tp = request.tensor_parallel
    bpw = bytes_per_weight(request.quantization, request.group_size)
    weights = shape.weights_bytes(bpw, tp)
    dtype_bytes = 1 if request.kv_cache_dtype == "fp8" else 2
    context = shape.max_position_embeddings or 2048
    length = request.max_model_len or context
    need = _needs(shape, length, dtype_bytes, tp)
    error = _error(shape, device, weights, length, need)
    per_token = shape.kv_bytes_per_token(dtype_bytes, tp)
    activation = need - length * per_token
    room = device.total_bytes - device.context_bytes - weights - activation
    tokens = int(room // per_token) if per_token and room > 0 else 0
    that_starts = largest_passing(
        1,
        max(context, length),
        lambda n: _error(shape, device, weights, n, _needs(shape, n, dtype_bytes, tp)) is None,
    )
    return EngineVerdict(
        name=NAME,
        version_modelled=data.version_modelled,
        card=device.name,
        total_memory_bytes=device.total_bytes,
        tensor_parallel=tp,
        settings=(
            ("kv_cache_dtype", request.kv_cache_dtype),
            ("quantization", request.quantization),
            ("max_new_tokens_budget", length),
        ),
        weights_bytes=weights,
        activation_peak_bytes=activation,
        non_torch_bytes=0,
        cuda_graph_bytes=0,
        reserved_bytes=0,
        kv_cache_bytes=tokens * per_token,
        kv_cache_tokens=tokens,
        max_model_len=length,
        max_concurrency=round(tokens / length, 2) if per_token else None,
        starts=error is None,
        error=error,
        max_model_len_that_starts=that_starts,
        assumptions=(
            quantization_note(request.quantization, bpw),
            "dynamic KV cache: every layer keeps K and V of every token (no sliding-window cap)",
            "prefill of max_model_len tokens: one layer's transients plus the last logits",
        ),
        sources=data.sources,
    )
