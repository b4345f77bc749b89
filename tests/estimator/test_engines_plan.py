"""The engine verdict inside a Plan: schema-valid on every corpus config, read back by from_json,
and the context-extension case the feature exists for (Llama 3.2's 128k on small cards)."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

from estimator import EngineRequest, EstimateError, Plan, Workload, plan
from estimator.plan_json import part_to_json

SCHEMA = json.loads(resources.files("estimator").joinpath("schema/plan.schema.json").read_text())
LLAMA_32_3B = "meta-llama/Llama-3.2-3B-Instruct"


def configs(corpus_dir: Path) -> list[dict[str, object]]:
    out = []
    for path in sorted(corpus_dir.rglob("config.json")):
        try:
            raw = json.loads(path.read_text())
        except json.JSONDecodeError:
            continue
        if isinstance(raw, dict) and "architectures" in raw:
            out.append(raw)
    return out


@pytest.mark.parametrize("engine", ["transformers", "vllm", "sglang", "tgi"])
def test_engine_verdicts_validate_and_round_trip_on_every_corpus_config(
    corpus_dir: Path, engine: str
) -> None:
    validator = jsonschema.Draft202012Validator(SCHEMA)
    checked = 0
    for config in configs(corpus_dir)[::3]:  # a third of the corpus keeps this under a few seconds
        try:
            p = plan(config, Workload(), engine=EngineRequest(engine=engine, card="L4"))  # type: ignore[arg-type]
        except EstimateError:
            continue
        document = p.to_json()
        errors = sorted(validator.iter_errors(document), key=str)
        assert not errors, f"{config.get('_name_or_path')}: {errors[0].message}"
        assert p.engine is not None and Plan.from_json(document).engine == p.engine
        assert p.engine.starts == (p.engine.error is None)
        checked += 1
    assert checked >= 60


def test_a_plan_without_an_engine_has_no_serving_block(corpus_dir: Path) -> None:
    config = configs(corpus_dir)[0]
    assert "serving" not in plan(config).to_json()


def llama_32_3b(corpus_dir: Path) -> dict[str, object]:
    for path in sorted((corpus_dir / LLAMA_32_3B).glob("*/config.json")):
        config: dict[str, object] = json.loads(path.read_text())
        if config.get("max_position_embeddings") == 131072:
            return config
    raise AssertionError("the corpus holds Llama 3.2 3B's 128k config")


def test_vllm_refuses_llama_32_at_128k_on_l4_and_names_the_length_that_starts(
    corpus_dir: Path,
) -> None:
    config = llama_32_3b(corpus_dir)
    v = plan(config, engine=EngineRequest(engine="vllm", card="L4")).engine
    assert v is not None and not v.starts
    assert v.error is not None
    assert v.error.startswith(
        "To serve at least one request with the models's max seq len (131072), (14.0 GiB KV "
        "cache is needed, which is larger than the available KV cache memory"
    )
    assert f"the estimated maximum model length is {v.max_model_len_that_starts}." in v.error
    shorter = EngineRequest(engine="vllm", card="L4", max_model_len=v.max_model_len_that_starts)
    ok = plan(config, engine=shorter).engine
    assert ok is not None and ok.starts and ok.kv_cache_tokens >= v.max_model_len_that_starts
    two = plan(config, engine=EngineRequest(engine="vllm", card="L4", tensor_parallel=2)).engine
    assert two is not None and two.starts


EXE = str(Path(sys.executable).with_name("neurarch-trace"))


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [EXE, "plan", *args], capture_output=True, text=True, timeout=120, check=False
    )


def test_plan_engine_flags_reach_the_verdict(corpus_dir: Path, tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(llama_32_3b(corpus_dir)))
    flags = ["--engine", "vllm", "--card-memory", "40", "--max-model-len", "32768"]
    flags += ["--gpu-memory-utilization", "0.85", "--block-size", "32", "--kv-cache-dtype", "fp8"]
    done = cli(str(path), "--json", *flags)
    assert done.returncode == 0, done.stderr
    v = json.loads(done.stdout)["serving"]["engine"]
    assert (v["name"], v["card"], v["total_memory_bytes"]) == ("vllm", "40 GiB card", 40 * 2**30)
    assert v["settings"]["gpu_memory_utilization"] == 0.85
    assert (v["settings"]["block_size"], v["settings"]["kv_cache_dtype"]) == (32, "fp8")
    assert v["max_model_len"] == 32768 and v["starts"] is True
    table = cli(str(path), "--engine", "tgi", "--card", "T4")
    assert table.returncode == 0 and "TGI (" in table.stdout


def test_a_bad_engine_flag_is_one_line_and_exit_2(corpus_dir: Path, tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(llama_32_3b(corpus_dir)))
    done = cli(str(path), "--engine", "vllm", "--gpu-memory-utilization", "1.5")
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "gpu_memory_utilization" in done.stderr


def test_every_engine_flag_and_verdict_field_is_documented() -> None:
    import argparse

    from tracker.commands.engine_flags import add_engine_arguments

    readme = (Path(__file__).parents[2] / "estimator" / "README.md").read_text()
    parser = argparse.ArgumentParser()
    add_engine_arguments(parser)
    flags = [o for a in parser._actions for o in a.option_strings if o.startswith("--")]
    documented = [f for f in flags if f"| {f}" in readme or f"/ {f}" in readme]
    assert documented == [f for f in flags if f != "--help"]
    schema = SCHEMA["properties"]["serving"]["properties"]["engine"]
    fields = set(schema["required"])
    assert all(f"`{name}`" in readme for name in fields)
    sample = plan(
        {
            "model_type": "llama",
            "architectures": ["LlamaForCausalLM"],
            "hidden_size": 256,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "intermediate_size": 512,
            "vocab_size": 1000,
            "max_position_embeddings": 2048,
        },
        engine=EngineRequest(engine="vllm", card="T4"),
    ).engine
    assert sample is not None and set(part_to_json(sample)) == fields


def test_the_engine_runs_on_the_workloads_card_unless_it_names_one(corpus_dir: Path) -> None:
    config = llama_32_3b(corpus_dir)
    on_t4 = plan(config, Workload(card="T4"), engine=EngineRequest(engine="vllm")).engine
    own = plan(config, Workload(card="T4"), engine=EngineRequest(engine="vllm", card="L4")).engine
    assert on_t4 is not None and own is not None
    assert (on_t4.card, own.card) == ("T4", "L4")


def test_an_engine_request_without_a_card_is_refused_outside_a_plan() -> None:
    from estimator import WorkloadError
    from estimator.engines import simulate_engine
    from tests.estimator.archbuilder import llama_like

    arch = llama_like()
    with pytest.raises(WorkloadError, match="name a card"):
        from estimator.memory import split_parameters

        simulate_engine(arch, split_parameters(arch), EngineRequest(engine="vllm"))
