"""Cards come from the data file; fits are consistent with device bytes and headroom."""

from __future__ import annotations

import pytest

from estimator import Workload, WorkloadError, all_cards, card
from estimator.fit import fit_card, fit_cards, fit_method
from estimator.memory import evaluate, method_models
from tests.estimator.archbuilder import llama_like

NAMES = {
    "T4",
    "L4",
    "A10G",
    "RTX 4090",
    "L40S",
    "A100 40GB",
    "A100 80GB",
    "H100 80GB",
    "H200",
    "MI300X",
    "RTX 3090",
    "RTX 4060",
    "RTX 4070",
    "RTX 4080",
    "RTX 6000 Ada",
    "V100",
    "A6000",
    "L40",
    "H20",
    "B200",
}


def test_the_cards_of_the_catalogue_are_present_with_sources() -> None:
    cards = all_cards()
    assert {c.name for c in cards} == NAMES
    for c in cards:
        assert c.usable_bytes < c.memory_gb * 1.1e9
        assert c.spec_source
        assert c.price is None or (c.price.provider and c.price.date and c.price.source)
    assert card("t4").bf16 is False
    assert card("A100-80GB").name == "A100 80GB"
    assert card("v100").bf16 is False
    assert card("RTX 6000 Ada Generation").name == "RTX 6000 Ada"


def test_memory_is_what_nvidia_smi_reports_in_mib() -> None:
    """The added cards carry nvidia-smi's memory.total (MiB) exactly, as their sources quote it."""
    mib = {"RTX 3090": 24576, "RTX 4060": 8188, "RTX 4070": 12282, "RTX 4080": 16376}
    mib |= {"RTX 6000 Ada": 49140, "V100": 32768, "A6000": 49140, "L40": 46068}
    mib |= {"H20": 97871, "B200": 183359}
    for name, value in mib.items():
        assert card(name).usable_bytes == value * 2**20
        assert f"{value}MiB" in card(name).spec_source


def test_unknown_card_names_the_known_ones() -> None:
    with pytest.raises(WorkloadError, match="A10G"):
        card("V200")


@pytest.mark.parametrize("method", ["full", "lora", "qlora", "serve"])
def test_largest_batch_is_the_boundary_of_fitting(method: str) -> None:
    arch = llama_like(hidden=512, layers=8, heads=8, kv_heads=8, intermediate=2048, vocab=32000)
    w = Workload(method=method, seq_len=2048)  # type: ignore[arg-type]
    model = method_models(arch, w, has_bf16=True)[method]
    t4 = card("T4")
    fit = fit_method(model, t4, 1, 1, 1.15)
    assert fit.largest_batch > 0
    at = evaluate(model, fit.largest_batch, t4.context_bytes, 1).device_bytes
    above = evaluate(model, fit.largest_batch + 1, t4.context_bytes, 1).device_bytes
    assert at * 1.15 <= t4.usable_bytes < above * 1.15


def test_a_model_too_large_for_one_card_gets_the_smallest_layer_split() -> None:
    arch = llama_like(hidden=4096, layers=32, heads=32, kv_heads=8, intermediate=14336, vocab=32000)
    model = method_models(arch, Workload(method="serve", seq_len=512), True)["serve"]
    fit = fit_method(model, card("T4"), 1, 1, 1.15)
    assert fit.largest_batch == 0
    assert fit.split_cards == 2
    assert fit.split_per_card_bytes is not None
    assert fit.split_per_card_bytes * 1.15 <= card("T4").usable_bytes


def test_fit_cards_answers_as_fit_card_does_on_every_card() -> None:
    arch = llama_like(hidden=2048, layers=24, heads=16, kv_heads=4, intermediate=8192, vocab=32000)
    for batch in (1, 64, 4096):
        w = Workload(batch=batch, seq_len=2048)
        models = method_models(arch, w, True)
        expected = tuple(fit_card(models, c, batch, 1, 1.15, "bf16") for c in all_cards())
        assert fit_cards(models, all_cards(), batch, 1, 1.15, "bf16") == expected


def test_every_card_has_a_dated_price_with_its_source_or_says_why_not() -> None:
    for c in all_cards():
        if c.price is None:
            assert c.price_note, c.name
        else:
            assert c.price.usd_per_hour > 0 and c.price.date[:4].isdigit() and c.price.source
    a100 = card("A100 40GB")
    assert a100.price is not None and a100.price.usd_per_hour == 4.096


def test_cost_names_the_price_or_the_reason_there_is_none() -> None:
    from estimator import plan

    cfg = {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4}
    cfg |= {"num_hidden_layers": 2, "intermediate_size": 128, "vocab_size": 256}
    priced = plan(cfg, Workload(card="A100 40GB", batch=1, seq_len=64)).cost
    assert priced.usd is not None and "p4d.24xlarge" in (priced.price_source or "")
    unpriced = plan(cfg, Workload(card="RTX 4060", batch=1, seq_len=64)).cost
    assert unpriced.usd is None and "consumer card" in (unpriced.price_source or "")
