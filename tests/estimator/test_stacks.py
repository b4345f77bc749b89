"""Stacks: pins parsed from text, requirements and lock files, the environment; versions to mechanisms."""

from __future__ import annotations

import argparse
import itertools
import json
from pathlib import Path

import pytest

from estimator import EngineRequest, Workload, WorkloadError, plan
from estimator.stacks import (
    StackError,
    apply_stack,
    parse_lock,
    parse_requirements,
    parse_stack,
    recipe_for,
    release,
    stack_fields,
    table,
)
from tracker.commands import plan as plan_command
from tracker.errors import UsageError

LLAMA = {
    "model_type": "llama",
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 4096,
    "intermediate_size": 11008,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 32,
    "vocab_size": 32000,
    "max_position_embeddings": 4096,
    "torch_dtype": "float16",
}


def test_pins_parse_to_canonical_names_and_releases() -> None:
    s = parse_stack("torch==2.4.1+cu121, Transformers==4.44 text_generation_inference==2.0.1")
    assert s.pins == (
        ("text-generation-inference", "2.0.1"),
        ("torch", "2.4.1+cu121"),
        ("transformers", "4.44"),
    )
    assert s.version("torch") == (2, 4, 1)
    assert release("0.6.4.post1") == (0, 6, 4)
    assert parse_stack(s.text()) == s


@pytest.mark.parametrize("bad", ["torch>=2", "torch==latest", "torch", "==2.4"])
def test_a_pin_that_names_no_version_is_refused(bad: str) -> None:
    with pytest.raises(StackError, match=r"NAME==VERSION|not a version"):
        parse_stack(bad)


def test_requirements_keep_pins_and_skip_what_names_no_version() -> None:
    text = (
        "# training\ntorch==2.4.1 ; sys_platform == 'linux'\npeft[test]~=0.12.0\n"
        "-r base.txt\n-e .\nnumpy\ngit+https://example.org/x.git\nvllm>=0.6.4\n"
    )
    assert parse_requirements(text).pins == (
        ("peft", "0.12.0"),
        ("torch", "2.4.1"),
        ("vllm", "0.6.4"),
    )


def test_lock_files_read_their_package_tables() -> None:
    text = '[[package]]\nname = "torch"\nversion = "2.4.0"\n\n[[package]]\nname = "vllm"\nversion = "0.6.4"\n'
    assert parse_lock(text).pins == (("torch", "2.4.0"), ("vllm", "0.6.4"))
    with pytest.raises(StackError, match="not TOML"):
        parse_lock("[[package]\n")


def test_every_mechanism_cites_its_source_and_no_two_overlap() -> None:
    seen: dict[tuple[str, str, tuple[str, ...]], list[tuple[object, object]]] = {}
    fields = set(Workload.__dataclass_fields__)
    for m in table().mechanisms:
        assert m.field in fields, m.id
        assert "@" in m.source or "PR #" in m.source or "(v5)" in m.source, m.id
        seen.setdefault((m.library, m.field, m.model_types), []).append((m.low, m.below))
    for (library, field, _), ranges in seen.items():
        ordered = sorted(ranges, key=lambda r: r[0] or ())
        for (_, below), (low, _) in itertools.pairwise(ordered):
            assert below is not None and low is not None and below <= low, (library, field)


@pytest.mark.parametrize(
    ("stack", "model_type", "expected"),
    [
        (
            "torch==1.13.1",
            "llama",
            {"zero_grad_set_to_none": False, "adamw_impl": "loop", "fsdp_frozen_reshard": False},
        ),
        (
            "torch==2.0.0",
            "llama",
            {"zero_grad_set_to_none": True, "adamw_impl": "foreach", "fsdp_frozen_reshard": False},
        ),
        (
            "transformers==4.35.2",
            "llama",
            {
                "attention": "eager",
                "reentrant_checkpointing": True,
                "fsdp_mixed_units": True,
                "prompt_logits": True,
                "loss_shift_copy": True,
            },
        ),
        (
            "transformers==4.48.1",
            "gpt_bigcode",
            {
                "reentrant_checkpointing": True,
                "fsdp_mixed_units": False,
                "loss_shift_copy": True,
                "cache_in_training": True,
                "loss_upcast": False,
            },
        ),
        (
            "transformers==4.38.2",
            "llama",
            {
                "reentrant_checkpointing": True,
                "fsdp_mixed_units": True,
                "prompt_logits": True,
                "loss_shift_copy": True,
            },
        ),
        (
            "transformers==4.52.4",
            "llama",
            {"reentrant_checkpointing": True, "fsdp_mixed_units": False},
        ),
        (
            "transformers==5.0.0",
            "gpt_bigcode",
            {
                "reentrant_checkpointing": False,
                "fsdp_mixed_units": False,
                "load_dtype_auto": True,
            },
        ),
    ],
)
def test_versions_set_the_mechanisms_of_their_range(
    stack: str, model_type: str, expected: dict[str, object]
) -> None:
    assert stack_fields(parse_stack(stack), model_type) == expected


