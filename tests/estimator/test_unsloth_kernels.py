"""Unsloth's fused kernels keep fewer tensors than PEFT's modules, and its allocator setting
needs no fragmentation slack: both counted from what the kernels save (tiny Llama)."""

from __future__ import annotations

import random

from estimator import Workload, plan
from estimator.memory import method_models
from estimator.memory.activations import ActivationSettings, block_bytes_per_token
from estimator.memory.lora import resolve_targets
from estimator.memory.numerics import training_numerics
from estimator.memory.training import RESERVE_STATIC, placements
from estimator.recipes import apply_recipe
from tests.estimator.archbuilder import llama_like
from tests.estimator.configgen import llama
from tests.estimator.test_recipes import cli

H, HEADS, KV_HEADS, F = 64, 4, 2, 128
HEAD_DIM = H // HEADS
ARCH = llama_like(hidden=H, layers=2, heads=HEADS, kv_heads=KV_HEADS, intermediate=F, vocab=256)


def layer_bytes(**settings: object) -> float:
    """One layer's saved bytes per token, QLoRA on every linear, bf16 without kbit upcast."""
    w = Workload(method="qlora", kbit_prepare=False, lora_dropout=0.0)
    numerics = training_numerics(w, "qlora", has_bf16=True)
    assert (numerics.compute, numerics.residual) == (2, 2)
    resolution = resolve_targets(ARCH, ("all-linear",))
    block, placed, _ = placements(ARCH, False, resolution.names)[0]
    values: dict[str, object] = {
        "numerics": numerics,
        "seq_len": 16,
        "eager": False,
        "checkpointing": False,
        "lora_rank": 8,
        "lora_dropout": 0.0,
        "head_trains": False,
        "norms_train": False,
    }
    values.update(settings)
    return block_bytes_per_token(ARCH, block, placed, ActivationSettings(**values))  # type: ignore[arg-type]


def test_fused_lora_and_rmsnorm_keep_what_the_kernels_save() -> None:
    q, kv = HEADS * HEAD_DIM, 2 * KV_HEADS * HEAD_DIM
    norms = 2 * (2 * H + 4)  # Fast_RMS_Layernorm: (X, W, r), X bf16 and r an fp32 per token
    attention = 2 * H + 2 * (q + kv + q) + 4 * HEADS  # LoRA_QKV's X; SDPA's q, k, v, out, lse
    mlp = 2 * H + 2 * 2 * F  # LoRA_MLP: (X, e, g); LoRA_W reuses SDPA's output
    assert layer_bytes(fused_lora=True, fused_rmsnorm=True) == norms + attention + mlp


def test_fused_lora_saves_every_per_adapter_copy_peft_keeps() -> None:
    peft = layer_bytes()
    fused = layer_bytes(fused_lora=True)
    # PEFT under autocast: each adapter keeps its own bf16 cast of its input and its rank-8
    # output; the gated MLP keeps the activation's input, up output and activation output.
    widths = 3 * H + H + 2 * H + F  # q, k, v, o, gate, up, down inputs
    per_adapter = 2 * widths + 7 * 2 * 8
    peft_only = per_adapter + 2 * F  # the activation output LoRA_MLP recomputes
    fused_only = 2 * H + 2 * H  # one bf16 X for Q/K/V and one for gate/up
    assert peft - fused == peft_only - fused_only


def test_dropout_leaves_the_adapters_to_peft() -> None:
    def activations(dropout: float, fused: bool) -> dict[str, int]:
        w = Workload(method="qlora", batch=2, seq_len=16, lora_dropout=dropout, fused_lora=fused)
        model = method_models(ARCH, w, has_bf16=True)["qlora"]
        return next(p for p in model.phases if p.name == "end of forward").breakdown(2)

    assert activations(0.05, True) == activations(0.05, False)
    assert activations(0.0, True)["activations"] < activations(0.0, False)["activations"]


def test_expandable_segments_leave_no_slack_above_the_allocated_transients() -> None:
    w = Workload(method="lora", batch=4, seq_len=32, expandable_segments=True)
    model = method_models(ARCH, w, has_bf16=True)["lora"]
    expected = max(p.fixed() * (1 + RESERVE_STATIC) + p.per_sample() * 4 for p in model.phases)
    assert model.reserved(4) == round(expected)
    plain = method_models(ARCH, Workload(method="lora", batch=4, seq_len=32), has_bf16=True)
    assert plain["lora"].reserved(4) > model.reserved(4)


def test_the_unsloth_recipe_turns_all_three_on_and_the_flag_is_on_the_command_line() -> None:
    w = apply_recipe("unsloth")
    assert (w.fused_lora, w.fused_rmsnorm, w.expandable_segments, w.lora_dropout) == (
        True,
        True,
        True,
        0.0,
    )
    assert cli("--expandable-segments").expandable_segments is True
    assert cli("--recipe", "unsloth", "--no-expandable-segments").expandable_segments is False


def test_the_plan_says_which_reserve_it_counted() -> None:
    config = llama(random.Random(7))
    plain = " ".join(plan(config, Workload(method="lora")).assumptions)
    expandable = " ".join(plan(config, apply_recipe("unsloth")).assumptions)
    assert "30% of batch-proportional bytes" in plain and "expandable segments" not in plain
    assert "none of the batch-proportional bytes: expandable segments" in expandable
    assert "Unsloth's fused LoRA (LoRA_QKV, LoRA_W, LoRA_MLP)" in expandable
