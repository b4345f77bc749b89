"""Training memory follows the mechanism: states per optimizer, activations per tensor kept."""

from __future__ import annotations

from estimator import Workload
from estimator.architecture import Block
from estimator.memory import evaluate, method_models, split_parameters
from estimator.memory.states import optimizer_bytes
from tests.estimator.archbuilder import llama_like

ARCH = llama_like(hidden=64, layers=2, heads=4, kv_heads=2, intermediate=128, vocab=256)
N = ARCH.total_parameters


def phase(method: str, name: str, **workload: object) -> dict[str, int]:
    w = Workload(method=method, batch=2, seq_len=16, **workload)  # type: ignore[arg-type]
    model = method_models(ARCH, w, has_bf16=True)[method]
    chosen = next(p for p in model.phases if p.name == name)
    return chosen.breakdown(2)


def test_pure_bf16_adamw_holds_eight_bytes_per_parameter_at_the_step() -> None:
    b = phase("full", "optimizer step", pure_16bit=True, adamw_impl="fused")
    assert (b["weights"], b["gradients"], b["optimizer_state"]) == (2 * N, 2 * N, 4 * N)


def test_mixed_precision_keeps_fp32_master_grads_and_moments() -> None:
    b = phase("full", "optimizer step", adamw_impl="fused")
    assert (b["weights"], b["gradients"], b["optimizer_state"]) == (4 * N, 4 * N, 8 * N)


def test_foreach_adamw_step_materialises_one_more_state_copy() -> None:
    fused = phase("full", "optimizer step", pure_16bit=True, adamw_impl="fused")
    foreach = phase("full", "optimizer step", pure_16bit=True, adamw_impl="foreach")
    assert foreach["activations"] - fused["activations"] == 2 * N


def test_sgd_keeps_no_state_and_adafactor_factors_matrices() -> None:
    assert phase("full", "optimizer step", optimizer="sgd")["optimizer_state"] == 0
    assert optimizer_bytes("adafactor", (256, 64), 256 * 64, 4) == 4 * (256 + 64)
    assert optimizer_bytes("adafactor", (64,), 64, 4) == 4 * 64
    assert optimizer_bytes("adamw8bit", (64,), 64, 4) == 8 * 64  # below bnb's 4096 minimum


def test_loss_gradients_cost_twelve_bytes_per_logit_at_the_start_of_backward() -> None:
    end = phase("full", "start of backward (loss gradients)")
    fwd = phase("full", "end of forward")
    tokens = 2 * 16
    # forward end holds 10 B per logit, backward start 12 B; saved activations are the same.
    assert end["activations"] - fwd["activations"] == 2 * 256 * tokens


def test_sdpa_activations_scale_linearly_and_eager_quadratically_with_length() -> None:
    def acts(attention: str, seq: int) -> int:
        w = Workload(method="full", batch=1, seq_len=seq, attention=attention)  # type: ignore[arg-type]
        model = method_models(ARCH, w, has_bf16=True)["full"]
        p = next(p for p in model.phases if p.name.startswith("start of backward"))
        return p.breakdown(1)["activations"]

    assert acts("sdpa", 64) == 2 * acts("sdpa", 32)
    # eager keeps fp32 softmax + 16-bit copy: 6 B per head per key, per query token.
    extra_64 = acts("eager", 64) - acts("sdpa", 64)
    extra_32 = acts("eager", 32) - acts("sdpa", 32)
    quadratic = 6 * 4 * ARCH.num_layers
    assert extra_64 - 2 * extra_32 == quadratic * (64 * 64 - 2 * 32 * 32)


def test_checkpointing_keeps_only_layer_inputs_plus_one_layer() -> None:
    w = Workload(method="full", batch=1, seq_len=32, grad_checkpointing=True, pure_16bit=True)
    model = method_models(ARCH, w, has_bf16=True)["full"]
    start = next(p for p in model.phases if p.name.startswith("start of backward"))
    tokens = 32
    layer_inputs = ARCH.num_layers * 2 * 64 * tokens
    final_norm_and_head = (4 * 64 + 4 + 2 * 64 + 2 * 64 + 8) * tokens
    loss = 12 * 256 * tokens
    assert start.breakdown(1)["activations"] == layer_inputs + final_norm_and_head + loss


