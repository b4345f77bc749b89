"""vLLM's start-up decision, step by step as its v1 engine takes it.

1. ``Worker.init_device``: ``requested_memory = total_memory * gpu_memory_utilization``;
   free memory below that refuses to start.
2. ``determine_available_memory``: a profile run over ``max_num_batched_tokens``
   tokens; ``available = requested_memory - (weights + torch peak increase +
   non-torch increase)``.
3. ``check_enough_kv_cache_memory``: one request of ``max_model_len`` must fit
   (``FullAttentionSpec.max_memory_usage_bytes = cdiv(max_model_len, block_size)
   * page_size_bytes``; sliding-window layers hold ``window - 1 +
   max_num_batched_tokens`` tokens plus one block).
4. ``get_kv_cache_config_from_groups``: ``num_blocks = available // page_size //
   group_size``; "GPU KV cache size" is ``num_blocks // len(groups) * block_size``
   tokens and the maximum concurrency ``num_blocks / cdiv(per-request bytes,
   page_size)``.
5. CUDA graphs are captured after the KV cache is allocated, from what is left
   outside ``gpu_memory_utilization``.
The version and file of each step are in ``data/engines.json``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from estimator.engines.common import (
    Device,
    bytes_per_weight,
    device_for,
    engine_data,
    gib,
    quantization_note,
)
from estimator.engines.request import EngineRequest
from estimator.engines.shape import KvLayer, ServingShape
from estimator.engines.verdict import EngineVerdict
from estimator.engines.vllm_kv import (
    KvConfig,
    LayerSpec,
    Specs,
    kv_cache_config,
    longest_fitting,
    needed_memory,
)
from estimator.engines.vllm_lines import Line, line_for

NAME = "vllm"
# No KV cache: a start-up refused before allocating one, or no bytes left for it (shared).
NO_KV_CACHE = KvConfig(0, 0, 0, 0.0)
CONSERVING = "See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details."


@dataclass(frozen=True)
class Settings:
    """The arguments vLLM starts with: the request's flags, else its card-dependent defaults."""

    gpu_memory_utilization: float
    block_size: int
    max_num_batched_tokens: int
    max_num_seqs: int
    kv_cache_dtype: str
    quantization: str
    derived_max_model_len: int
    dtype_bytes: int = 2


def settings_for(request: EngineRequest, device: Device, shape: ServingShape) -> Settings:
    """Resolve each flag the request leaves None to vLLM's default for this card's size."""
    d = engine_data(NAME).values
    excluded = str(d["large_card_excludes"]).lower() in device.name.lower()
    size = "large" if device.total_bytes >= d["large_card_bytes"] and not excluded else "small"
    return Settings(
        gpu_memory_utilization=request.gpu_memory_utilization or d["gpu_memory_utilization"],
        block_size=request.block_size or d["block_size"],
        max_num_batched_tokens=request.max_num_batched_tokens or d["max_num_batched_tokens"][size],
        max_num_seqs=request.max_num_seqs or d["max_num_seqs"][size],
        kv_cache_dtype=request.kv_cache_dtype,
        quantization=request.quantization,
        derived_max_model_len=derived_max_model_len(shape),
        dtype_bytes=request.dtype_bytes,
    )


def derived_max_model_len(shape: ServingShape) -> int:
    """``_get_and_verify_max_len``: the config's length, scaled by RoPE scaling's factor.

    ``rope_type not in ("su", "longrope", "llama3")`` multiplies by ``factor``
    (YaRN from ``original_max_position_embeddings``); Gemma 3's length is
    already scaled, so it is left alone.
    """
    derived = float(shape.max_position_embeddings or 2048)
    rope = dict(shape.rope_scaling or ())
    if rope and "gemma3" not in shape.model_type:
        rope_type = rope.get("rope_type", rope.get("type", "default"))
        if rope_type not in ("su", "longrope", "llama3"):
            factor = rope.get("factor", 1.0)
            original = rope.get("original_max_position_embeddings")
            if rope_type == "yarn" and isinstance(original, (int, float)):
                derived = float(original)
            if isinstance(factor, (int, float)) and factor > 0:
                derived *= float(factor)
    return max(1, min(int(derived), 1 << 24))


def layer_specs(shape: ServingShape, s: Settings, tp: int) -> Specs:
    """Each distinct per-GPU layer spec with its layer count; an fp8 cache stores 1 B per value."""
    dtype_bytes = 1 if s.kv_cache_dtype == "fp8" else s.dtype_bytes
    counts: dict[LayerSpec, int] = {}
    for layer, n in shape.kv_layers:
        spec = _spec(layer, s.block_size, dtype_bytes, tp)
        counts[spec] = counts.get(spec, 0) + n
    return tuple(counts.items())


def _spec(layer: KvLayer, block_size: int, dtype_bytes: int, tp: int) -> LayerSpec:
    return LayerSpec(
        block_size,
        layer.heads_per_gpu(tp),
        layer.head_size,
        dtype_bytes,
        layer.latent,
        layer.sliding_window,
    )


