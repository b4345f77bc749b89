"""SGLang, TGI and transformers start-up arithmetic, each against its engine's own formula.

SGLang (server_args.py, model_runner.py):
    reserved_mem = 512 + max(chunked_prefill_size, 2048) * 1.5 + cuda_graph_max_bs * 2
                   + tp_size * pp_size / 8 * 1024                      (MiB)
    mem_fraction_static = round((gpu_mem - reserved_mem) / gpu_mem, 3)
    rest_memory = available_gpu_memory - total_gpu_memory * (1 - mem_fraction_static)
    max_num_token = int(rest_memory * (1 << 30) // cell_size)
TGI (flash_causal_lm.py warmup):
    total_cache_size = num_layers * BLOCK_SIZE * num_kv_heads * head_size * 2 * dtype_size
    num_blocks = int((free_memory * TGI_WIGGLE_ROOM) // total_cache_size) + batch_num_blocks
"""

from __future__ import annotations

from typing import Any

import pytest

from estimator import WorkloadError, card
from estimator.architecture import Architecture
from estimator.engines import EngineRequest, EngineVerdict, simulate_engine
from estimator.memory import split_parameters
from estimator.plan_json import part_from_json, part_to_json
from tests.estimator.archbuilder import llama_like

ARCH = llama_like(hidden=4096, layers=32, heads=32, kv_heads=8, intermediate=14336, vocab=128256)
SPLIT = split_parameters(ARCH)
CELL = 8 * 128 * 32 * 2 * 2  # kv heads * head_dim * layers * (K, V) * bf16
SMALL = llama_like(hidden=2048, layers=16, heads=16, kv_heads=8, intermediate=8192, vocab=32000)


def run(engine: str, arch: Architecture = ARCH, **kw: object) -> EngineVerdict:
    request = EngineRequest(engine=engine, **kw)  # type: ignore[arg-type]
    return simulate_engine(arch, split_parameters(arch), request)


@pytest.mark.parametrize(
    ("name", "chunked", "graphs", "fraction"),
    [
        ("L4", 2048, 24, 0.837),  # 23034 MiB: under 35 * 1024
        ("T4", 2048, 8, 0.757),  # 15360 MiB: under 20 * 1024
        ("H100 80GB", 8192, 256, 0.835),  # 81559 MiB: under 90 * 1024, reserve above 10 GiB
    ],
)
def test_sglang_mem_fraction_static_and_token_pool(
    name: str, chunked: int, graphs: int, fraction: float
) -> None:
    small = name == "T4"
    v = run("sglang", SMALL if small else ARCH, card=name)
    weights = split_parameters(SMALL if small else ARCH).total * 2
    cell = 8 * 128 * (16 if small else 32) * 2 * 2
    c = card(name)
    gpu_mem = c.usable_bytes / 2**20
    reserved = 512 + max(chunked, 2048) * 1.5 + graphs * 2 + 1 * 1 / 8 * 1024
    if gpu_mem > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    assert round((gpu_mem - reserved) / gpu_mem, 3) == fraction
    settings = dict(v.settings)
    assert (settings["chunked_prefill_size"], settings["cuda_graph_max_bs"]) == (chunked, graphs)
    assert settings["mem_fraction_static"] == fraction
    total_free = c.usable_bytes - c.context_bytes  # free memory before the weights load
    rest = (total_free - weights) - total_free * (1 - fraction)
    assert v.kv_cache_tokens == int(rest // cell)
    assert v.starts and v.error is None


def test_sglang_with_an_empty_pool_says_so_in_its_words() -> None:
    v = run("sglang", SMALL, card="T4", gpu_memory_utilization=0.1)  # below the weights
    assert v.error == "Not enough memory. Please try to increase --mem-fraction-static."
    assert v.kv_cache_tokens == 0 and not v.starts


def test_tgi_max_batch_total_tokens_follows_its_warmup() -> None:
    v = run("tgi", card="H100 80GB")
    c = card("H100 80GB")
    settings = dict(v.settings)
    assert settings["max_total_tokens"] == 4096  # min(max_position_embeddings, 4096)
    assert settings["max_batch_prefill_tokens"] == 4095 + 50
    per_block = 32 * 16 * 8 * 128 * 2 * 2
    batch_blocks = -(-4145 // 16)
    free = (
        c.usable_bytes
        - c.context_bytes
        - SPLIT.total * 2
        - batch_blocks * per_block
        - v.activation_peak_bytes
    )
    num_blocks = int((free * 0.95) // per_block) + batch_blocks
    assert v.kv_cache_tokens == num_blocks * 16
    assert v.kv_cache_bytes == num_blocks * per_block
    assert v.starts


def test_tgi_refuses_a_total_the_cache_cannot_hold() -> None:
    # The warmup batch's blocks always count, so a refusal needs a prefill budget below the total.
    memory = SPLIT.total * 2 + 500_000_000 + 300 * 2**20  # weights, context and 300 MiB
    kw: dict[str, Any] = {"card_memory_bytes": memory, "max_num_batched_tokens": 512}
    v = run("tgi", **kw)
    assert v.error == "Not enough memory to handle `max_total_tokens=4096`"
    assert 512 < v.max_model_len_that_starts < 4096
    assert run("tgi", max_model_len=v.max_model_len_that_starts, **kw).starts
    too_small = run("tgi", card_memory_bytes=SPLIT.total * 2 + 500_000_000 + 2**20)
    assert too_small.error == (
        "Not enough memory to handle 4145 prefill tokens. "
        "You need to decrease `--max-batch-prefill-tokens`"
    )


def test_transformers_loads_when_weights_fit_and_says_torch_oom_when_not() -> None:
    fits = run("transformers", card="L4", max_model_len=4096)
    assert fits.starts
    per_token = 32 * 2 * 8 * 128 * 2
    room = card("L4").usable_bytes - card("L4").context_bytes
    assert fits.kv_cache_tokens == (room - fits.weights_bytes - fits.activation_peak_bytes) // (
        per_token
    )
    too_big = run("transformers", card="RTX 4060")
    assert too_big.error is not None
    assert too_big.error.startswith("torch.OutOfMemoryError: CUDA out of memory while loading")
    assert too_big.max_model_len_that_starts == 0


def test_a_card_given_by_memory_alone_is_used_as_is() -> None:
    v = run("vllm", card_memory_bytes=40 * 2**30, max_model_len=2048)
    assert v.total_memory_bytes == 40 * 2**30 and v.card == "40 GiB card"


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("engine", "llamacpp", "engine must be one of"),
        ("gpu_memory_utilization", 0.0, "gpu_memory_utilization must be in"),
        ("tensor_parallel", 0, "tensor_parallel must be between"),
        ("max_model_len", 0, "max_model_len must be between"),
        ("quantization", "int3", "quantization must be one of"),
        ("kv_cache_dtype", "fp4", "kv_cache_dtype must be one of"),
    ],
)
def test_impossible_requests_are_refused_naming_the_field(
    field: str, value: object, message: str
) -> None:
    with pytest.raises(WorkloadError, match=message):
        EngineRequest(**{field: value})  # type: ignore[arg-type]


@pytest.mark.parametrize("engine", ["transformers", "vllm", "sglang", "tgi"])
def test_every_verdict_round_trips_through_json(engine: str) -> None:
    v = run(engine, card="L4")
    assert part_from_json(part_to_json(v), EngineVerdict) == v
    assert v.starts == (v.error is None)
    assert v.summary().count("\n") <= 1
