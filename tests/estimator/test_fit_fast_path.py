"""plan()'s fast paths give the answers of the plain formulas they replace.

``fit_cards`` (one pass over all cards, one subtraction for "does batch 1
fit", dominated phases skipped, busiest-card bytes remembered per card
count) must equal ``fit_card`` per card, which calls the model's own
``largest_batch`` and ``smallest_split``; ``MethodModel.peak_phase`` and
``reserved`` must equal ``Phase.at`` and ``_reserved_affine`` over the phases.
Checked on real configs (T5 encoder-decoder, a 70B Llama, BLOOM, BERT) and
on workloads where every card fits, none does, or only splits do.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from estimator import Workload, all_cards
from estimator.families import describe
from estimator.fit import fit_card, fit_cards
from estimator.memory import method_models
from tests.estimator.archbuilder import llama_like

PUBLIC = Path(__file__).resolve().parents[1] / "bench" / "data" / "public_configs.json"
CONFIGS = ("bigscience/mt0-xxl", "NousResearch/Llama-2-70b-hf", "bigscience/bloomz-7b1")
WORKLOADS = (
    Workload(),
    Workload(method="lora", gpus=2),
    Workload(method="qlora", batch=1, seq_len=4096),
    Workload(method="serve", batch=256, gpus=4),
    Workload(batch=4, grad_checkpointing=True, gpus=2, parallelism="zero", zero_stage=2),
    Workload(method="lora", batch=4096, headroom=1.0),
)


def _public(name: str) -> dict[str, object]:
    configs: dict[str, dict[str, object]] = json.loads(PUBLIC.read_text())
    return configs[name]


@pytest.mark.parametrize("name", CONFIGS)
@pytest.mark.parametrize("w", WORKLOADS, ids=lambda w: f"{w.method}-b{w.batch}-g{w.gpus}")
def test_fit_cards_equals_fit_card_on_real_configs(name: str, w: Workload) -> None:
    arch = describe(_public(name))
    models = method_models(arch, w, True)
    expected = tuple(
        fit_card(models, c, w.batch, w.gpus, w.headroom, w.precision) for c in all_cards()
    )
    got = fit_cards(method_models(arch, w, True), all_cards(), w.batch, w.gpus, w.headroom, "bf16")
    assert got == expected
    # Not vacuous: these configs put some methods below batch 1 on some cards.
    if name != "bigscience/bloomz-7b1":
        assert any(m.largest_batch == 0 for fit in got for m in fit.methods)


def test_a_model_needing_splits_on_every_card_gets_the_same_splits() -> None:
    arch = llama_like(hidden=8192, layers=80, heads=64, kv_heads=8, intermediate=28672)
    w = Workload(batch=1, seq_len=2048)
    models = method_models(arch, w, True)
    got = fit_cards(method_models(arch, w, True), all_cards(), 1, 1, 1.15, "bf16")
    assert got == tuple(fit_card(models, c, 1, 1, 1.15, "bf16") for c in all_cards())
    splits = [m.split_cards for fit in got for m in fit.methods if m.split_cards is not None]
    assert splits and all(2 <= n <= 8 for n in splits)


@pytest.mark.parametrize("name", CONFIGS)
def test_peak_phase_and_reserve_equal_the_phase_formulas(name: str) -> None:
    arch = describe(_public(name))
    for model in method_models(arch, Workload(method="lora"), True).values():
        for batch in (1, 7, 512):
            assert model.peak_phase(batch) is max(model.phases, key=lambda p: p.at(batch))
            assert model.reserved(batch) == round(
                max(model._reserved_affine(p, batch) for p in model.phases)
            )