def activation_peak(shape: ServingShape, s: Settings, tp: int, per_logit: int) -> int:
    """Torch peak increase of ``profile_run``: a forward over the token budget, then the sampler."""
    tokens = s.max_num_batched_tokens
    forward = shape.forward_peak_bytes(tokens, tp, s.dtype_bytes)
    num_reqs = min(s.max_num_seqs, tokens)
    sampler = tokens * s.dtype_bytes * shape.hidden_size + num_reqs * shape.vocab_size * per_logit
    return max(forward, sampler)


def simulate(shape: ServingShape, request: EngineRequest) -> EngineVerdict:
    """The start-up of the vLLM line ``request.version`` falls in (the V0 engine before
    0.8: ``vllm_v0``), the current release's V1 engine when no version is given."""
    line = line_for(request.version)
    if line.name == "v0":
        from estimator.engines import vllm_v0

        return vllm_v0.simulate(shape, request, line)
    device = device_for(request)
    s = settings_for(request, device, shape)
    length = request.max_model_len or s.derived_max_model_len
    return _run(shape, request, device, s, length, line)


@dataclass(frozen=True)
class Decision:
    """One start-up's figures (bytes per GPU); ``error`` is vLLM's message, None when it starts."""

    weights: int
    activation: int
    requested: float
    kv: KvConfig
    error: str | None
    # What the one length-dependent check reads: each layer spec's count, the bytes for the cache.
    specs: Specs
    available: int


def decide(
    shape: ServingShape,
    request: EngineRequest,
    device: Device,
    s: Settings,
    length: int,
    explain: bool = True,
) -> Decision:
    """Every start-up check in vLLM's order; the first that fails is the engine's error."""
    d = engine_data(NAME).values
    tp = request.tensor_parallel
    bpw = bytes_per_weight(s.quantization, request.group_size, s.dtype_bytes)
    weights = shape.weights_bytes(bpw, tp, s.dtype_bytes)
    activation = activation_peak(shape, s, tp, int(d["sampler_bytes_per_logit"]))
    non_torch = int(d["non_torch_bytes"])
    total = device.total_bytes
    requested = total * s.gpu_memory_utilization
    free_at_start = total - device.context_bytes
    specs = layer_specs(shape, s, tp)
    available = int(requested - (weights + activation + non_torch))
    error = _early_error(s, length, free_at_start, requested, total, weights)
    if error is None and non_torch + activation + weights > free_at_start:
        error = (
            "torch.OutOfMemoryError: CUDA out of memory during the profile run of "
            f"max_num_batched_tokens={s.max_num_batched_tokens} tokens"
        )
    if error is None and not specs and available <= 0:
        error = "No available memory for the cache blocks. " + CONSERVING
    if error is not None or not specs:
        return Decision(weights, activation, requested, NO_KV_CACHE, error, specs, available)
    # What the pool would hold is reported even when one request of max_model_len does not fit.
    kv = (
        NO_KV_CACHE
        if available <= 0
        else kv_cache_config(specs, available, length, s.max_num_batched_tokens)
    )
    error = _kv_error(specs, available, length, s, explain)
    if error is not None:
        return Decision(weights, activation, requested, kv, error, specs, available)
    left = free_at_start - weights - non_torch - kv.bytes
    if int(d["cuda_graph_bytes"]) > left:
        error = (
            "torch.OutOfMemoryError: CUDA out of memory while capturing CUDA graphs "
            f"({gib(left)} GiB left outside gpu_memory_utilization "
            f"{s.gpu_memory_utilization}); pass --enforce-eager or lower "
            "--gpu-memory-utilization"
        )
    return Decision(weights, activation, requested, kv, error, specs, available)


def max_model_len_that_starts(
    shape: ServingShape,
    request: EngineRequest,
    device: Device,
    s: Settings,
    taken: Decision | None = None,
) -> int:
    """The largest length in 1..derived at which ``decide`` finds no error (0: none).

    Of ``decide``'s checks only ``_kv_error``'s "one request of max_model_len
    must fit" reads a length at or below the derived one, and its KV bytes
    grow with the length; every other check fails at every length or at none.
    So ``decide`` runs once, at length 1, and only that inequality is solved
    (``longest_fitting``, vLLM's ``estimate_max_model_len``), on each of the card
    table's cards. ``taken``: a decision already taken at some length; when it
    starts, length 1 starts too, and the start-up is not run again.
    """
    first = taken if taken is not None and taken.error is None else None
    if first is None:
        first = decide(shape, request, device, s, 1, explain=False)
    if first.error is not None:
        return 0
    return longest_fitting(
        first.specs, first.available, s.max_num_batched_tokens, s.derived_max_model_len
    )