def test_lora_dropout_adds_a_mask_byte_per_adapted_input() -> None:
    targets = ("q_proj", "v_proj")
    with_drop = phase("lora", "end of forward", lora_targets=targets, lora_dropout=0.1)
    without = phase("lora", "end of forward", lora_targets=targets, lora_dropout=0.0)
    tokens = 2 * 16
    assert with_drop["activations"] - without["activations"] == 2 * 64 * ARCH.num_layers * tokens


def test_lora_trains_only_adapters_in_fp32() -> None:
    b = phase("lora", "optimizer step", lora_targets=("q_proj", "v_proj"), lora_rank=8)
    adapter = ARCH.num_layers * (8 * (64 + 64) + 8 * (64 + 32))
    assert b["adapters"] == 4 * adapter
    assert b["gradients"] == 4 * adapter
    assert b["weights"] == 2 * N


def test_qlora_stores_block_linears_in_nf4_with_double_quantised_absmax() -> None:
    b = phase("qlora", "optimizer step", kbit_prepare=False)
    split = split_parameters(ARCH)
    assert b["weights"] == round(split.block_linears / 2 + (N - split.block_linears) * 2)
    absmax = split.block_linears / 64 * (1 + 4 / 256)
    dequant = split.largest_linear * 2
    assert b["quantization_overhead"] == round(absmax + dequant)


def test_a_gptq_base_keeps_a_16_bit_scale_and_a_4_bit_zero_per_128_inputs() -> None:
    b = phase("qlora", "optimizer step", kbit_prepare=False, qlora_format="gptq")
    split = split_parameters(ARCH)
    assert b["weights"] == round(split.block_linears / 2 + (N - split.block_linears) * 2)
    constants = split.block_linears * 2.5 / 128
    assert b["quantization_overhead"] == round(constants + split.largest_linear * 2)


def test_fsdp_gathers_a_qlora_layer_packed_and_a_lora_layer_in_16_bit() -> None:
    block = ARCH.blocks[0]
    linear = sum(lin.in_features * lin.out_features * lin.copies for lin in block.linears)
    cublas = 32 * 2**20
    last = "backward through the last layer"
    lora = phase("lora", last, gpus=2)["framework_overhead"] - cublas
    qlora = phase("qlora", last, gpus=2, kbit_prepare=False)["framework_overhead"]
    # One layer gathered plus one prefetched, each as FSDP's flat parameters store it;
    # resharded by the optimizer step.
    assert phase("lora", "optimizer step", gpus=2)["framework_overhead"] == cublas
    root = (N - ARCH.in_block_parameters) * 2  # the root unit stays gathered for backward
    assert lora == 2 * block.parameters * 2 + root
    packed = linear / 2 + linear / 64 * (1 + 4 / 256)
    assert qlora - cublas == round(2 * (packed + (block.parameters - linear) * 2) + root)


def test_kbit_preparation_keeps_every_parameter_that_is_not_4bit_in_fp32() -> None:
    b = phase("qlora", "optimizer step", kbit_prepare=True)
    split = split_parameters(ARCH)
    # peft's prepare_model_for_kbit_training: embeddings, norms and head cast to float32.
    assert b["weights"] == round(split.block_linears / 2 + (N - split.block_linears) * 4)


def test_kbit_preparation_makes_checkpointed_layer_inputs_fp32_on_one_gpu_only() -> None:
    def saved(prepare: bool, gpus: int) -> int:
        w = Workload(
            method="qlora",
            batch=1,
            seq_len=32,
            grad_checkpointing=True,
            pure_16bit=True,
            kbit_prepare=prepare,
            gpus=gpus,
        )
        model = method_models(ARCH, w, has_bf16=True)["qlora"]
        start = next(p for p in model.phases if p.name.startswith("start of backward"))
        return start.breakdown(1)["activations"]

    # fp32 embeddings make the residual stream fp32: each kept layer input doubles;
    # the fp32 head makes fp32 logits directly: no 16-bit logits (2 B per logit).
    no_16bit_logits = 2 * 256 * 32
    grown = saved(True, 1) - saved(False, 1) + no_16bit_logits
    assert grown >= ARCH.num_layers * 2 * 64 * 32
    # FSDP's mixed precision casts the upcast parameters back to 16-bit for the forward.
    assert saved(True, 2) == saved(False, 2)


