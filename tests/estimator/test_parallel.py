"""What one rank keeps under FSDP strategies, ZeRO stages, DDP and CPU offload."""

from __future__ import annotations

import pytest

from estimator import Workload, WorkloadError
from estimator.memory import method_models
from tests.estimator.archbuilder import llama_like

ARCH = llama_like(hidden=64, layers=4, heads=4, kv_heads=2, intermediate=128, vocab=256)
N = ARCH.total_parameters
BLOCK = ARCH.blocks[0].parameters
# FSDP's root unit (embeddings, final norm, head) stays gathered in bf16 through backward.
ROOT = (N - ARCH.in_block_parameters) * 2
CUBLAS = 32 * 2**20
LAST = "backward through the last layer"
STEP = "optimizer step"


def phase(method: str, name: str, **workload: object) -> dict[str, int]:
    w = Workload(method=method, batch=2, seq_len=16, adamw_impl="fused", **workload)  # type: ignore[arg-type]
    model = method_models(ARCH, w, has_bf16=True)[method]
    return next(p for p in model.phases if p.name == name).breakdown(2)


def test_full_shard_splits_states_and_gathers_two_layers_and_one_gradient() -> None:
    one = phase("full", STEP)
    four = phase("full", STEP, gpus=4)
    assert four["weights"] == round(one["weights"] / 4)
    assert four["optimizer_state"] == round(one["optimizer_state"] / 4)
    running = phase("full", LAST, gpus=4)["framework_overhead"] - CUBLAS
    # limit_all_gathers: two layers in bf16, plus the running layer's fp32 unsharded gradient,
    # plus the root unit (not resharded after forward).
    assert running == 2 * BLOCK * 2 + BLOCK * 4 + ROOT
    assert four["framework_overhead"] == CUBLAS  # resharded before the step


def test_shard_grad_op_keeps_every_layer_gathered_through_backward() -> None:
    running = phase("full", LAST, gpus=4, sharding_strategy="SHARD_GRAD_OP")
    gathered = running["framework_overhead"] - CUBLAS
    assert gathered == round(4 * BLOCK * 2 * (1 - 1 / 4) + BLOCK * 4 + ROOT)


def test_hybrid_shard_splits_within_a_node_only() -> None:
    one = phase("full", STEP)
    hybrid = phase("full", STEP, gpus=16, gpus_per_node=8, sharding_strategy="HYBRID_SHARD")
    assert hybrid["weights"] == round(one["weights"] / 8)
    assert hybrid["optimizer_state"] == round(one["optimizer_state"] / 8)


def test_no_shard_and_ddp_replicate_and_copy_gradients_into_buckets() -> None:
    one = phase("full", STEP)
    for kw in ({"sharding_strategy": "NO_SHARD"}, {"parallelism": "ddp"}):
        rank = phase("full", STEP, gpus=4, **kw)
        assert rank["weights"] == one["weights"]
        assert rank["framework_overhead"] == CUBLAS + 4 * N


def test_zero_stages_partition_optimizer_then_gradients_then_weights() -> None:
    h = ARCH.hidden_size
    z1 = phase("full", STEP, gpus=4, parallelism="zero", zero_stage=1)
    z2 = phase("full", STEP, gpus=4, parallelism="zero", zero_stage=2)
    z3 = phase("full", STEP, gpus=4, parallelism="zero", zero_stage=3)
    # 16-bit weights and gradients; fp32 master + AdamW m, v (12 B) partitioned.
    assert (z1["weights"], z1["gradients"], z1["optimizer_state"]) == (2 * N, 2 * N, 3 * N)
    assert (z2["weights"], z2["gradients"]) == (2 * N, round(2 * N / 4))
    assert z3["weights"] == round(2 * N / 4) and z3["gradients"] == round(2 * N / 4)
    running = phase("full", LAST, gpus=4, parallelism="zero", zero_stage=3)
    # One 16-bit gradient bucket of hidden² ("auto"); every layer and the head fall in
    # the forward's last 5e8 elements, so they stay gathered, plus a 0.9·hidden² prefetch.
    resident = ARCH.in_block_parameters + ARCH.vocab_size * h  # not the embedding: used first
    expected = h * h * 2 + (resident + 0.9 * h * h) * 2
    assert running["framework_overhead"] - CUBLAS == round(expected)


BIG = llama_like(hidden=8192, layers=16, heads=64, kv_heads=8, intermediate=28672, vocab=32000)