def _run(
    shape: ServingShape,
    request: EngineRequest,
    device: Device,
    s: Settings,
    length: int,
    line: Line,
) -> EngineVerdict:
    data = engine_data(NAME)
    d = data.values
    tp = request.tensor_parallel
    bpw = bytes_per_weight(s.quantization, request.group_size, s.dtype_bytes)
    at = decide(shape, request, device, s, length)
    that_starts = max_model_len_that_starts(shape, request, device, s, at)
    settings = (
        ("gpu_memory_utilization", s.gpu_memory_utilization),
        ("block_size", s.block_size),
        ("max_num_batched_tokens", s.max_num_batched_tokens),
        ("max_num_seqs", s.max_num_seqs),
        ("kv_cache_dtype", s.kv_cache_dtype),
        ("quantization", s.quantization),
        ("derived_max_model_len", s.derived_max_model_len),
        ("dtype", request.dtype),
    )
    non_torch, graphs = int(d["non_torch_bytes"]), int(d["cuda_graph_bytes"])
    return EngineVerdict(
        name=NAME,
        version_modelled=line.stated(request.version, data.version_modelled),
        card=device.name,
        total_memory_bytes=device.total_bytes,
        tensor_parallel=tp,
        settings=settings,
        weights_bytes=at.weights,
        activation_peak_bytes=at.activation,
        non_torch_bytes=non_torch,
        cuda_graph_bytes=graphs,
        reserved_bytes=int(device.total_bytes - at.requested),
        kv_cache_bytes=at.kv.bytes,
        kv_cache_tokens=at.kv.tokens,
        max_model_len=length,
        max_concurrency=round(at.kv.max_concurrency, 2) if shape.has_kv_cache else None,
        starts=at.error is None,
        error=at.error,
        max_model_len_that_starts=that_starts,
        assumptions=_assumptions(s, request.dtype, bpw, tp, non_torch, graphs),
        sources=data.sources + line.sources,
    )


@lru_cache(maxsize=64)
def _assumptions(
    s: Settings, dtype: str, bpw: float, tp: int, non_torch: int, graphs: int
) -> tuple[str, ...]:
    """The verdict's assumptions: the same on every card of a size class, so written once."""
    return (
        quantization_note(s.quantization, bpw),
        f"weights, activations and KV cache in {dtype} "
        f"({s.dtype_bytes} B); KV cache "
        f"{'fp8' if s.kv_cache_dtype == 'fp8' else 'in the model dtype'}, block_size "
        f"{s.block_size}, KV heads split over {tp} GPU(s) (at least one per GPU)",
        "profile run: one layer's forward transients for max_num_batched_tokens tokens, "
        "then the sampler over min(max_num_seqs, max_num_batched_tokens) rows (modelled)",
        f"non-torch memory {gib(non_torch)} GiB and CUDA graphs {gib(graphs)} GiB "
        "are modelled constants, not measured",
        f"derived max_model_len {s.derived_max_model_len:,}: max_position_embeddings "
        "scaled by rope_scaling as _get_and_verify_max_len scales it",
    )


def _early_error(
    s: Settings,
    length: int,
    free_at_start: int,
    requested: float,
    total: int,
    weights: int,
) -> str | None:
    if length > s.derived_max_model_len:
        return (
            f"User-specified max_model_len ({length}) is greater than the derived "
            f"max_model_len (max_position_embeddings={s.derived_max_model_len} or "
            "model_max_length=None in model's config.json). To allow overriding this "
            "maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1."
        )
    if s.max_num_batched_tokens < s.max_num_seqs:
        return (
            f"max_num_batched_tokens ({s.max_num_batched_tokens}) must be greater than or "
            f"equal to max_num_seqs ({s.max_num_seqs})."
        )
    if free_at_start < requested:
        return (
            f"Free memory on device ({gib(free_at_start)}/{gib(total)} GiB) on startup is "
            f"less than desired GPU memory utilization ({s.gpu_memory_utilization}, "
            f"{gib(requested)} GiB). Decrease GPU memory utilization or reduce GPU memory "
            "used by other processes."
        )
    if weights > free_at_start:
        return (
            "torch.OutOfMemoryError: CUDA out of memory while loading the model weights "
            f"({gib(weights)} GiB per GPU on a {gib(total)} GiB device)"
        )
    return None


def _kv_error(
    specs: Specs, available: int, length: int, s: Settings, explain: bool = True
) -> str | None:
    """``_check_enough_kv_cache_memory``, message for message."""
    if available <= 0:
        return (
            "No available memory for the cache blocks. Try increasing "
            "`gpu_memory_utilization` when initializing the engine. " + CONSERVING
        )
    needed = needed_memory(specs, length, s.max_num_batched_tokens)
    if needed <= available:
        return None
    if not explain:
        return "KV cache too small"
    estimated = longest_fitting(specs, available, s.max_num_batched_tokens, length)
    estimated_msg = (
        f"Based on the available memory, the estimated maximum model length is {estimated}. "
        if estimated > 0
        else ""
    )
    return (
        f"To serve at least one request with the models's max seq len ({length}), "
        f"({gib(needed)} GiB KV cache is needed, which is larger than the available KV cache "
        f"memory ({gib(available)} GiB). {estimated_msg}"
        "Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when "
        "initializing the engine. " + CONSERVING
    )
