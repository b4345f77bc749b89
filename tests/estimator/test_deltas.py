"""estimator.delta: one wording, one unit (GiB) and one severity policy for every estimate move."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from pathlib import Path

import pytest

import estimator
from estimator import DeltaEntry, Plan, PlanDelta, Workload, delta, plan
from estimator.deltas import GIB, METHOD_LABELS, gib, method_label
from tests.estimator import configgen

CONFIG = json.loads(
    (Path(__file__).parents[1] / "data/configs/llama-3.2-1b/config.json").read_text()
)


@pytest.fixture(scope="module")
def pair() -> tuple[Plan, Plan]:
    deeper = {**CONFIG, "num_hidden_layers": CONFIG["num_hidden_layers"] * 2}
    return plan(CONFIG, estimator.STATED_WORKLOAD), plan(deeper, estimator.STATED_WORKLOAD)


def test_delta_is_exported_and_empty_without_both_plans(pair: tuple[Plan, Plan]) -> None:
    assert "delta" in estimator.__all__ and estimator.delta is delta
    old, new = pair
    assert delta(None, new) == PlanDelta() and delta(old, None).empty
    assert delta(old, old).empty
    assert delta(old, Plan.from_json(json.loads(json.dumps(old.to_json())))).empty


def test_every_moved_number_is_an_entry_with_both_values(pair: tuple[Plan, Plan]) -> None:
    old, new = pair
    d = delta(old, new)
    params = d.parameters
    assert params is not None
    assert (params.old, params.new) == (
        dict(old.parameters)["total"],
        dict(new.parameters)["total"],
    )
    assert params.severity == "high" and params.unit == "parameters"
    assert params.message == f"parameters {params.old:,} -> {params.new:,}"
    assert params.relative == pytest.approx((params.new - params.old) / params.old)
    assert [m.method for m in d.methods] == list(METHOD_LABELS)  # one entry per method
    lora = next(m for m in d.methods if m.method == "lora")
    before = dict(old.memory)["lora"].peak_allocated_bytes
    after = dict(new.memory)["lora"].peak_allocated_bytes
    assert (lora.old, lora.new, lora.unit) == (before, after, "bytes")
    was = next(c for c in old.cards if c.card.name == "A10G").method("lora")
    now = next(c for c in new.cards if c.card.name == "A10G").method("lora")
    assert (lora.card, lora.batch_old, lora.batch_new) == (
        "A10G",
        was.largest_batch,
        now.largest_batch,
    )
    assert lora.message == (
        f"LoRA at batch 1 x 512 tokens on A10G: peak {before / 2**30:.2f} GiB -> "
        f"{after / 2**30:.2f} GiB; largest batch on A10G {was.largest_batch} -> "
        f"{now.largest_batch} (fits)"
    )
    assert lora.severity == "moderate" and lora.key == "memory.lora"


def test_a_fit_that_flips_is_high_one_that_returns_is_low(pair: tuple[Plan, Plan]) -> None:
    old, _ = pair
    fit = next(c for c in old.cards if c.card.name == old.workload.card)
    serve = fit.method("serve")
    gone = serve._replace(fits=False, largest_batch=0)
    flipped = replace(
        old,
        cards=tuple(
            replace(c, methods=tuple(gone if m is serve else m for m in c.methods))
            if c is fit
            else c
            for c in old.cards
        ),
    )
    (lost,) = delta(old, flipped).entries
    assert (lost.kind, lost.severity, lost.batch_old, lost.batch_new) == (
        "no_longer_fits",
        "high",
        serve.largest_batch,
        0,
    )
    assert lost.message.endswith(
        f"largest batch on A10G {serve.largest_batch} -> 0 (no longer fits)"
    )
    (back,) = delta(flipped, old).entries
    assert (back.kind, back.severity) == ("now_fits", "low")
    other = replace(
        old.cards[0], methods=tuple(m._replace(fits=False) for m in old.cards[0].methods)
    )
    elsewhere = replace(old, cards=(other, *old.cards[1:])) if old.cards[0] is not fit else old
    assert delta(old, elsewhere).empty, "another card's verdict is no estimate line"


def _with_memory(p: Plan, method: str, peak: int) -> Plan:
    memory = tuple(
        (m, replace(e, peak_allocated_bytes=peak) if m == method else e) for m, e in p.memory
    )
    return replace(p, memory=memory)


def _with_batch(p: Plan, card: str, method: str, batch: int) -> Plan:
    cards = tuple(
        replace(
            c,
            methods=tuple(
                m._replace(largest_batch=batch) if m.method == method else m for m in c.methods
            ),
        )
        if c.card.name == card
        else c
        for c in p.cards
    )
    return replace(p, cards=cards)


def test_moves_under_one_percent_are_info_not_moderate(pair: tuple[Plan, Plan]) -> None:
    old, _ = pair
    peak = dict(old.memory)["full"].peak_allocated_bytes
    (small,) = delta(old, _with_memory(old, "full", int(peak * 1.009))).entries
    (large,) = delta(old, _with_memory(old, "full", int(peak * 1.011))).entries
    assert small.severity == "info" and large.severity == "moderate"
    assert abs(small.relative) < 0.01 <= abs(large.relative)
    base = _with_batch(old, "A10G", "lora", 1000)
    (drop,) = delta(base, _with_batch(old, "A10G", "lora", 995)).entries
    (big_drop,) = delta(base, _with_batch(old, "A10G", "lora", 900)).entries
    (rise,) = delta(base, _with_batch(old, "A10G", "lora", 1100)).entries
    assert (drop.kind, drop.severity) == ("largest_batch_changed", "info")
    assert big_drop.severity == "moderate" and rise.severity == "low"
    assert big_drop.message.endswith("largest batch on A10G 1000 -> 900 (fits)")
    assert delta(old, _with_batch(old, "H200", "lora", 5)).empty, "not the stated card"


def test_one_unit_policy_gib() -> None:
    assert GIB == 2**30
    assert gib(3 * 2**30) == "3.00 GiB" and gib(2**29, 1) == "0.5 GiB"
    assert method_label("serve") == "serving" and method_label("serve", capital=True) == "Serving"
    assert method_label("lora", capital=True) == "LoRA"
    entry = DeltaEntry("memory_changed", "x", 2**30, 2**31, "bytes", 1.0, "moderate", "full")
    assert entry.shown(entry.new) == "2.00 GiB"


@pytest.mark.parametrize("model_type", sorted(configgen.FAMILIES))
def test_delta_is_antisymmetric_over_generated_pairs(model_type: str) -> None:
    r = random.Random(f"delta-{model_type}")
    a = plan(configgen.generate(model_type, r), Workload(method="lora", batch=4))
    b = plan(configgen.generate(model_type, r), Workload(method="lora", batch=4))
    forward, backward = delta(a, b), delta(b, a)
    assert [(e.key, e.old, e.new) for e in forward.entries if e.kind != "now_fits"] == [
        (e.key, e.new, e.old) for e in backward.entries if e.kind != "no_longer_fits"
    ] or any(e.kind in ("now_fits", "no_longer_fits") for e in forward.entries)
    assert all(e.severity in ("info", "low", "moderate", "high") for e in forward.entries)
