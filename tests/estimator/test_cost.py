"""Cost: 6N·tokens plus attention at the stated MFU; decode from the bandwidth roofline."""

from __future__ import annotations

import json

import pytest

from estimator import Workload, plan
from estimator.parameters import active_parameters
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
    # a full fine-tune of 1.2B parameters does not fit an A10G: the job is not priced
    assert not next(c for c in p.cards if c.card.name == "A10G").method("full").fits
    assert p.cost.usd is None and p.cost.price_source == "not priced: does not fit A10G at batch 32"
    lora = plan(cfg, Workload(method="lora", batch=1)).cost  # fits: priced at A10G's $1.006/h
    assert lora.usd == pytest.approx(lora.seconds / 3600 * 1.006)


def test_lora_costs_two_thirds_of_full_fine_tuning_in_weight_flops() -> None:
    arch = llama_like()
    from estimator.cost import flops_per_sample

    w = Workload(seq_len=1)
    n = arch.total_parameters
    attention = 12 * arch.num_layers * arch.hidden_size
    assert flops_per_sample(arch, w, "lora", n) - attention == pytest.approx(4 * n)
    assert flops_per_sample(arch, w, "qlora", n) == pytest.approx(1.56 * (4 * n + attention))


def test_moe_decode_uses_active_parameters() -> None:
    arch = llama_like(experts=8, top_k=2)
    expert_params = sum(lin.parameters for b in arch.blocks for lin in b.linears if lin.copies == 8)
    assert active_parameters(arch) == arch.total_parameters - expert_params * 6 // 8


def test_an_encoder_decoder_trains_its_decoder_over_the_target_length(corpus_dir) -> None:  # type: ignore[no-untyped-def]
    """flan-t5-large, 512 input tokens, 8 label tokens: the 24 encoder layers see 512
    tokens, the 24 decoder layers, embeddings and head 8, cross-attention 8 x 512."""
    cfg = config(corpus_dir, "google/flan-t5-large")
    p = plan(cfg, Workload(method="full", seq_len=512, target_len=8))
    params = p.to_json()["parameters"]
    total, blocks = params["total"], params["per_block"]
    encoder = sum(blocks[:24])
    h, s, t = 1024, 512, 8
    per_sample = 6 * (encoder * s + (total - encoder) * t) + 12 * h * 24 * (s * s + t * t + t * s)
    assert p.cost.training_flops == pytest.approx(per_sample * 10 * 50_000)
    # without a target length the decoder runs over the input length, as before
    same = plan(cfg, Workload(method="full", seq_len=512)).cost.training_flops
    assert same == pytest.approx(
        (6 * total * s + 12 * h * 48 * s * s + 12 * h * 24 * s * s) * 500_000
    )
    assert "the decoder over 8 tokens" in p.cost.assumptions[0]
