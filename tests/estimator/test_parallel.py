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
    # Two 16-bit reduce buffers of hidden² (overlap_comm); parameters reused within
    # stage3_max_reuse_distance (1e9 elements) stay gathered: this whole small model.
    expected = 2 * h * h * 2 + N * 2
    assert running["framework_overhead"] - CUBLAS == round(expected)


def test_zero3_keeps_at_most_max_live_parameters_gathered() -> None:
    from estimator.memory.sharding import ZERO_MAX_LIVE_PARAMETERS

    big = llama_like(hidden=8192, layers=16, heads=64, kv_heads=8, intermediate=28672, vocab=32000)
    w = Workload(method="lora", batch=1, seq_len=16, gpus=8, parallelism="zero", zero_stage=3)
    model = method_models(big, w, has_bf16=True)["lora"]
    running = next(p for p in model.phases if p.name == LAST).breakdown(1)
    h = big.hidden_size
    # 1e9 live 16-bit elements plus the two hidden² reduce buffers of the adapters' gradients.
    assert running["framework_overhead"] - CUBLAS == round(ZERO_MAX_LIVE_PARAMETERS * 2 + 4 * h * h)
    assert big.total_parameters > ZERO_MAX_LIVE_PARAMETERS > 0.9 * h * h


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
