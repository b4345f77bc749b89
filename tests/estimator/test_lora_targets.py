"""LoRA targets by role name, mapped per family; a name matching nothing is a finding."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from estimator import Workload, plan
from estimator.families import describe
from estimator.memory.lora import resolve_targets

NEOX: dict[str, Any] = {
    "model_type": "gpt_neox",
    "architectures": ["GPTNeoXForCausalLM"],
    "hidden_size": 64,
    "num_attention_heads": 4,
    "num_hidden_layers": 2,
    "intermediate_size": 256,
    "vocab_size": 512,
    "max_position_embeddings": 2048,
}
LLAMA: dict[str, Any] = {
    "model_type": "llama",
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 64,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "num_hidden_layers": 2,
    "intermediate_size": 128,
    "vocab_size": 512,
    "max_position_embeddings": 2048,
}


@pytest.mark.parametrize(
    ("config", "role", "modules"),
    [
        (LLAMA, "qkv", ("k_proj", "q_proj", "v_proj")),
        (LLAMA, "attention", ("k_proj", "o_proj", "q_proj", "v_proj")),
        (LLAMA, "mlp", ("down_proj", "gate_proj", "up_proj")),
        (NEOX, "qkv", ("query_key_value",)),
        (NEOX, "attention", ("dense", "query_key_value")),
        (NEOX, "mlp", ("dense_4h_to_h", "dense_h_to_4h")),
    ],
)
def test_roles_map_to_each_familys_own_linears(
    config: dict[str, Any], role: str, modules: tuple[str, ...]
) -> None:
    assert resolve_targets(describe(config), (role,)).modules == modules


def test_per_head_names_on_a_fused_qkv_model_read_as_the_fused_linear() -> None:
    r = resolve_targets(describe(NEOX), ("q_proj", "v_proj"))
    assert r.modules == ("query_key_value",) and r.unmatched == ()
    p = plan(NEOX, Workload(method="lora", batch=1, seq_len=64, lora_targets=("q_proj", "v_proj")))
    assert not p.findings or all(f.id != "lora-targets-unmatched" for f in p.findings)
    assert any("query_key_value" in a and "q_proj read as" in a for a in p.assumptions)


def test_role_adapters_match_the_same_modules_named_by_hand() -> None:
    w = Workload(method="lora", batch=1, seq_len=64)
    by_role = plan(LLAMA, replace(w, lora_targets=("qkv",)))
    by_name = plan(LLAMA, replace(w, lora_targets=("q_proj", "k_proj", "v_proj")))
    assert by_role.selected.breakdown == by_name.selected.breakdown
    # r=16 on q (64->64), k and v (64->32), 2 layers, fp32: 16*(128+96+96)*2 params x 4 B.
    assert dict(by_role.selected.breakdown)["adapters"] == 16 * (128 + 96 + 96) * 2 * 4


def test_a_name_matching_nothing_is_a_finding_listing_the_models_linears() -> None:
    w = Workload(method="lora", batch=1, seq_len=64, lora_targets=("c_attn",))
    p = plan(NEOX, w)
    found = [f for f in p.findings if f.id == "lora-targets-unmatched"]
    assert len(found) == 1 and found[0].severity == "warning"
    assert "c_attn" in found[0].message
    assert "dense_4h_to_h, dense_h_to_4h, query_key_value" in found[0].message
    all_linear = plan(NEOX, Workload(method="lora", batch=1, seq_len=64))
    assert p.selected.peak_allocated_bytes == all_linear.selected.peak_allocated_bytes