def test_a_training_library_in_the_stack_picks_its_recipe_and_flags_still_win() -> None:
    assert recipe_for(parse_stack("torch==2.4 peft==0.12 torchtune==0.3")) == "torchtune"
    assert recipe_for(parse_stack("torch==2.4 transformers==4.44")) is None
    w = apply_stack(parse_stack("torch==1.13 peft==0.12"), None, "llama", lora_rank=64)
    assert (w.recipe, w.lora_rank, w.lora_alpha, w.zero_grad_set_to_none) == ("peft", 64, 8, False)
    assert w.stack == "peft==0.12 torch==1.13"
    explicit = apply_stack(parse_stack("torch==1.13"), None, None, zero_grad_set_to_none=True)
    assert explicit.zero_grad_set_to_none is True


def test_torch1_stack_moves_the_peak_by_the_gradients_it_keeps() -> None:
    # torch 1.13 also means per-parameter AdamW; hold that equal to see the gradients alone
    base = apply_stack(
        parse_stack("torch==2.4"), None, "llama", batch=1, seq_len=512, adamw_impl="loop"
    )
    old = apply_stack(parse_stack("torch==1.13"), None, "llama", batch=1, seq_len=512)
    assert old.adamw_impl == "loop" and not old.zero_grad_set_to_none
    before = plan(LLAMA, base).selected.peak_allocated_bytes
    grown = plan(LLAMA, old).selected.peak_allocated_bytes - before
    # zero-filled fp32 gradients live through the next forward: the peak moves to the forward's
    # end with every gradient still allocated (2.54 B per parameter above torch 2's peak)
    assert grown == 17_132_095_296


def test_workload_refuses_a_stack_that_is_not_pins() -> None:
    with pytest.raises(WorkloadError, match="stack must be"):
        Workload(stack="torch>=2")


def test_plan_takes_the_engine_version_from_the_stack() -> None:
    w = Workload(method="serve", card="A10G", stack="vllm==0.6.4")
    v = plan(LLAMA, w, engine=EngineRequest(engine="vllm", max_model_len=4096)).engine
    assert v is not None and v.version_modelled.startswith("vllm 0.6.4: V0 engine")
    current = plan(
        LLAMA, Workload(method="serve", card="A10G"), engine=EngineRequest(engine="vllm")
    )
    assert current.engine is not None and current.engine.version_modelled.startswith(
        "current release"
    )


def _parse(*flags: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    plan_command.add_arguments(parser)
    return parser.parse_args(["config.json", *flags])


def test_cli_reads_a_requirements_file(tmp_path: Path) -> None:
    req = tmp_path / "requirements.txt"
    req.write_text("torch==1.13.1\ntransformers==4.26.0\nnumpy==1.26\n")
    w = plan_command.workload_from(_parse("--stack", str(req), "--method", "lora"), LLAMA)
    assert w.stack == "torch==1.13.1 transformers==4.26.0"
    assert (w.zero_grad_set_to_none, w.attention, w.reentrant_checkpointing) == (
        False,
        "eager",
        True,
    )


def test_cli_reads_the_environment() -> None:
    from importlib import metadata

    w = plan_command.workload_from(_parse("--stack", "env"), LLAMA)
    torch_version = metadata.version("torch")
    assert f"torch=={torch_version}" in w.stack.split()


def test_cli_refuses_a_stack_that_is_neither_file_nor_pins(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="not NAME==VERSION"):
        plan_command.workload_from(_parse("--stack", str(tmp_path / "missing.txt")), LLAMA)
    with pytest.raises(UsageError, match="--stack"):
        plan_command.workload_from(_parse("--stack", "torch==2.4 vllm==next"), LLAMA)


def test_json_round_trip_keeps_the_stack() -> None:
    from estimator import Plan

    p = plan(LLAMA, Workload(stack="torch==2.4 transformers==4.44"))
    assert Plan.from_json(json.loads(json.dumps(p.to_json()))).workload.stack == p.workload.stack


def test_the_report_states_the_stack_it_modelled_and_says_nothing_without_one() -> None:
    from estimator.report import render_markdown, render_terminal

    pinned = plan(LLAMA, Workload(stack="torch==2.4 transformers==4.44"))
    line = "Stack: torch==2.4 transformers==4.44 (versioned behaviour: estimator/README.md, Stacks)"
    assert render_terminal(pinned).splitlines()[2] == line
    assert line in render_markdown(pinned).splitlines()
    assert "Stack:" not in render_terminal(plan(LLAMA))
