"""Training recipes: each file's defaults reach the Workload, cite their source, and change the memory."""

from __future__ import annotations

import argparse
import json
from importlib import resources

import pytest

from estimator import Workload, WorkloadError
from estimator.memory import method_models
from estimator.memory.activations import loss_bytes
from estimator.recipes import RECIPE_NAMES, apply_recipe, recipe, recipes
from tests.estimator.archbuilder import llama_like
from tracker.commands import plan as plan_command

ARCH = llama_like(hidden=64, layers=2, heads=4, kv_heads=2, intermediate=128, vocab=256)


def breakdown(method: str, name: str, **workload: object) -> dict[str, int]:
    w = Workload(method=method, batch=2, seq_len=16, **workload)  # type: ignore[arg-type]
    model = method_models(ARCH, w, has_bf16=True)[method]
    return next(p for p in model.phases if p.name == name).breakdown(2)


def cli(*flags: str) -> Workload:
    parser = argparse.ArgumentParser()
    plan_command.add_arguments(parser)
    return plan_command.workload_from(parser.parse_args(["config.json", *flags]))


def test_one_file_per_recipe_and_the_cli_offers_exactly_those() -> None:
    files = sorted(
        p.name.removesuffix(".json")
        for p in resources.files("estimator").joinpath("data/recipes").iterdir()
        if p.name.endswith(".json")
    )
    assert files == sorted(RECIPE_NAMES)
    assert plan_command.RECIPE_CHOICES == RECIPE_NAMES


@pytest.mark.parametrize("name", RECIPE_NAMES)
def test_every_default_cites_a_repository_file_and_version(name: str) -> None:
    r = recipe(name)
    sources = dict(r.sources)
    assert set(dict(r.defaults)) <= set(sources)
    for field, text in sources.items():
        assert "/" in text, f"{name}.{field}: no repository or file in {text!r}"
        assert "@" in text or "main" in text or "README" in text, f"{name}.{field}: no version"
    assert r.version and r.library


@pytest.mark.parametrize(
    ("name", "field", "quoted"),
    [
        ("torchtune", "loss_chunks", "CEWithChunkedOutputLoss"),
        ("torchtune", "grad_checkpointing", "enable_activation_checkpointing: True"),
        ("litgpt", "pure_16bit", "bf16-true"),
        ("litgpt", "lora_rank", "lora_r: int = 8"),
        ("trl-sft", "grad_checkpointing", "Defaults to `True` instead of `False`"),
        ("peft", "lora_alpha", "default=8"),
        ("axolotl", "lora_rank", "lora_r: 32"),
        ("unsloth", "optimizer", "adamw_8bit"),
        ("hf-trainer", "adamw_impl", "adamw_torch_fused"),
        ("hf-trainer", "reentrant_checkpointing", '"use_reentrant": False'),
    ],
)
def test_a_cited_field_quotes_the_setting(name: str, field: str, quoted: str) -> None:
    assert quoted in recipe(name).source(field)


def test_recipe_defaults_reach_the_workload() -> None:
    w = apply_recipe("torchtune")
    assert (w.pure_16bit, w.adapters_fp32, w.loss_chunks, w.grad_checkpointing) == (
        True,
        False,
        8,
        True,
    )
    assert (w.lora_rank, w.lora_alpha, w.lora_dropout, w.batch) == (8, 16, 0.0, 2)
    assert w.lora_targets == ("all-linear",)
    assert w.recipe == "torchtune"
    lit = apply_recipe("litgpt")
    assert (lit.lora_rank, lit.lora_alpha, lit.lora_dropout, lit.kbit_prepare) == (
        8,
        16,
        0.05,
        False,
    )
    assert apply_recipe("unsloth").offload_activations is True
    assert apply_recipe("axolotl").method == "qlora"


def test_explicit_fields_win_over_the_recipe() -> None:
    w = apply_recipe("torchtune", lora_rank=64, pure_16bit=False, loss_chunks=1)
    assert (w.lora_rank, w.pure_16bit, w.loss_chunks, w.lora_alpha) == (64, False, 1, 16)
    assert apply_recipe(None, batch=3) == Workload(batch=3)


def test_cli_recipe_then_flags() -> None:
    w = cli("--recipe", "litgpt", "--lora-rank", "32", "--no-pure-bf16")
    assert (w.lora_rank, w.lora_alpha, w.pure_16bit, w.loss_chunks) == (32, 16, False, 64)
    assert cli("--recipe", "torchtune", "--no-grad-checkpointing").grad_checkpointing is False
    assert cli("--pure-bf16").pure_16bit is True
    plain = cli()
    assert plain == Workload(attention="sdpa")
    assert cli("--loss-chunks", "4", "--lora-targets", "q_proj,v_proj").loss_chunks == 4


def test_unknown_recipe_and_bad_chunks_are_workload_errors() -> None:
    with pytest.raises(WorkloadError, match="recipe must be one of"):
        apply_recipe("deepspeed-chat")
    with pytest.raises(WorkloadError, match="recipe must be one of"):
        Workload(recipe="deepspeed-chat")
    with pytest.raises(WorkloadError, match="loss_chunks"):
        Workload(loss_chunks=-1)
    with pytest.raises(WorkloadError, match="adapters_fp32"):
        Workload(adapters_fp32="yes")  # type: ignore[arg-type]


