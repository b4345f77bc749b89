"""vLLM by version: the V0 engine's start-up (before 0.8) beside V1's, and --dtype float32."""

from __future__ import annotations

import pytest

from estimator import EngineRequest, Workload, plan

# Llama 3.1 8B's shapes: 32 layers, 8 KV heads of 128, 128K context (llama3 RoPE scaling).
LLAMA31_8B = {
    "model_type": "llama",
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "vocab_size": 128256,
    "max_position_embeddings": 131072,
    "rope_scaling": {
        "factor": 8.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8192,
        "rope_type": "llama3",
    },
    "torch_dtype": "bfloat16",
}


def verdict(version: str | None, length: int, card: str = "A10G", precision: str = "bf16"):  # type: ignore[no-untyped-def]
    w = Workload(method="serve", card=card, precision=precision)  # type: ignore[arg-type]
    v = plan(
        LLAMA31_8B, w, engine=EngineRequest(engine="vllm", max_model_len=length, version=version)
    ).engine
    assert v is not None
    return v


@pytest.mark.parametrize(
    ("length", "batched", "chunked"),
    [(1024, 2048, False), (16384, 16384, False), (32768, 32768, False), (32769, 512, True)],
)
def test_v0_profiles_max_model_len_tokens_until_chunked_prefill_turns_on(
    length: int, batched: int, chunked: bool
) -> None:
    s = dict(verdict("0.6.4", length, card="A100 80GB").settings)
    assert (s["max_num_batched_tokens"], s["enable_chunked_prefill"], s["max_num_seqs"]) == (
        batched,
        chunked,
        256,
    )


def test_v0_kv_cache_shrinks_as_max_model_len_grows_on_a_24gb_card() -> None:
    tokens = [verdict("0.6.4", n).kv_cache_tokens for n in (4096, 8192, 16384, 32768)]
    assert tokens == [31424, 31168, 25392, 12592]
    assert verdict("0.6.4", 16384).starts and not verdict("0.6.4", 32768).starts
    assert "The model's max seq len (32768) is larger than the maximum number of tokens" in (
        verdict("0.6.4", 32768).error or ""
    )
    # above 32K the 512-token profile leaves more room, but not 64K tokens of cache
    assert verdict("0.6.4", 65536).kv_cache_tokens == 31648
    assert verdict("0.6.4", 4096).max_model_len_that_starts == 21440


def test_v1_profile_is_fixed_so_the_cache_does_not_move_with_max_model_len() -> None:
    tokens = {verdict(v, n).kv_cache_tokens for v in ("0.8.0", None) for n in (4096, 32768)}
    assert tokens == {34976}
    assert verdict(None, 32768).starts and not verdict("0.6.4", 32768).starts
    assert verdict(None, 65536).max_model_len_that_starts == 34976


def test_fp32_holds_weights_and_kv_at_four_bytes() -> None:
    for version, bf16_tokens, fp32_tokens in (("0.6.4", 449984, 160832), (None, 454192, 165760)):
        bf16, fp32 = (
            verdict(version, 8192, "A100 80GB"),
            verdict(version, 8192, "A100 80GB", "fp32"),
        )
        assert fp32.weights_bytes == 2 * bf16.weights_bytes
        assert (bf16.kv_cache_tokens, fp32.kv_cache_tokens) == (bf16_tokens, fp32_tokens)
        assert dict(fp32.settings)["dtype"] == "fp32"


def test_v0_counts_the_cuda_context_inside_gpu_memory_utilization() -> None:
    v0, v1 = verdict("0.7.3", 2048), verdict("0.8.0", 2048)
    assert v0.version_modelled == "vllm 0.7.3: V0 engine (0.6.x line)"
    assert v1.version_modelled == "vllm 0.8.0: V1 engine"
    assert v0.non_torch_bytes - v1.non_torch_bytes > 0


def sglang(version: str | None, card: str, tp: int = 1):  # type: ignore[no-untyped-def]
    request = EngineRequest(
        engine="sglang", version=version, max_model_len=8192, tensor_parallel=tp
    )
    v = plan(LLAMA31_8B, Workload(method="serve", card=card), engine=request).engine
    assert v is not None
    return v


def test_sglang_before_05_takes_its_fraction_from_the_tensor_parallel_size() -> None:
    old, new = sglang("0.4.3", "A10G"), sglang(None, "A10G")
    assert dict(old.settings)["mem_fraction_static"] == 0.88
    assert dict(new.settings)["mem_fraction_static"] == 0.837
    assert (old.kv_cache_tokens, new.kv_cache_tokens) == (36563, 28789)
    assert dict(sglang("0.4.3", "A100 80GB", tp=2).settings)["mem_fraction_static"] == 0.87
    assert dict(sglang("0.4.3", "A100 80GB").settings)["chunked_prefill_size"] == 8192
    assert old.version_modelled.startswith("sglang 0.4.3: 0.4.x line")
    assert new.version_modelled.startswith("current release: v0.5 line")
