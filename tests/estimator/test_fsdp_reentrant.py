"""FSDP with frozen layer units under reentrant checkpointing keeps every layer's input.

A Llama-like model (hidden 1024, 32 layers, vocabulary 4,096) trained with QLoRA on 2
GPUs, 2 x 512 tokens per GPU, checkpointed: with ``use_reentrant=True`` each layer's
checkpointed input and its gradient live until backward ends, so the first layer's
backward holds every input plus 31 gradients of the input's shape.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from estimator import Workload, plan
from estimator.memory.training import checkpoint_inputs_kept
from tests.estimator.phase_terms import activations_at

CONFIG = {
    "model_type": "llama",
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 1024,
    "intermediate_size": 2816,
    "num_hidden_layers": 32,
    "num_attention_heads": 16,
    "num_key_value_heads": 4,
    "vocab_size": 4096,
    "max_position_embeddings": 4096,
    "torch_dtype": "bfloat16",
}
FSDP_QLORA = Workload(
    method="qlora",
    batch=2,
    seq_len=512,
    grad_checkpointing=True,
    gpus=2,
    parallelism="fsdp",
    pure_16bit=False,
    reentrant_checkpointing=True,
)


def activations(w: Workload, phase_name: str) -> float:
    return activations_at(CONFIG, w, phase_name)


def test_the_first_layers_backward_still_holds_every_input_and_31_gradients() -> None:
    stream = 2 * 512 * 1024 * 2  # one layer's bf16 input: 2 samples x 512 tokens x 1024
    last = activations(FSDP_QLORA, "backward through the last layer")  # every input saved
    first = activations(FSDP_QLORA, "backward through the first layer")
    assert first - last == pytest.approx(31 * stream)
    # Non-reentrant, the inputs go as backward passes their layers: by the first layer
    # only its own input and the working set are left.
    freed = replace(FSDP_QLORA, reentrant_checkpointing=False)
    assert activations(freed, "backward through the last layer") == last
    assert activations(freed, "backward through the first layer") < last - 31 * stream


@pytest.mark.parametrize(
    ("change", "kept"),
    [
        ({}, True),
        ({"reentrant_checkpointing": False}, False),  # transformers 5's default
        ({"method": "full"}, False),  # units with trainable weights reshard after backward
        ({"gpus": 1}, False),  # one GPU, no FSDP
        ({"parallelism": "zero"}, False),  # DeepSpeed has no such hook
        ({"grad_checkpointing": False}, False),
        ({"gpus": 1, "offload_params": True}, True),  # FSDP's CPU offload on one GPU
    ],
)
def test_only_fsdp_with_frozen_units_and_reentrant_checkpointing_keeps_them(
    change: dict[str, object], kept: bool
) -> None:
    w = replace(FSDP_QLORA, **change)  # type: ignore[arg-type]
    assert checkpoint_inputs_kept(w, w.method) is kept


def test_the_plan_names_the_retention_and_peaks_in_the_first_layers_backward() -> None:
    p = plan(CONFIG, FSDP_QLORA)
    assert p.selected.peak_phase == "backward through the first layer"
    assert any("keeps every checkpointed layer input" in a for a in p.assumptions)
    without = plan(CONFIG, replace(FSDP_QLORA, reentrant_checkpointing=False))
    assert without.selected.peak_allocated_bytes < p.selected.peak_allocated_bytes
    assert not any("keeps every checkpointed layer input" in a for a in without.assumptions)