def test_recipe_files_name_only_workload_fields() -> None:
    for r in recipes():
        raw = json.loads(
            resources.files("estimator").joinpath(f"data/recipes/{r.name}.json").read_text()
        )
        assert raw["name"] == r.name
        values = {k: tuple(v) if isinstance(v, list) else v for k, v in raw["defaults"].items()}
        Workload(**values)  # type: ignore[arg-type]


def test_chunked_loss_keeps_four_bytes_per_logit_plus_one_chunk() -> None:
    logits = 256 * 32  # vocab x tokens
    assert loss_bytes(ARCH, 32) == (12 * logits, 10 * logits)
    assert loss_bytes(ARCH, 32, chunks=8) == (
        4 * logits + 10 * logits // 8,
        6 * logits + 4 * logits // 8,
    )
    assert loss_bytes(ARCH, 32, chunks=0) == (4 * 32, 4 * 32)  # fused: an fp32 LSE per token


def test_adapters_in_the_model_dtype_halve_adapter_states() -> None:
    fp32 = breakdown("lora", "optimizer step", pure_16bit=True, adamw_impl="fused")
    bf16 = breakdown(
        "lora", "optimizer step", pure_16bit=True, adamw_impl="fused", adapters_fp32=False
    )
    assert bf16["adapters"] * 2 == fp32["adapters"] > 0
    assert bf16["optimizer_state"] * 2 == fp32["optimizer_state"] > 0


def test_qlora_dequantised_buffer_by_hand() -> None:
    # Per layer: q 64x64, k and v 64x32, o 64x64, gate/up 64x128, down 128x64 = 36,864
    # weights; two layers = 73,728 in 1,152 NF4 blocks of 64. Double quantisation: one
    # 8-bit absmax per block plus one fp32 per 256 blocks = 1,152 x (1 + 4/256) = 1,170 B.
    # The largest linear (64 x 128 = 8,192 weights) is dequantised to bf16 (2 B) in
    # forward and again in backward, one linear at a time; Linear4bit casts an fp32
    # input (after kbit preparation) to bf16 before MatMul4Bit, so the copy stays 2 B.
    constants = 1152 + 1152 * 4 / 256
    for kbit in (False, True):
        b = breakdown("qlora", "optimizer step", kbit_prepare=kbit, pure_16bit=True)
        assert b["quantization_overhead"] == round(constants + 8192 * 2)
    single = breakdown("qlora", "optimizer step", double_quant=False, pure_16bit=True)
    assert single["quantization_overhead"] == 1152 * 4 + 8192 * 2  # fp32 absmax


def test_a_recipe_changes_the_plan_and_is_named_in_its_assumptions() -> None:
    from estimator import plan

    config = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": 512,
        "intermediate_size": 1024,
        "num_hidden_layers": 4,
        "num_attention_heads": 8,
        "num_key_value_heads": 4,
        "vocab_size": 32000,
        "max_position_embeddings": 4096,
    }
    common = {"method": "lora", "batch": 4, "seq_len": 1024, "lora_rank": 16}
    hf = plan(config, apply_recipe("hf-trainer", **common)).selected
    tune = plan(config, apply_recipe("torchtune", **common)).selected
    # pure bf16 with bf16 adapters, checkpointing and the chunked loss: less memory
    assert tune.peak_allocated_bytes < hf.peak_allocated_bytes
    assert any("recipe torchtune (torchtune 0b3e04a)" in a for a in tune.assumptions)
    assert any("chunked cross-entropy over 8 chunks" in a for a in tune.assumptions)


def test_a_recipe_plan_reads_back_from_its_json() -> None:
    from estimator import Plan, plan

    config = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": 256,
        "intermediate_size": 512,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "vocab_size": 1000,
    }
    p = plan(config, apply_recipe("litgpt", method="qlora"))
    back = Plan.from_json(p.to_json())
    assert back.workload == p.workload
    assert back.workload.recipe == "litgpt" and back.workload.loss_chunks == 64


_CHOICES: dict[str, tuple[str, ...]] = {
    "method": ("full", "lora", "qlora"),
    "precision": ("bf16", "fp16", "fp32"),
    "optimizer": ("adamw", "adamw8bit", "sgd", "adafactor"),
    "adamw_impl": ("foreach", "fused", "loop"),
}


def _other(field: str, value: object) -> object:
    """A valid value for ``field`` that differs from ``value``."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return 0.1 if value != 0.1 else 0.2
    if isinstance(value, tuple):
        return ("qkv",) if value != ("qkv",) else ("mlp",)
    return next(c for c in _CHOICES[field] if c != value)


@pytest.mark.parametrize(
    ("name", "field"),
    [(r.name, field) for r in recipes() for field, _ in r.defaults],
)
def test_every_explicit_field_wins_and_leaves_the_other_defaults(name: str, field: str) -> None:
    defaults = dict(recipe(name).defaults)
    other = _other(field, defaults[field])
    w = apply_recipe(name, **{field: other})
    assert getattr(w, field) == other
    for rest, value in defaults.items():
        if rest != field:
            assert getattr(w, rest) == value, rest
