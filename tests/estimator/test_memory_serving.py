"""Serving memory: KV cache from each layer's own width, window caps, none for encoders."""

from __future__ import annotations

from dataclasses import replace

import pytest
from transformers import GPTBigCodeConfig

from estimator import Workload
from estimator.architecture import Architecture
from estimator.errors import WorkloadError
from estimator.families import describe
from estimator.memory import evaluate, kv_cache_bytes_per_sequence, method_models
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


SERVE_ARCH = llama_like(hidden=256, layers=2, heads=4, kv_heads=2, intermediate=512, vocab=1024)


def serve(weights: str, seq_len: int = 64) -> dict[str, int]:
    w = Workload(method="serve", batch=1, seq_len=seq_len, serve_weights=weights)  # type: ignore[arg-type]
    return method_models(SERVE_ARCH, w, True)["serve"].phases[0].breakdown(1)


def _linears() -> list[tuple[int, int]]:
    return [(lin.in_features, lin.out_features) for lin in SERVE_ARCH.blocks[0].linears]


def test_awq_counts_packed_weights_group_scales_and_zeros_and_keeps_the_rest_16bit() -> None:
    linears = _linears()
    quantised = sum(i * o for i, o in linears) * SERVE_ARCH.num_layers
    # qweight 4 bit + per group of 128 inputs: a 16-bit scale and a 4-bit zero per output.
    stored = sum(i * o / 2 + (i / 128) * o * 2.5 for i, o in linears) * SERVE_ARCH.num_layers
    rest = SERVE_ARCH.total_parameters - quantised
    assert serve("awq")["weights"] == round(stored + rest * 2)
    # GPTQ adds g_idx, one int32 per input row.
    gidx = sum(4 * i for i, _ in linears) * SERVE_ARCH.num_layers
    assert serve("gptq")["weights"] == round(stored + gidx + rest * 2)


def test_nf4_int8_and_fp8_bytes_per_weight() -> None:
    linears = _linears()
    layers = SERVE_ARCH.num_layers
    quantised = sum(i * o for i, o in linears) * layers
    rest = (SERVE_ARCH.total_parameters - quantised) * 2
    # double-quantised absmax: one byte per 64 weights + an fp32 per 256 blocks.
    assert serve("nf4")["weights"] == round(quantised * (0.5 + (1 + 4 / 256) / 64) + rest)
    assert serve("int8")["weights"] == round(
        quantised + sum(4 * o for _, o in linears) * layers + rest
    )
    assert serve("fp8")["weights"] == quantised + rest


def test_long_prompts_dequantise_the_widest_fused_linear() -> None:
    # gate and up read the same input: one fused 256 x 1024 GEMM, 16-bit copy.
    assert serve("awq", seq_len=255)["quantization_overhead"] == 0
    assert serve("awq", seq_len=256)["quantization_overhead"] == 256 * 1024 * 2
    assert serve("fp8", seq_len=4096)["quantization_overhead"] == 0


def phases_at(w: Workload, arch: Architecture = SERVE_ARCH) -> dict[str, dict[str, int]]:
    model = method_models(arch, w, True)["serve"]
    return {p.name: p.breakdown(w.batch) for p in model.phases}


def test_prompt_logits_hold_every_position_in_16_bit_and_fp32() -> None:
    base = Workload(method="serve", batch=2, seq_len=64)
    last = phases_at(base)["prefill: logits"]["activations"]
    every = phases_at(replace(base, prompt_logits=True))["prefill: logits"]["activations"]
    # 1024-word vocabulary: 2 + 4 B per logit, for 63 more positions of each of 2 sequences.
    assert every - last == 2 * 63 * 1024 * 6


def test_the_prefill_peaks_at_the_widest_layer_or_at_the_logits_not_both() -> None:
    w = Workload(method="serve", batch=1, seq_len=64, prompt_logits=True)
    phases = phases_at(w)
    model = method_models(SERVE_ARCH, w, True)["serve"]
    peak = evaluate(model, 1, 0, 1)
    assert peak.peak_allocated_bytes == max(sum(p.values()) for p in phases.values())


def test_awq_fused_holds_qkv_twice_while_loading_beside_caches_and_rope_tables() -> None:
    arch = llama_like(hidden=256, layers=3, heads=4, kv_heads=2, sliding_window=16, vocab=1024)
    w = Workload(method="serve", batch=2, seq_len=64, serve_weights="awq", awq_fused=True)
    load = phases_at(w, arch)["load: fused qkv_proj beside q/k/v"]
    qkv = sum(i * o / 2 + (i / 128) * o * 2.5 for i, o in [(256, 256), (256, 128), (256, 128)])
    assert load["quantization_overhead"] == round(3 * qkv)
    # Every layer caches all 64 positions whatever the sliding window: 2 sequences x K and V.
    assert load["kv_cache"] == 2 * 3 * 64 * 2 * 2 * 64 * 2
    assert load["kv_cache"] > 2 * kv_cache_bytes_per_sequence(arch, 64, 2)
    # A complex64 (2 * 64, 64 / 2) RoPE table per layer.
    assert load["framework_overhead"] == 3 * 8 * 64 * 64


def test_awq_fused_prompt_attention_holds_ten_bytes_per_score() -> None:
    w = Workload(method="serve", batch=1, seq_len=512, serve_weights="awq", awq_fused=True)
    longer = replace(w, seq_len=1024)
    layer = phases_at(w)["prefill: widest layer"]["activations"]
    twice = phases_at(longer)["prefill: widest layer"]["activations"]
    # Doubling the prompt: the per-token tensors double, the 4 x S x S scores quadruple.
    heads = 4
    assert twice - 2 * layer == 10 * heads * (1024**2 - 2 * 512**2)
    # The fused path's kernels need no dequantised copy of a linear (vLLM's AWQ does).
    assert phases_at(w)["prefill: widest layer"]["quantization_overhead"] == 0


def test_awq_fused_needs_awq_weights() -> None:
    with pytest.raises(WorkloadError, match="awq_fused needs serve_weights 'awq'"):
        Workload(method="serve", serve_weights="gptq", awq_fused=True)
