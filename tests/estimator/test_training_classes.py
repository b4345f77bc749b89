"""Training mechanisms read from the libraries' sources, pinned by value on Llama 3.1 8B's shapes.

torchtune's single-device full fine-tune steps each parameter in backward
(``optimizer_in_bwd``); FSDP1 with adapters inside their layers' units gives
every flat parameter a whole gradient; FSDP1 before torch 2.1 keeps units of
frozen weights gathered until backward ends.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from estimator import Workload, WorkloadError, plan
from estimator.recipes import apply_recipe, recipe
from estimator.stacks import apply_stack, parse_stack, stack_fields
from tests.estimator.test_engines_versions import LLAMA31_8B

EMBEDDING = 128256 * 4096  # the largest tensor (the head is the same size)
BLOCKS = 6_979_584_000  # parameters in the 32 decoder layers


def test_torchtune_full_recipe_is_its_full_single_device_config() -> None:
    full = apply_recipe("torchtune", method="full")
    lora = apply_recipe("torchtune", method="lora")
    assert (full.optimizer, full.optimizer_in_backward, full.loss_chunks, full.pure_16bit) == (
        "adamw8bit",
        True,
        0,
        True,
    )
    assert (lora.optimizer, lora.optimizer_in_backward, lora.loss_chunks) == ("adamw", False, 8)
    assert "8B_full_single_device.yaml" in recipe("torchtune").source("full.optimizer_in_backward")


def test_optimizer_in_backward_keeps_one_gradient_at_a_time() -> None:
    w = apply_recipe("torchtune", method="full", seq_len=2048, card="A100 80GB")
    stepped = plan(LLAMA31_8B, w).selected
    whole = plan(
        LLAMA31_8B,
        apply_recipe(
            "torchtune", method="full", seq_len=2048, card="A100 80GB", optimizer_in_backward=False
        ),
    ).selected
    assert dict(stepped.breakdown)["gradients"] == 2 * EMBEDDING  # bf16, the largest tensor
    assert dict(whole.breakdown)["gradients"] == 2 * 8_030_261_248  # bf16, every parameter
    assert (stepped.peak_allocated_bytes, whole.peak_allocated_bytes) == (
        35_822_411_904,
        49_662_002_816,
    )
    # the CLI's defaults (fp32 master weights, AdamW state, one fp32 loss) for the same job
    defaults = plan(LLAMA31_8B, Workload(method="full", batch=2, seq_len=2048, card="A100 80GB"))
    assert defaults.selected.peak_allocated_bytes / stepped.peak_allocated_bytes > 4


def test_optimizer_in_backward_is_refused_where_it_is_not_modelled() -> None:
    with pytest.raises(WorkloadError, match="optimizer_in_backward"):
        Workload(method="full", gpus=2, optimizer_in_backward=True)


def _lora_on_two(parallelism: str = "fsdp", mixed: bool = False) -> Workload:
    return Workload(
        method="lora",
        batch=1,
        seq_len=512,
        card="A100 80GB",
        gpus=2,
        parallelism=parallelism,  # type: ignore[arg-type]
        fsdp_mixed_units=mixed,
    )


def test_fsdp_mixed_units_give_every_layer_a_sharded_gradient() -> None:
    own = plan(LLAMA31_8B, _lora_on_two()).selected
    mixed = plan(LLAMA31_8B, _lora_on_two(mixed=True)).selected
    assert mixed.peak_phase == "backward through the first layer"
    # bf16 flat parameters of every layer (2 B x BLOCKS) and the adapters' fp32 gradients
    # (r16 on every linear: 1,310,720 per layer, 4 B), all sharded over 2 GPUs
    adapters = 32 * 1_310_720 * 4
    assert dict(mixed.breakdown)["gradients"] == (2 * BLOCKS + adapters) / 2
    assert (own.peak_allocated_bytes, mixed.peak_allocated_bytes) == (
        16_285_878_272,
        18_958_237_888,
    )
    # DDP replicas hold no flat parameters: the setting changes nothing there
    ddp = plan(LLAMA31_8B, _lora_on_two("ddp", mixed=True)).selected
    assert (
        ddp.peak_allocated_bytes
        == plan(LLAMA31_8B, _lora_on_two("ddp")).selected.peak_allocated_bytes
    )


def test_fsdp_before_torch_2_1_keeps_frozen_layer_units_gathered_to_the_end_of_backward() -> None:
    assert stack_fields(parse_stack("torch==2.0.1"))["fsdp_frozen_reshard"] is False
    assert stack_fields(parse_stack("torch==2.1.0"))["fsdp_frozen_reshard"] is True
    resharded = plan(LLAMA31_8B, _lora_on_two()).selected
    kept = plan(LLAMA31_8B, replace(_lora_on_two(), fsdp_frozen_reshard=False)).selected
    assert kept.peak_phase == "backward through the first layer"
    # the 30 bf16 decoder layers beyond the two FSDP gathers in flight, whole on each GPU
    gathered = (
        dict(kept.breakdown)["framework_overhead"] - dict(resharded.breakdown)["framework_overhead"]
    )
    assert gathered == 30 * (BLOCKS // 32) * 2
    assert (resharded.peak_allocated_bytes, kept.peak_allocated_bytes) == (
        16_285_878_272,
        24_629_149_888,
    )
    # units with a trainable adapter inside take the ordinary post-backward hook
    mixed = _lora_on_two(mixed=True)
    assert (
        plan(LLAMA31_8B, replace(mixed, fsdp_frozen_reshard=False)).selected.peak_allocated_bytes
        == plan(LLAMA31_8B, mixed).selected.peak_allocated_bytes
    )
    ddp = _lora_on_two("ddp")
    assert (
        plan(LLAMA31_8B, replace(ddp, fsdp_frozen_reshard=False)).selected.peak_allocated_bytes
        == plan(LLAMA31_8B, ddp).selected.peak_allocated_bytes
    )


def test_a_training_librarys_setting_wins_over_the_defaults_of_the_libraries_below() -> None:
    below = stack_fields(parse_stack("transformers==4.44"))
    assert (below["reentrant_checkpointing"], below["loss_shift_copy"]) == (True, True)
    over = stack_fields(parse_stack("torchtune==0.3.0 transformers==4.44"))
    assert (over["reentrant_checkpointing"], over["loss_shift_copy"]) == (False, False)


def test_torchtune_before_0_3_takes_one_fp32_loss_over_shifted_logits() -> None:
    old = stack_fields(parse_stack("torchtune==0.2.1"))
    assert {k: old[k] for k in ("loss_chunks", "loss_shift_copy", "lora_dropout")} == {
        "loss_chunks": 1,
        "loss_shift_copy": True,
        "lora_dropout": 0.05,
    }
    assert "loss_chunks" not in stack_fields(parse_stack("torchtune==0.3.0"))
    peaks = {
        pins: plan(
            LLAMA31_8B,
            apply_stack(
                parse_stack(pins), None, "llama", method="qlora", seq_len=2048, card="A100 80GB"
            ),
        ).selected.peak_allocated_bytes
        for pins in ("torchtune==0.2.1", "torchtune==0.3.0")
    }
    # 2 x 2048 positions x 128,256 logits: fp32 upcast, its shifted fp32 copy and the fp32
    # log-softmax of the whole batch against 8 chunks' fp32 log-softmax beside bf16 logits
    assert peaks == {"torchtune==0.2.1": 14_474_731_520, "torchtune==0.3.0": 10_534_707_200}


def test_transformers_5_trains_a_checkpoint_declared_bf16_in_pure_bf16() -> None:
    assert stack_fields(parse_stack("transformers==5.0.0"))["load_dtype_auto"] is True
    assert "load_dtype_auto" not in stack_fields(parse_stack("transformers==4.52.4"))
    job = Workload(method="full", batch=1, seq_len=2048, card="A100 80GB")
    amp = plan(LLAMA31_8B, job).selected
    loaded = plan(LLAMA31_8B, replace(job, load_dtype_auto=True)).selected
    assert (amp.numerics, loaded.numerics) == ("bf16 autocast, fp32 master weights", "pure bf16")
    # bf16 weights, gradients and both AdamW moments: 8 B a parameter, not 16 (+ cast cache)
    assert dict(loaded.breakdown)["optimizer_state"] == 2 * 2 * 8_030_261_248
    assert (amp.peak_allocated_bytes, loaded.peak_allocated_bytes) == (
        160_638_779_392,
        80_336_166_912,
    )
    # a checkpoint declared fp32 loads fp32: the Trainer's autocast over fp32 master weights
    fp32 = {**LLAMA31_8B, "torch_dtype": "float32"}
    assert plan(fp32, replace(job, load_dtype_auto=True)).selected.numerics == amp.numerics
    # adapters are another matter: LoRA keeps its numerics
    lora = replace(job, method="lora")
    assert (
        plan(LLAMA31_8B, replace(lora, load_dtype_auto=True)).selected.peak_allocated_bytes
        == plan(LLAMA31_8B, lora).selected.peak_allocated_bytes
    )


def test_litgpt_loss_runs_on_bf16_chunks_and_its_micro_batch_follows_the_version() -> None:
    assert stack_fields(parse_stack("litgpt==0.4.0"))["batch"] == 1
    w = apply_recipe("litgpt", method="qlora", batch=1, seq_len=2048, card="A100 80GB")
    assert (w.loss_upcast, w.loss_chunks, w.pure_16bit) == (False, 64, True)
    bf16 = plan(LLAMA31_8B, w).selected
    fp32 = plan(LLAMA31_8B, replace(w, loss_upcast=True)).selected
    # 2048 x 128,256 logits: bf16 logits and an fp32 log-softmax (6 B) when the forward
    # ends, against bf16 logits and log-softmax (4 B) plus one chunk's 4 B of gradients
    logits = 2048 * 128256
    assert (fp32.peak_phase, bf16.peak_phase) == (
        "end of forward",
        "start of backward (loss gradients)",
    )
    assert fp32.peak_allocated_bytes - bf16.peak_allocated_bytes == 2 * logits
