"""A checkpoint is served in the format its config.json declares, unless the user says otherwise."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from estimator import Workload, plan
from estimator.engines import EngineRequest
from estimator.families import describe
from estimator.stored_quantization import stored_quantization
from tests.estimator.archbuilder import llama_like

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "hub-corpus"
DEEPSEEK_V3 = CORPUS / "deepseek-ai" / "DeepSeek-V3-Base" / "unknown" / "config.json"
GPT_OSS = CORPUS / "openai" / "gpt-oss-20b" / "f81fef1ddd90d214968e951a76834f1ded130a18"
SERVE = Workload(method="serve", batch=1, seq_len=128, card="H100 80GB")
LLAMA = {
    "model_type": "llama",
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 256,
    "intermediate_size": 512,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "vocab_size": 1000,
}


def weights(config: dict[str, object], w: Workload = SERVE) -> int:
    return dict(plan(config, w).selected.breakdown)["weights"]


def block_linears(config: dict[str, object]) -> list[tuple[str, int, int, int]]:
    arch = describe(config)
    return [
        (lin.name, lin.in_features, lin.out_features, lin.copies * count)
        for block, count in arch.block_groups
        for lin in block.linears
    ]


def test_an_fp8_checkpoint_is_served_in_fp8_by_the_plan_and_by_vllm() -> None:
    config = json.loads(DEEPSEEK_V3.read_text())
    result = plan(config, SERVE, engine=EngineRequest(engine="vllm"))
    assert result.workload.serve_weights == "fp8"
    assert dict(result.engine.settings)["quantization"] == "fp8"
    bf16 = weights(config, replace(SERVE, serve_weights="bf16"))
    fp8 = weights(config)
    # 671B parameters, nearly all in block linears: fp8 halves them, routers stay 16-bit.
    assert 0.5 < fp8 / bf16 < 0.51
    assert abs(result.engine.weights_bytes - fp8) / fp8 < 0.001


def test_gpt_oss_keeps_attention_and_router_16_bit_and_its_experts_in_mxfp4() -> None:
    config = json.loads((GPT_OSS / "config.json").read_text())
    stored = stored_quantization(config)
    assert stored is not None and stored.serve_weights == "mxfp4"
    assert stored.unquantized == ("self_attn", "mlp.router")
    linears = block_linears(config)
    experts = sum(i * o * n for name, i, o, n in linears if name.startswith("mlp.experts"))
    kept = sum(i * o * n for name, i, o, n in linears if not name.startswith("mlp.experts"))
    total = describe(config).total_parameters
    # Experts: 4 bits plus one E8M0 byte per 32 inputs; the rest of the model in bf16.
    expected = experts * (0.5 + 1 / 32) + (total - experts) * 2
    assert weights(config) == round(expected)
    assert kept > 0 and 12.5e9 < expected < 14.5e9  # the published checkpoint is ~13.8 GB


def test_awq_group_size_comes_from_the_checkpoint_and_an_explicit_one_wins() -> None:
    config = LLAMA | {
        "quantization_config": {
            "quant_method": "awq",
            "bits": 4,
            "group_size": 64,
            "version": "gemm",
        }
    }
    linears = block_linears(LLAMA)
    rest = describe(LLAMA).total_parameters - sum(i * o * n for _, i, o, n in linears)

    def stored(group: int) -> float:
        packed = sum(n * (i * o / 2 + 2.5 * (i / group) * o) for _, i, o, n in linears)
        return round(packed + rest * 2)

    assert plan(config, SERVE).workload.quant_group_size == 64
    assert weights(config) == stored(64)
    assert weights(config, replace(SERVE, quant_group_size=128)) == stored(128)
    assert weights(LLAMA, replace(SERVE, serve_weights="awq")) == stored(128)


def test_an_explicit_format_overrides_the_checkpoints() -> None:
    config = json.loads(DEEPSEEK_V3.read_text())
    assert plan(config, replace(SERVE, serve_weights="bf16")).workload.serve_weights == "bf16"
    vllm = plan(config, SERVE, engine=EngineRequest(engine="vllm", quantization="none")).engine
    assert vllm is not None and dict(vllm.settings)["quantization"] == "none"


def test_bitsandbytes_checkpoints_read_their_load_flags() -> None:
    four = LLAMA | {"quantization_config": {"load_in_4bit": True, "bnb_4bit_quant_type": "nf4"}}
    eight = LLAMA | {"quantization_config": {"quant_method": "bitsandbytes", "load_in_8bit": True}}
    assert plan(four, SERVE).workload.serve_weights == "nf4"
    assert plan(eight, SERVE).workload.serve_weights == "int8"
    engine = plan(four, SERVE, engine=EngineRequest(engine="vllm")).engine
    assert engine is not None and dict(engine.settings)["quantization"] == "bnb-4bit"


def test_a_method_without_a_byte_count_is_a_finding_and_16_bit() -> None:
    config = LLAMA | {"quantization_config": {"quant_method": "compressed-tensors", "bits": 8}}
    result = plan(config, SERVE)
    assert result.workload.serve_weights == "bf16"
    (finding,) = [f for f in result.findings if f.id == "checkpoint-quantization-not-modelled"]
    assert "compressed-tensors, 8 bits" in finding.message
    eight_bit_gptq = LLAMA | {"quantization_config": {"quant_method": "gptq", "bits": 8}}
    assert plan(eight_bit_gptq, SERVE).workload.serve_weights == "bf16"


@pytest.mark.parametrize(
    "raw",
    [
        "awq",
        [1, 2],
        {"quant_method": 7},
        {"quant_method": "awq", "bits": 4, "group_size": "many"},
        {"quant_method": "awq", "bits": 4, "group_size": 10**30},
        {"quant_method": "gptq", "bits": 4, "modules_to_not_convert": "lm_head"},
        {"quant_method": "gptq", "bits": 4, "modules_to_not_convert": [None, 3, "model.layers.*."]},
    ],
)
def test_malformed_quantization_configs_fall_back_without_failing(raw: object) -> None:
    config = LLAMA | {"quantization_config": raw}
    result = plan(config, SERVE)
    assert result.workload.serve_weights in ("bf16", "awq", "gptq")
    assert result.workload.quant_group_size == 128
    assert result.workload.serve_unquantized == ()


def test_engines_without_a_config_read_auto_as_16_bit() -> None:
    from estimator.engines import simulate_engine
    from estimator.memory.states import split_parameters

    arch = llama_like()
    auto = simulate_engine(arch, split_parameters(arch), EngineRequest(engine="vllm", card="L4"))
    none = simulate_engine(
        arch, split_parameters(arch), EngineRequest(engine="vllm", card="L4", quantization="none")
    )
    assert auto.weights_bytes == none.weights_bytes


def test_engines_count_the_checkpoints_group_size_too() -> None:
    config = LLAMA | {"quantization_config": {"quant_method": "awq", "bits": 4, "group_size": 32}}
    arch = describe(LLAMA)
    linears = sum(i * o * n for _, i, o, n in block_linears(LLAMA))
    rest = arch.total_parameters - linears
    for name in ("vllm", "sglang", "tgi", "transformers"):
        engine = plan(config, SERVE, engine=EngineRequest(engine=name)).engine
        assert engine is not None
        # 4 bits + a 16-bit scale and a 4-bit zero per 32 inputs.
        assert engine.weights_bytes == int(linears * (0.5 + 2.5 / 32) + rest * 2), name
    asked = EngineRequest(engine="vllm", group_size=128)
    engine = plan(config, SERVE, engine=asked).engine
    assert engine is not None
    assert engine.weights_bytes == int(linears * (0.5 + 2.5 / 128) + rest * 2)


def test_a_hostile_modules_to_not_convert_list_is_read_in_bounded_time() -> None:
    patterns = [f"model.layers.*.m{i}" for i in range(200_000)] + ["model.layers.*." + "x" * 500]
    config = LLAMA | {"quantization_config": {"quant_method": "awq", "bits": 4}}
    config["quantization_config"]["modules_to_not_convert"] = patterns
    stored = stored_quantization(config)
    assert stored is not None
    assert stored.unquantized == tuple(f"m{i}" for i in range(64))
    assert plan(config, SERVE).workload.serve_unquantized == stored.unquantized
