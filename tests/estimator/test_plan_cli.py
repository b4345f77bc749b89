"""``neurarch-trace plan`` run as a real subprocess: JSON keys, Markdown, one-line errors."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from estimator import all_cards

EXE = str(Path(sys.executable).with_name("neurarch-trace"))


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [EXE, "plan", *args], capture_output=True, text=True, timeout=120, check=False
    )


@pytest.fixture()
def llama_dir(corpus_dir: Path, tmp_path: Path) -> Path:
    repo = corpus_dir / "meta-llama/Meta-Llama-3-8B/unknown"
    for name in ("config.json", "model.safetensors.index.json"):
        shutil.copy(repo / name, tmp_path / name)
    return tmp_path


def test_json_output_carries_the_contract_keys(llama_dir: Path) -> None:
    result = run(
        str(llama_dir),
        "--json",
        "--method",
        "qlora",
        "--batch",
        "2",
        "--seq-len",
        "1024",
        "--grad-checkpointing",
        "--lora-rank",
        "8",
        "--lora-targets",
        "q_proj,v_proj",
        "--card",
        "L4",
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["schema_version"] == "1.0"
    assert data["parameters"]["total"] == 8_030_261_248
    assert data["parameters"]["checkpoint_scalars"] == 8_030_261_248
    for method in ("full", "lora", "qlora", "serve"):
        entry = data["memory"][method]
        assert {"peak_allocated_bytes", "device_bytes", "breakdown"} <= set(entry)
    assert data["memory"]["selected"] == "qlora"
    assert data["workload"]["lora_targets"] == ["q_proj", "v_proj"]
    assert (
        len(data["cards"]) == len(all_cards())
        and "largest_batch" in data["cards"][0]["methods"]["lora"]
    )
    assert data["cost"]["card"] == "L4" and data["findings"] is not None and data["structure"]


def test_a_quantised_checkpoint_is_planned_and_started_in_its_own_format(
    corpus_dir: Path,
) -> None:
    config = corpus_dir / "openai/gpt-oss-20b/f81fef1ddd90d214968e951a76834f1ded130a18/config.json"
    served = json.loads(run(str(config), "--json", "--method", "serve", "--engine", "vllm").stdout)
    assert served["workload"]["serve_weights"] == "mxfp4"
    assert served["workload"]["serve_unquantized"] == ["self_attn", "mlp.router"]
    assert any("modules_to_not_convert" in a for a in served["assumptions"])
    assert served["serving"]["engine"]["settings"]["quantization"] == "mxfp4"
    forced = json.loads(
        run(str(config), "--json", "--method", "serve", "--serve-weights", "bf16").stdout
    )
    ratio = (
        forced["memory"]["serve"]["breakdown"]["weights"]
        / (served["memory"]["serve"]["breakdown"]["weights"])
    )
    assert 2.5 < ratio < 3.5


def test_markdown_is_the_model_page(llama_dir: Path) -> None:
    result = run(str(llama_dir / "config.json"), "--markdown", "--card", "T4")
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert text.startswith("# LlamaForCausalLM")
    for section in ("## Memory per card", "## Method notes", "## Structure", "## Findings"):
        assert section in text
    assert "no-bf16-on-card" in text


def test_default_output_is_a_table(llama_dir: Path) -> None:
    result = run(str(llama_dir))
    assert result.returncode == 0
    assert "method  allocated" in result.stdout and "A10G" in result.stdout


@pytest.mark.parametrize(
    ("content", "args", "expected"),
    [
        ("{not json", (), "not valid JSON"),
        ("[1, 2]", (), "expected a JSON object"),
        ('{"model_type": "llama", "hidden_size": "big"}', (), "hidden_size"),
        ('{"model_type": "llama", "num_hidden_layers": 1000000000}', (), "num_hidden_layers"),
        ("{}", ("--batch", "0"), "batch"),
        ("{}", ("--card", "V200"), "unknown card"),
    ],
)
def test_bad_input_is_one_line_on_stderr_and_exit_2(
    tmp_path: Path, content: str, args: tuple[str, ...], expected: str
) -> None:
    path = tmp_path / "config.json"
    path.write_text(content)
    result = run(str(path), *args)
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0], result.stderr
    assert "Traceback" not in result.stderr


def test_missing_source_is_a_usage_error(tmp_path: Path) -> None:
    result = run(str(tmp_path / "nope.json"))
    assert result.returncode == 2 and "no such file" in result.stderr


def test_workload_flags_reach_the_plan(corpus_dir: Path) -> None:
    neox = next((corpus_dir / "togethercomputer/RedPajama-INCITE-7B-Base").glob("*/config.json"))
    result = run(
        str(neox),
        "--json",
        "--method",
        "lora",
        "--lora-targets",
        "q_proj,v_proj,c_attn",
        "--gpus",
        "4",
        "--parallelism",
        "zero",
        "--zero-stage",
        "2",
        "--offload-optimizer",
        "--offload-activations",
        "--serve-weights",
        "awq",
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    w = data["workload"]
    assert (w["parallelism"], w["zero_stage"], w["offload_optimizer"]) == ("zero", 2, True)
    assert w["offload_activations"] and w["serve_weights"] == "awq"
    # q_proj and v_proj read as GPT-NeoX's fused query_key_value; c_attn matches nothing.
    assert any("query_key_value" in a for a in data["assumptions"])
    unmatched = [f for f in data["findings"] if f["id"] == "lora-targets-unmatched"]
    assert len(unmatched) == 1 and "dense_h_to_4h" in unmatched[0]["message"]
    assert any("ZeRO-2" in a for a in data["assumptions"])
    assert data["memory"]["lora"]["breakdown"]["optimizer_state"] == 0


def test_target_len_shortens_an_encoder_decoder_decoder(tmp_path: Path) -> None:
    from tests.estimator.test_memory_training import T5_CONFIG

    path = tmp_path / "config.json"
    path.write_text(json.dumps(T5_CONFIG))

    def lora_activations(*extra: str) -> tuple[int, dict[str, object]]:
        result = run(str(path), "--json", "--method", "lora", "--seq-len", "64", *extra)
        assert result.returncode == 0, result.stderr
        data = json.loads(result.stdout)
        return data["memory"]["lora"]["breakdown"]["activations"], data["workload"]

    default, workload = lora_activations()
    short, short_workload = lora_activations("--target-len", "3")
    assert (workload["target_len"], short_workload["target_len"]) == (0, 3)
    assert short < default
    result = run(str(path), "--json", "--method", "lora", "--seq-len", "64", "--target-len", "3")
    assumptions = json.loads(result.stdout)["assumptions"]
    assert any("over 64 tokens per sample, decoder and logits over 3" in a for a in assumptions)
    assert run(str(path), "--target-len", "-1").returncode == 2


def test_nothing_to_estimate_is_exit_2_and_a_job_that_does_not_fit_is_not_priced(
    llama_dir: Path, tmp_path: Path
) -> None:
    empty = tmp_path / "empty.json"  # beside llama_dir's own config.json
    empty.write_text("{}")
    refused = run(str(empty))
    assert refused.returncode == 2 and refused.stdout == ""
    assert "could not estimate" in refused.stderr and len(refused.stderr.splitlines()) == 1
    full = run(str(llama_dir)).stdout
    assert "Cost: full on A10G: not priced: does not fit A10G at batch 32" in full
    assert "$" not in full.split("Cost:")[1].split("\n")[0]
    serve = run(str(llama_dir), "--method", "serve", "--batch", "1").stdout
    assert "Cost: serve on A10G: $" in serve and "per million generated tokens" in serve
