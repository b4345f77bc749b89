"""Serving memory: KV cache from each layer's own width, window caps, none for encoders."""

from __future__ import annotations

from estimator import Workload
from estimator.memory import kv_cache_bytes_per_sequence, method_models
from tests.estimator.archbuilder import llama_like


def test_kv_cache_counts_kv_heads_not_query_heads() -> None:
    arch = llama_like(hidden=64, layers=3, heads=8, kv_heads=2)
    head_dim = 8
    assert kv_cache_bytes_per_sequence(arch, 100, 2) == 2 * 2 * head_dim * 3 * 100 * 2


def test_sliding_window_caps_the_cache() -> None:
    arch = llama_like(sliding_window=32)
    assert kv_cache_bytes_per_sequence(arch, 1000, 2) == kv_cache_bytes_per_sequence(arch, 32, 2)


def test_encoders_keep_no_kv_cache() -> None:
    arch = llama_like(encoder=True)
    model = method_models(arch, Workload(method="serve"), has_bf16=True)["serve"]
    assert model.phases[0].breakdown(4)["kv_cache"] == 0


def test_int4_weights_take_about_a_quarter_of_bf16_for_block_linears() -> None:
    arch = llama_like(hidden=256, layers=4, intermediate=1024, vocab=64)
    bf16 = method_models(arch, Workload(method="serve"), True)["serve"].phases[0].breakdown(1)
    int4 = method_models(arch, Workload(method="serve", serve_weights="int4"), True)["serve"]
    ratio = int4.phases[0].breakdown(1)["weights"] / bf16["weights"]
    assert 0.25 < ratio < 0.32