def test_moe_tokens_visit_top_k_experts() -> None:
    def saved(top_k: int) -> int:
        arch = llama_like(experts=4, top_k=top_k)
        w = Workload(method="full", batch=1, seq_len=8, adamw_impl="fused")
        model = method_models(arch, w, has_bf16=True)["full"]
        return next(p for p in model.phases if p.name == "end of forward").breakdown(1)[
            "activations"
        ]

    one, two = saved(1), saved(2)
    assert two > one
    assert saved(3) - two == two - one  # each extra expert per token adds the same bytes


def test_device_bytes_add_reserve_and_context_to_allocated() -> None:
    w = Workload(method="full", batch=2, seq_len=16)
    model = method_models(ARCH, w, has_bf16=True)["full"]
    e = evaluate(model, 2, 500_000_000, 1)
    assert e.peak_allocated_bytes == sum(dict(e.breakdown).values())
    assert e.reserved_bytes >= e.peak_allocated_bytes
    assert e.device_bytes == e.reserved_bytes + 500_000_000


T5_CONFIG = {
    "model_type": "t5",
    "architectures": ["T5ForConditionalGeneration"],
    "d_model": 64,
    "d_kv": 16,
    "d_ff": 128,
    "num_heads": 4,
    "num_layers": 3,
    "num_decoder_layers": 2,
    "vocab_size": 256,
    "feed_forward_proj": "gated-gelu",
}


def test_a_stacks_first_t5_block_is_computed_with_the_rest_and_keeps_its_bytes() -> None:
    from dataclasses import replace

    from estimator.families import describe
    from estimator.memory.training import placements

    arch = describe(T5_CONFIG)
    encoder_first, encoder_rest, decoder_first = arch.blocks[0], arch.blocks[1], arch.blocks[3]
    # The first block adds only the relative position bias; its linears are the rest's.
    assert encoder_first.parameters - encoder_rest.parameters == 32 * 4
    assert encoder_first.linears is encoder_rest.linears
    groups = placements(arch, True, None)
    assert [(b.index, b.stack, n) for b, _, n in groups] == [(0, "encoder", 3), (3, "decoder", 2)]
    assert decoder_first is groups[1][0]

    # The same layers with the first blocks' linears as distinct (equal) objects.
    def unshared(b: Block) -> Block:
        return replace(b, linears=tuple(list(b.linears)))

    apart = replace(
        arch, blocks=tuple(unshared(b) if b.index in (0, 3) else b for b in arch.blocks)
    )
    assert len(placements(apart, True, None)) == 4
    for method in ("full", "lora", "qlora"):
        w = Workload(method=method, batch=2, seq_len=16)  # type: ignore[arg-type]
        shared = method_models(arch, w, has_bf16=True)[method]
        separate = method_models(apart, w, has_bf16=True)[method]
        assert [p.breakdown(2) for p in shared.phases] == [p.breakdown(2) for p in separate.phases]


def test_gradients_zero_filled_by_torch_1s_zero_grad_are_there_through_the_forward() -> None:
    """torch 1.x zero_grad() zero-filled gradients in place (set_to_none=False); torch 2 frees them."""
    freed = phase("full", "end of forward", precision="fp32")
    kept = phase("full", "end of forward", precision="fp32", zero_grad_set_to_none=False)
    assert freed["gradients"] == 0
    assert kept["gradients"] == 4 * N  # every fp32 gradient, allocated since the last step
    assert kept["activations"] == freed["activations"]
    step = phase("full", "optimizer step", precision="fp32", zero_grad_set_to_none=False)
    assert step["gradients"] == kept["gradients"]
