"""QLoRA's preparation decides the dtype of what is not 4-bit: pinned by hand on a tiny Llama.

The model: hidden 64, two layers, vocabulary 256, untied head. Outside the
blocks: embeddings and head 2 x 256 x 64 = 32,768 plus the final norm's 64 =
32,832 parameters; inside the blocks, not in a linear: two norms of 64 per
layer = 256.
"""

from __future__ import annotations

from estimator import Workload
from estimator.memory import method_models
from estimator.recipes import apply_recipe, recipe
from tests.estimator.archbuilder import llama_like

ARCH = llama_like(hidden=64, layers=2, heads=4, kv_heads=2, intermediate=128, vocab=256)
OUTSIDE = 2 * 256 * 64 + 64
BLOCK_NORMS = 2 * 2 * 64


def breakdown(phase: str, **workload: object) -> dict[str, int]:
    w = Workload(method="qlora", batch=2, seq_len=16, **workload)  # type: ignore[arg-type]
    model = method_models(ARCH, w, has_bf16=True)["qlora"]
    return next(p for p in model.phases if p.name == phase).breakdown(2)


def test_trl_casts_head_and_embeddings_back_to_16bit_norms_stay_fp32() -> None:
    step = "optimizer step"
    peft = breakdown(step, kbit_prepare=True)["weights"]
    trl = breakdown(step, kbit_prepare=True, kbit_head_16bit=True)["weights"]
    unprepared = breakdown(step, kbit_prepare=False)["weights"]
    assert peft - trl == OUTSIDE * 2  # fp32 -> bf16 for embeddings, head, final norm
    assert trl - unprepared == BLOCK_NORMS * 2  # the layers' norms stay fp32


def test_a_16bit_head_gives_16bit_logits_beside_their_fp32_copy() -> None:
    # Without autocast an fp32 head on the fp32 hidden stream writes fp32 logits; back in
    # bf16 the head writes bf16 logits and the loss upcasts them: 2 B more per logit.
    start = "start of backward (loss gradients)"
    fp32_head = breakdown(start, kbit_prepare=True, pure_16bit=True)["activations"]
    bf16_head = breakdown(start, kbit_prepare=True, pure_16bit=True, kbit_head_16bit=True)
    assert bf16_head["activations"] - fp32_head == 2 * 256 * 2 * 16


def test_sharded_qlora_keeps_one_16bit_dtype() -> None:
    # FSDP flattens each unit into one tensor of one dtype and TRL skips the preparation
    # for a sharded 4-bit model: the stored weights do not grow on several GPUs.
    step = "optimizer step"
    prepared = breakdown(step, kbit_prepare=True, gpus=2)["weights"]
    assert prepared == breakdown(step, kbit_prepare=False, gpus=2)["weights"]
    assert breakdown(step, kbit_prepare=True)["weights"] > 2 * prepared


def test_the_trl_recipe_sets_the_recast_and_cites_it() -> None:
    assert apply_recipe("trl-sft").kbit_head_16bit is True
    assert apply_recipe("peft").kbit_head_16bit is False
    assert "peft_module_casting_to_bf16" in recipe("trl-sft").source("kbit_head_16bit")


def test_after_fp32_norms_the_4bit_mlp_answers_fp32() -> None:
    # Linear4bit casts its product back to the input's dtype: with the norms upcast by the
    # preparation, gate and up outputs and the SiLU output are fp32 (intermediate 128).
    from dataclasses import replace

    from estimator.memory.activations import ActivationSettings, block_bytes_per_token
    from estimator.memory.numerics import training_numerics
    from estimator.memory.training import placements

    w = Workload(method="qlora", kbit_prepare=True)
    prepared = training_numerics(w, "qlora", has_bf16=True)
    assert (prepared.norm_out, prepared.base_out) == (4, 4)
    assert training_numerics(replace(w, kbit_prepare=False), "qlora", True).base_out == 2

    def layer(numerics: object) -> float:
        settings = ActivationSettings(
            numerics=numerics,  # type: ignore[arg-type]
            seq_len=16,
            eager=False,
            checkpointing=False,
            lora_rank=8,
            lora_dropout=0.0,
            head_trains=False,
            norms_train=False,
        )
        block, placed, _ = placements(ARCH, False, None)[0]
        return block_bytes_per_token(ARCH, block, placed, settings)

    sixteen_bit_mlp = replace(prepared, fp32_base_out=False)
    assert layer(prepared) - layer(sixteen_bit_mlp) == (4 - 2) * 128 * 3
