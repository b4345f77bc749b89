"""Plan.from_json rebuilds the typed Plan from the JSON the estimator writes and stores."""

from __future__ import annotations

import json
import random

import pytest

from estimator import EstimateError, Plan, PlanJsonError, Workload, card, plan
from tests.estimator import configgen
from tests.estimator.test_plan_schema import corpus_configs

WORKLOADS = (
    Workload(),
    Workload(method="lora", batch=2, seq_len=256, card="T4"),
    Workload(
        method="qlora", batch=4, seq_len=1024, card="L4", lora_rank=8, grad_checkpointing=True
    ),
    Workload(method="serve", batch=8, seq_len=4096, card="H100", gpus=2, epochs=3),
)


def _round_trips(p: Plan) -> None:
    document = p.to_json()
    assert Plan.from_json(document) == p
    stored = json.loads(json.dumps(document))
    back = Plan.from_json(stored)
    assert back == p
    assert back.to_json() == document


def test_every_corpus_config_round_trips(corpus_dir) -> None:  # type: ignore[no-untyped-def]
    checked = 0
    for i, config in enumerate(corpus_configs(corpus_dir)):
        try:
            p = plan(config, WORKLOADS[i % len(WORKLOADS)])
        except EstimateError:
            continue
        _round_trips(p)
        checked += 1
    assert checked >= 200, checked


@pytest.mark.parametrize("model_type", sorted(configgen.FAMILIES))
def test_generated_configs_round_trip(model_type: str) -> None:
    r = random.Random(f"plan-json-{model_type}")
    for i in range(6):
        config = configgen.generate(model_type, r)
        _round_trips(plan(config, WORKLOADS[i % len(WORKLOADS)]))


@pytest.fixture(scope="module")
def llama_plan() -> Plan:
    return plan(configgen.generate("llama", random.Random("plan-json-typed")))


def test_a_rebuilt_plan_is_typed_all_the_way_down(llama_plan: Plan) -> None:
    p = Plan.from_json(json.loads(json.dumps(llama_plan.to_json())))
    assert p.selected.method == "full"
    assert p.selected.peak_allocated_bytes == sum(v for _, v in p.selected.breakdown)
    t4 = next(c for c in p.cards if c.card.name == "T4")
    assert t4.card is card("T4")
    assert t4.method("lora").largest_batch >= 0
    assert isinstance(p.workload.lora_targets, tuple)
    assert isinstance(p.cost.assumptions, tuple)


def test_a_card_that_left_the_table_keeps_its_stored_limit(llama_plan: Plan) -> None:
    document = llama_plan.to_json()
    document["cards"][0]["card"] = "Retired 7GB"
    document["cards"][0]["usable_bytes"] = 7 * 2**30
    p = Plan.from_json(document)
    assert p.cards[0].card.name == "Retired 7GB"
    assert p.cards[0].card.usable_bytes == 7 * 2**30
    assert p.to_json()["cards"][0] == document["cards"][0]


@pytest.mark.parametrize(
    "breakage",
    [
        lambda d: d.update(schema_version="0.9"),
        lambda d: d.pop("memory"),
        lambda d: d["workload"].update(batch=0),
        lambda d: d["workload"].update(unknown_field=1),
        lambda d: d.update(cards="T4"),
    ],
)
def test_a_document_that_is_not_a_plan_is_a_plan_json_error(llama_plan: Plan, breakage) -> None:  # type: ignore[no-untyped-def]
    document = llama_plan.to_json()
    breakage(document)
    with pytest.raises(PlanJsonError):
        Plan.from_json(document)
    assert issubclass(PlanJsonError, EstimateError)


def test_not_an_object_is_a_plan_json_error() -> None:
    with pytest.raises(PlanJsonError, match="JSON object"):
        Plan.from_json([])  # type: ignore[arg-type]