def big_running(method: str = "lora", **workload: object) -> dict[str, int]:
    w = Workload(method=method, batch=1, seq_len=16, parallelism="zero", zero_stage=3, **workload)  # type: ignore[arg-type]
    model = method_models(BIG, w, has_bf16=True)[method]
    return next(p for p in model.phases if p.name == LAST).breakdown(1)


def test_zero3_keeps_the_forwards_last_half_reuse_distance_gathered() -> None:
    h = BIG.hidden_size
    # The head (32,000 x 8,192) and the layers before it up to 5e8 elements: a module's next
    # use is its backward, twice the elements after it away, within max_reuse_distance 1e9.
    running = big_running(gpus=8)
    assert running["framework_overhead"] - CUBLAS == round((5e8 + 0.9 * h * h) * 2 + h * h * 2)
    assert BIG.total_parameters > 2 * 5e8


def test_deepspeeds_own_bucket_sizes_apply_where_the_config_names_none() -> None:
    # accelerate's yaml writes no bucket keys: a 5e8-element gradient bucket, a 5e7 prefetch
    running = big_running(gpus=8, zero_auto_buckets=False)
    assert running["framework_overhead"] - CUBLAS == round((5e8 + 5e7) * 2 + 5e8 * 2)


def test_an_offloaded_fetch_briefly_holds_the_largest_tensor_twice() -> None:
    # A vocabulary of 131,072 x 8,192 (1.07e9) is past half the reuse distance: the head
    # alone stays gathered, and fetching it from the CPU copies its partition beside it.
    wide = llama_like(hidden=8192, layers=4, heads=64, kv_heads=8, intermediate=28672, vocab=131072)
    w = Workload(
        method="lora",
        batch=1,
        seq_len=16,
        parallelism="zero",
        zero_stage=3,
        offload_params=True,
        offload_optimizer=True,
        zero_auto_buckets=False,
    )
    model = method_models(wide, w, has_bf16=True)["lora"]
    running = next(p for p in model.phases if p.name == LAST).breakdown(1)
    head = 131072 * 8192
    assert running["weights"] == 0
    assert running["framework_overhead"] - CUBLAS == round((head + 5e7 + head) * 2 + 5e8 * 2)


def test_under_zero3_frozen_linears_keep_their_inputs() -> None:
    """zero.Init's linear saves (input, weight, bias) for every layer; autograd's own
    linear keeps a frozen weight's input only when something trains beside it."""

    def saved(**workload: object) -> float:
        w = Workload(method="lora", batch=1, seq_len=16, lora_targets=("q_proj",), **workload)  # type: ignore[arg-type]
        model = method_models(ARCH, w, has_bf16=True)["lora"]
        return next(p for p in model.phases if p.name == "end of forward").breakdown(1)[
            "activations"
        ]

    assert saved(gpus=2, parallelism="zero", zero_stage=3) > saved(gpus=2, parallelism="fsdp")
    assert saved(gpus=2, parallelism="zero", zero_stage=2) == saved(gpus=2, parallelism="ddp")


def test_optimizer_offload_keeps_16bit_weights_on_the_gpu() -> None:
    off = phase("full", STEP, offload_optimizer=True)
    assert off["optimizer_state"] == 0 and off["gradients"] == 0
    assert off["weights"] == 2 * N


def test_parameter_offload_keeps_only_gathered_layers() -> None:
    off = phase("lora", LAST, gpus=2, offload_params=True)
    assert off["weights"] == 0 and off["optimizer_state"] == 0
    # Two in flight plus the one being copied back from the CPU.
    assert off["framework_overhead"] - CUBLAS == 3 * BLOCK * 2 + ROOT


def test_activation_offload_keeps_two_layer_inputs() -> None:
    kept = phase("lora", "start of backward (loss gradients)", grad_checkpointing=True)
    off = phase(
        "lora",
        "start of backward (loss gradients)",
        grad_checkpointing=True,
        offload_activations=True,
    )
    assert off["activations"] < kept["activations"]
    per_layer_input = 2 * 16 * ARCH.hidden_size * 2  # batch 2 x 16 tokens x h x bf16
    assert kept["activations"] - off["activations"] == (ARCH.num_layers - 2) * per_layer_input


def test_parallel_settings_are_validated() -> None:
    with pytest.raises(WorkloadError, match="zero_stage"):
        Workload(zero_stage=4)
    with pytest.raises(WorkloadError, match="sharding_strategy"):
        Workload(sharding_strategy="ZERO")  # type: ignore[arg-type]
    with pytest.raises(WorkloadError, match="offload_params needs zero_stage 3"):
        Workload(gpus=2, parallelism="zero", zero_stage=2, offload_params=True)
