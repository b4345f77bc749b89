"""vLLM's start-up arithmetic, checked against the formulas as vLLM's source writes them.

Each expected value is recomputed here from the quoted source line, not from
our module: ``requested_memory = total_memory * gpu_memory_utilization``,
``available = requested_memory - non_kv_cache_memory``,
``page_size_bytes = 2 * block_size * num_kv_heads * head_size * dtype_size``,
``num_blocks = available // page_size // num_layers`` and
``max_concurrency = num_blocks / cdiv(max_model_len, block_size)``.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest

from estimator.cards import all_cards
from estimator.engines import EngineRequest, simulate_engine
from estimator.engines.common import Device, device_for, largest_passing
from estimator.engines.shape import ServingShape, serving_shape
from estimator.engines.vllm import (
    LayerSpec,
    Settings,
    decide,
    max_model_len_that_starts,
    settings_for,
    simulate,
)
from estimator.errors import EstimateError
from estimator.families import describe
from estimator.memory import split_parameters
from tests.estimator.archbuilder import llama_like

GIB = 2**30


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def format_gib(b: float) -> float:  # vllm/utils/mem_utils.py
    return round(b / GIB, 2)


ARCH = llama_like(hidden=4096, layers=32, heads=32, kv_heads=8, intermediate=14336, vocab=128256)
SPLIT = split_parameters(ARCH)


def verdict(**kw: object):  # type: ignore[no-untyped-def]
    return simulate_engine(ARCH, SPLIT, EngineRequest(engine="vllm", **kw))  # type: ignore[arg-type]


def test_kv_cache_blocks_tokens_and_concurrency_follow_vllms_formulas() -> None:
    total = 24 * GIB
    v = verdict(card_memory_bytes=total, max_model_len=4096)
    assert v.starts and v.error is None
    requested = total * 0.9  # gpu_memory_utilization default 0.9
    non_kv = v.weights_bytes + v.activation_peak_bytes + v.non_torch_bytes
    available = int(requested - non_kv)
    page = 2 * 16 * 8 * (4096 // 32) * 2  # block 16, 8 KV heads, head 128, bf16
    num_blocks = available // page // 32
    assert v.weights_bytes == SPLIT.total * 2
    assert v.kv_cache_tokens == num_blocks * 16
    assert v.kv_cache_bytes == num_blocks * page * 32
    assert v.max_concurrency == round(num_blocks / cdiv(4096, 16), 2)
    assert v.reserved_bytes == int(total - requested)
    # the small-card defaults of get_batch_defaults (under 70 GiB)
    settings = dict(v.settings)
    assert (settings["max_num_batched_tokens"], settings["max_num_seqs"]) == (2048, 256)


def test_a_context_the_kv_cache_cannot_hold_is_refused_in_vllms_words() -> None:
    probe = verdict(card_memory_bytes=24 * GIB, max_model_len=4096)
    non_kv = probe.weights_bytes + probe.activation_peak_bytes + probe.non_torch_bytes
    util = (non_kv + 300 * 2**20) / (24 * GIB)  # leaves ~300 MiB for the KV cache
    v = verdict(card_memory_bytes=24 * GIB, max_model_len=4096, gpu_memory_utilization=util)
    available = int(24 * GIB * util - non_kv)
    page = 2 * 16 * 8 * 128 * 2
    needed = 32 * cdiv(4096, 16) * page  # sum of FullAttentionSpec.max_memory_usage_bytes
    estimated = available // (32 * page) * 16  # what estimate_max_model_len's search finds
    assert not v.starts
    assert v.error == (
        "To serve at least one request with the models's max seq len (4096), "
        f"({format_gib(needed)} GiB KV cache is needed, which is larger than the available "
        f"KV cache memory ({format_gib(available)} GiB). Based on the available memory, the "
        f"estimated maximum model length is {estimated}. Try increasing "
        "`gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine. "
        "See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details."
    )
    assert v.max_model_len_that_starts == estimated
    at = verdict(card_memory_bytes=24 * GIB, max_model_len=estimated, gpu_memory_utilization=util)
    above = verdict(
        card_memory_bytes=24 * GIB, max_model_len=estimated + 1, gpu_memory_utilization=util
    )
    assert at.starts and not above.starts


def test_no_memory_left_for_the_cache_is_vllms_first_refusal() -> None:
    probe = verdict(card_memory_bytes=24 * GIB, max_model_len=1024)
    non_kv = probe.weights_bytes + probe.activation_peak_bytes + probe.non_torch_bytes
    v = verdict(
        card_memory_bytes=24 * GIB,
        max_model_len=1024,
        gpu_memory_utilization=(non_kv - 2**20) / (24 * GIB),
    )
    assert v.error == (
        "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` "
        "when initializing the engine. See "
        "https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details."
    )
    assert v.max_model_len_that_starts == 0


def test_free_memory_below_the_requested_share_refuses_to_start() -> None:
    v = verdict(card="T4", gpu_memory_utilization=0.99, max_model_len=1024)
    assert v.error is not None
    assert v.error.startswith("Free memory on device (14.65/15.0 GiB) on startup is less than")
    assert "(0.99, 14.85 GiB)" in v.error


def test_sliding_window_layers_hold_the_window_plus_one_chunk() -> None:
    # SlidingWindowSpec: min(sliding_window - 1 + max_num_batched_tokens, max_model_len)
    # tokens, plus one block "because the sliding window may not start from the beginning".
    spec = LayerSpec(16, 8, 128, 2, False, 4096)
    page = 2 * 16 * 8 * 128 * 2
    assert spec.page_size_bytes == page
    assert spec.max_memory_usage_bytes(32768, 2048) == (cdiv(4095 + 2048, 16) + 1) * page
    assert spec.max_memory_usage_bytes(1000, 2048) == (cdiv(1000, 16) + 1) * page


def test_fp8_kv_cache_halves_the_page_and_doubles_the_tokens() -> None:
    bf16 = verdict(card="H100 80GB", max_model_len=4096)
    fp8 = verdict(card="H100 80GB", max_model_len=4096, kv_cache_dtype="fp8")
    assert fp8.kv_cache_tokens == pytest.approx(2 * bf16.kv_cache_tokens, abs=32)
    settings = dict(bf16.settings)  # >= 70 GiB and not an A100: the large defaults
    assert (settings["max_num_batched_tokens"], settings["max_num_seqs"]) == (8192, 1024)
    a100 = dict(verdict(card="A100 80GB", max_model_len=4096).settings)
    assert a100["max_num_batched_tokens"] == 2048


def test_tensor_parallel_splits_weights_and_kv_heads() -> None:
    one = verdict(card="L4", max_model_len=4096)
    two = verdict(card="L4", max_model_len=4096, tensor_parallel=2)
    assert two.weights_bytes == SPLIT.total * 2 // 2
    assert two.kv_cache_tokens > 2 * one.kv_cache_tokens  # half the page, more room per GPU


def test_awq_weights_are_a_quarter_of_the_block_linears() -> None:
    v = verdict(card="L4", max_model_len=4096, quantization="awq")
    outside = SPLIT.total - SPLIT.block_linears
    expected = SPLIT.block_linears * (0.5 + 2.5 / 128) + outside * 2
    assert v.weights_bytes == math.floor(expected)


def test_a_max_model_len_beyond_the_config_is_refused() -> None:
    v = verdict(card="H100 80GB", max_model_len=8192)
    assert v.error is not None
    assert v.error.startswith("User-specified max_model_len (8192) is greater than the derived")
    assert v.max_model_len_that_starts == 4096


@pytest.mark.parametrize(
    ("model_type", "length", "rope", "derived"),
    [
        (
            "qwen2",
            32768,
            {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768},
            131072,
        ),
        (
            "llama",
            131072,
            {"rope_type": "llama3", "factor": 32.0, "original_max_position_embeddings": 8192},
            131072,
        ),
        ("gemma3_text", 131072, {"rope_type": "linear", "factor": 8.0}, 131072),
        ("llama", 4096, {"type": "dynamic", "factor": 2.0}, 8192),
        ("llama", None, None, 2048),
    ],
)
def test_derived_max_model_len_scales_as_get_and_verify_max_len_does(
    model_type: str, length: int | None, rope: dict[str, object] | None, derived: int
) -> None:
    # if rope_type not in ("su", "longrope", "llama3"): yarn starts from
    # original_max_position_embeddings, then derived_max_model_len *= scaling_factor;
    # "Gemma3's max_model_len (128K) is already scaled by RoPE scaling".
    from estimator.engines.shape import ServingShape
    from estimator.engines.vllm import derived_max_model_len

    rope_items = None if rope is None else tuple(rope.items())
    shape = ServingShape(1, 1, 1, 1, length, (), 1, 1, 1, model_type, rope_items)
    assert derived_max_model_len(shape) == derived


def distinct_corpus_configs(corpus_dir: Path) -> list[dict[str, object]]:
    """Every corpus config.json the estimator describes, once per distinct content."""
    seen: dict[str, dict[str, object]] = {}
    for path in sorted(corpus_dir.glob("*/*/*/config.json")):
        text = path.read_text()
        try:
            seen.setdefault(text, json.loads(text))
        except json.JSONDecodeError:
            continue
    return list(seen.values())


def _bisect_whole_start_up(
    shape: ServingShape, request: EngineRequest, device: Device, s: Settings
) -> int:
    return largest_passing(
        1,
        s.derived_max_model_len,
        lambda n: decide(shape, request, device, s, n, explain=False).error is None,
    )


@pytest.mark.parametrize(
    "request_",
    [
        EngineRequest(engine="vllm"),
        EngineRequest(engine="vllm", kv_cache_dtype="fp8", quantization="awq"),
        EngineRequest(engine="vllm", tensor_parallel=2, gpu_memory_utilization=0.95),
    ],
    ids=["defaults", "fp8-kv-awq", "tp2"],
)
def test_the_largest_length_that_starts_is_the_whole_start_up_bisected(
    corpus_dir: Path, request_: EngineRequest
) -> None:
    # The search asks one KV inequality per step; bisecting the whole decide() must agree.
    compared = starting = 0
    for config in distinct_corpus_configs(corpus_dir):
        try:
            arch = describe(config)
        except EstimateError:
            continue
        shape = serving_shape(arch, split_parameters(arch))
        for c in all_cards():
            on_card = replace(request_, card=c.name)
            device = device_for(on_card)
            s = settings_for(on_card, device, shape)
            whole = _bisect_whole_start_up(shape, on_card, device, s)
            assert max_model_len_that_starts(shape, on_card, device, s) == whole
            # The verdict reuses its own decision at max_model_len when that one starts.
            assert simulate(shape, on_card).max_model_len_that_starts == whole
            compared += 1
            starting += whole > 0
    assert compared > 1000 and 0 < starting < compared
