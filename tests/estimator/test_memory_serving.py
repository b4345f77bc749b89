"""Serving memory: KV cache from each layer's own width, window caps, none for encoders."""

from __future__ import annotations

from transformers import GPTBigCodeConfig

from estimator import Workload
from estimator.families import describe
from estimator.memory import kv_cache_bytes_per_sequence, method_models
from tests.estimator.archbuilder import llama_like

SANTACODER_LIKE = {
    "model_type": "gpt_bigcode",
    "architectures": ["GPTBigCodeForCausalLM"],
    "n_embd": 256,
    "n_head": 8,
    "n_layer": 3,
    "vocab_size": 1000,
}


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


def test_multi_query_gpt_bigcode_caches_the_kv_heads_transformers_builds() -> None:
    for multi_query in (True, False):
        cfg = {**SANTACODER_LIKE, "multi_query": multi_query}
        kv_heads = GPTBigCodeConfig(**cfg).num_key_value_heads
        head_dim = 256 // 8
        expected = 2 * kv_heads * head_dim * 3 * 100 * 2  # K and V, 3 layers, 100 tokens, bf16
        assert kv_cache_bytes_per_sequence(describe(cfg), 100, 2) == expected


def test_unknown_model_types_honour_multi_query_and_kv_head_fields() -> None:
    base = {"model_type": "mystery", "hidden_size": 256, "num_attention_heads": 8}
    base |= {"num_hidden_layers": 2, "vocab_size": 1000}
    assert describe({**base, "multi_query": True}).blocks[0].attention.num_kv_heads == 1
    assert describe({**base, "num_key_value_heads": 2}).blocks[0].attention.num_kv_heads == 2
    assert describe(base).blocks[0].attention.num_kv_heads == 8
