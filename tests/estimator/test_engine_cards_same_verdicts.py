"""The card table's shortcuts give the verdicts the plain evaluation gives.

``on_every_card`` computes the model's serving shape once for the table, and vLLM's
largest length that fits is solved per block count (``longest_fitting``) rather than
bisected: the table must equal ``simulate_engine`` run card by card, and the solved
length must equal vLLM's bisection (``largest_passing``) on generated KV specs, with
sliding windows, MLA latents and lengths just around the boundary.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from estimator.architecture import Architecture
from estimator.cards import all_cards
from estimator.engine_cards import CardEngineVerdict, on_every_card
from estimator.engines import EngineRequest, simulate_engine
from estimator.engines.common import largest_passing
from estimator.engines.vllm_kv import LayerSpec, Specs, longest_fitting, needed_memory
from estimator.errors import EstimateError
from estimator.families import describe
from estimator.memory import split_parameters
from estimator.memory.states import ParameterSplit
from tests.estimator.test_engines_vllm import distinct_corpus_configs

REQUESTS = (
    EngineRequest(engine="vllm"),
    EngineRequest(engine="vllm", version="0.6.4"),
    EngineRequest(engine="vllm", tensor_parallel=2, kv_cache_dtype="fp8", quantization="awq"),
    EngineRequest(engine="sglang"),
    EngineRequest(engine="tgi"),
    EngineRequest(engine="transformers", max_model_len=8192),
)


def _card_by_card(
    arch: Architecture, split: ParameterSplit, request: EngineRequest
) -> list[CardEngineVerdict]:
    """The table as the plain loop builds it: the whole ``simulate_engine`` on each card."""
    out = []
    for c in all_cards():
        try:
            v = simulate_engine(arch, split, replace(request, card=c.name, card_memory_bytes=None))
        except EstimateError:
            continue
        out.append(
            CardEngineVerdict(
                c.name, v.starts, v.kv_cache_tokens, v.max_model_len, v.max_model_len_that_starts
            )
        )
    return out


@pytest.mark.parametrize("request_", REQUESTS, ids=lambda r: f"{r.engine}-{r.version}")
def test_the_card_table_equals_each_card_simulated_alone(
    corpus_dir: Path, request_: EngineRequest
) -> None:
    compared = starting = refusing = 0
    for config in distinct_corpus_configs(corpus_dir):
        try:
            arch = describe(config)
        except EstimateError:
            continue
        split = split_parameters(arch)
        table = on_every_card(arch, split, request_, all_cards())
        assert list(table) == _card_by_card(arch, split, request_)
        compared += len(table)
        starting += sum(v.starts for v in table)
        refusing += sum(not v.starts and v.max_model_len_that_starts > 0 for v in table)
    # Not vacuous: cards that start, and cards that refuse the length but start a shorter one.
    assert compared > 1000 and starting > 0
    if request_.engine == "vllm":
        assert refusing > 0


def _bisected(specs: Specs, available: int, batched: int, high: int) -> int:
    return largest_passing(1, high, lambda n: needed_memory(specs, n, batched) <= available)


@st.composite
def kv_specs(draw: st.DrawFn) -> Specs:
    """One to four distinct layer specs sharing a block size, as ``layer_specs`` builds them."""
    block = draw(st.sampled_from([1, 4, 16, 32, 64]))
    spec = st.builds(
        LayerSpec,
        block_size=st.just(block),
        heads=st.integers(1, 16),
        head_size=st.integers(0, 256),
        dtype_bytes=st.sampled_from([1, 2, 4]),
        latent=st.booleans(),
        sliding_window=st.one_of(st.none(), st.integers(1, 40_000)),
    )
    distinct = draw(st.lists(spec, min_size=1, max_size=4, unique=True))
    return tuple((s, draw(st.integers(1, 80))) for s in distinct)


@settings(max_examples=400, deadline=None)
@given(
    specs=kv_specs(),
    batched=st.integers(1, 16_384),
    high=st.integers(1, 1 << 20),
    at=st.integers(1, 1 << 20),
    slack=st.integers(-2, 2),
)
def test_the_solved_length_is_vllms_bisection(
    specs: Specs, batched: int, high: int, at: int, slack: int
) -> None:
    # The memory is what some length needs, give or take a byte: the boundary is exercised.
    available = max(0, needed_memory(specs, at, batched) + slack)
    solved = longest_fitting(specs, available, batched, high)
    assert solved == _bisected(specs, available, batched, high)
    if 0 < solved < high:
        assert needed_memory(specs, solved + 1, batched) > available


def test_no_length_fits_when_one_token_does_not() -> None:
    spec = LayerSpec(16, 8, 128, 2, False, None)
    one_block = spec.page_size_bytes * 32
    assert longest_fitting(((spec, 32),), one_block - 1, 2048, 4096) == 0
    assert longest_fitting(((spec, 32),), one_block, 2048, 4096) == 16
    assert longest_fitting(((spec, 32),), one_block * 1000, 2048, 4096) == 4096
