"""Text Generation Inference's start-up decision: ``max_batch_total_tokens`` from the warmup.

The launcher caps ``max_total_tokens`` at 4096 unless it is given
(``--max-model-len`` here), with ``max_input_tokens = max_total_tokens - 1``
and ``max_batch_prefill_tokens = max_input_tokens + 50``. The server's
``warmup`` runs one prefill of ``max_batch_prefill_tokens`` tokens (an OOM
there is "Not enough memory to handle N prefill tokens"), then sizes the
paged cache from the free memory it measures:
``num_blocks = int(free * TGI_WIGGLE_ROOM // total_cache_size) + batch_num_blocks``
and returns ``num_blocks * BLOCK_SIZE`` as ``max_batch_total_tokens``. The
router refuses to start when ``max_total_tokens`` exceeds it.
"""

from __future__ import annotations

from dataclasses import dataclass

from estimator.engines.common import (
    Device,
    bytes_per_weight,
    cdiv,
    device_for,
    engine_data,
    gib,
    largest_passing,
    quantization_note,
)
from estimator.engines.request import EngineRequest
from estimator.engines.shape import ServingShape
from estimator.engines.verdict import EngineVerdict

NAME = "tgi"


@dataclass(frozen=True)
class Warmup:
    """What TGI's warmup measured and sized (bytes, blocks, tokens); ``error``: its OOM message."""

    prefill_tokens: int
    activation: int
    total_cache_size: int
    num_blocks: int
    max_batch_total_tokens: int
    reserved: int
    error: str | None


def total_cache_size(shape: ServingShape, block_size: int, dtype_bytes: int, tp: int) -> int:
    """``num_layers * BLOCK_SIZE * num_kv_heads * head_size * 2 * dtype_size`` for one block."""
    return block_size * shape.kv_bytes_per_token(dtype_bytes, tp)


def warmup(
    shape: ServingShape,
    request: EngineRequest,
    device: Device,
    max_total_tokens: int,
    weights: int,
) -> Warmup:
    """TGI's warmup: one prefill of the batch budget, then the paged cache from the memory left."""
    d = engine_data(NAME).values
    tp = request.tensor_parallel
    block = request.block_size or int(d["block_size"])
    prefill = request.max_num_batched_tokens or (
        max_total_tokens - 1 + int(d["prefill_tokens_over_input"])
    )
    dtype_bytes = 1 if request.kv_cache_dtype == "fp8" else 2
    per_block = total_cache_size(shape, block, dtype_bytes, tp)
    batch_blocks = cdiv(prefill, block) if per_block else 0
    # The prefill's transients stay reserved by the caching allocator when free memory is read.
    activation = shape.forward_peak_bytes(prefill, tp) + 4 * shape.vocab_size
    used = device.context_bytes + weights + batch_blocks * per_block + activation
    if used > device.total_bytes:
        error = (
            f"Not enough memory to handle {prefill} prefill tokens. "
            "You need to decrease `--max-batch-prefill-tokens`"
        )
        return Warmup(prefill, activation, per_block, 0, 0, 0, error)
    fraction = float(d["memory_fraction"])
    free = max(0.0, device.total_bytes - used - (1 - fraction) * device.total_bytes)
    reserved = int(free * (1 - float(d["wiggle_room"])))
    if not per_block:
        return Warmup(prefill, activation, 0, 0, 0, reserved, None)
    num_blocks = int((free * float(d["wiggle_room"])) // per_block) + batch_blocks
    return Warmup(prefill, activation, per_block, num_blocks, num_blocks * block, reserved, None)


def decide(
    shape: ServingShape, request: EngineRequest, device: Device, max_total_tokens: int
) -> tuple[int, Warmup, str | None]:
    """(weights per GPU, warmup, the error TGI stops with or None) at ``max_total_tokens``."""
    weights = shape.weights_bytes(
        bytes_per_weight(request.quantization, request.group_size), request.tensor_parallel
    )
    if weights + device.context_bytes > device.total_bytes:
        error = (
            "torch.OutOfMemoryError: CUDA out of memory while loading the model weights "
            f"({gib(weights)} GiB per GPU on a {gib(device.total_bytes)} GiB device)"
        )
        return weights, Warmup(0, 0, 0, 0, 0, 0, error), error
    w = warmup(shape, request, device, max_total_tokens, weights)
    if w.error is not None:
        return weights, w, w.error
    if shape.has_kv_cache and max_total_tokens > w.max_batch_total_tokens:
        return weights, w, f"Not enough memory to handle `max_total_tokens={max_total_tokens}`"
    return weights, w, None


def simulate(shape: ServingShape, request: EngineRequest) -> EngineVerdict:
    """Whether TGI starts with ``request``'s flags; the longest ``max_total_tokens`` that does."""
    data = engine_data(NAME)
    d = data.values
    device = device_for(request)
    context = shape.max_position_embeddings or int(d["max_total_tokens_default"])
    max_total = request.max_model_len or min(context, int(d["max_total_tokens_default"]))
    weights, w, error = decide(shape, request, device, max_total)
    that_starts = largest_passing(
        2, context, lambda n: decide(shape, request, device, n)[2] is None
    )
    bpw = bytes_per_weight(request.quantization, request.group_size)
    starts = error is None
    return EngineVerdict(
        name=NAME,
        version_modelled=data.version_modelled,
        card=device.name,
        total_memory_bytes=device.total_bytes,
        tensor_parallel=request.tensor_parallel,
        settings=(
            ("max_total_tokens", max_total),
            ("max_input_tokens", max_total - 1),
            ("max_batch_prefill_tokens", w.prefill_tokens),
            ("block_size", request.block_size or int(d["block_size"])),
            ("tgi_wiggle_room", float(d["wiggle_room"])),
            ("cuda_memory_fraction", float(d["memory_fraction"])),
            ("kv_cache_dtype", request.kv_cache_dtype),
            ("quantization", request.quantization),
        ),
        weights_bytes=weights,
        activation_peak_bytes=w.activation,
        non_torch_bytes=0,
        cuda_graph_bytes=0,
        reserved_bytes=w.reserved,
        kv_cache_bytes=w.num_blocks * w.total_cache_size,
        kv_cache_tokens=w.max_batch_total_tokens,
        max_model_len=max_total,
        max_concurrency=(
            round(w.max_batch_total_tokens / max_total, 2) if shape.has_kv_cache else None
        ),
        starts=starts,
        error=error,
        max_model_len_that_starts=that_starts,
        assumptions=(
            quantization_note(request.quantization, bpw),
            "warmup prefill: one layer's transients for max_batch_prefill_tokens tokens stay "
            "reserved when free memory is read (modelled); logits of the last token only",
            "--max-model-len stands for --max-total-tokens; --max-num-batched-tokens for "
            "--max-batch-prefill-tokens",
        ),
        sources=data.sources,
    )
