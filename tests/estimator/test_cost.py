"""Cost: 6N·tokens plus attention at the stated MFU; decode from the bandwidth roofline."""

from __future__ import annotations

import json

import pytest

from estimator import Workload, plan
from estimator.cost import active_parameters
from tests.estimator.archbuilder import llama_like


def config(corpus_dir, repo: str) -> dict:  # type: ignore[no-untyped-def]
    paths = sorted((corpus_dir / repo).glob("*/config.json"))
    return json.loads(paths[-1].read_text())


def test_default_training_time_is_six_n_tokens_plus_attention_over_mfu(corpus_dir) -> None:  # type: ignore[no-untyped-def]
    cfg = config(corpus_dir, "meta-llama/Llama-3.2-1B")
    p = plan(cfg)
    n = p.to_json()["parameters"]["total"]
    tokens = 10 * 50_000 * 512
    arch_layers, hidden = p.to_json()["model"]["num_layers"], p.to_json()["model"]["hidden_size"]
    flops = (6 * n + 12 * arch_layers * hidden * 512) * tokens
    assert p.cost.training_flops == pytest.approx(flops)
    assert p.cost.compute_seconds == pytest.approx(flops / (70e12 * 0.35))
    assert p.cost.usd == pytest.approx(p.cost.seconds / 3600 * 1.006)


def test_lora_costs_two_thirds_of_full_fine_tuning_in_weight_flops() -> None:
    arch = llama_like()
    from estimator.cost import flops_per_token

    w = Workload(seq_len=1)
    n = arch.total_parameters
    attention = 12 * arch.num_layers * arch.hidden_size
    assert flops_per_token(arch, w, "lora", n) - attention == pytest.approx(4 * n)
    assert flops_per_token(arch, w, "qlora", n) == pytest.approx(1.56 * (4 * n + attention))


def test_moe_decode_uses_active_parameters() -> None:
    arch = llama_like(experts=8, top_k=2)
    expert_params = sum(lin.parameters for b in arch.blocks for lin in b.linears if lin.copies == 8)
    assert active_parameters(arch) == arch.total_parameters - expert_params * 6 // 8
