"""A subscription's ``engine``: parsed by the estimator's own rules, stored, and ready for fit alerts.

The request a subscription builds for a card is handed to the real estimator
with the demo's Llama-2-7B config, so the field is known to drive the engine
model the fit alerts are to use, not just to round-trip.
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

import estimator
from storage import Database
from tracker.alerts.registry import find, save_subscription
from tracker.alerts.spec import SubscriptionError, SubscriptionSpec, parse_subscription

ROOT = Path(__file__).resolve().parents[2]
LLAMA = ROOT / "tracker/demo/histories/neurarch-demo/llama2-7b"
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def spec(**fields: Any) -> SubscriptionSpec:
    document = {"name": "serve-vllm", "repos": ["org/*"], "method": "serve", **fields}
    return parse_subscription(document)


def llama_config() -> dict[str, Any]:
    newest = sorted(LLAMA.iterdir())[0]
    config: dict[str, Any] = json.loads((newest / "config.json").read_text())
    return config


def test_no_engine_is_the_default_and_builds_no_request() -> None:
    plain = spec(cards=["L4"])
    assert plain.engine is None and plain.engine_on("L4") is None
    assert plain.to_document()["engine"] is None


def test_an_engine_request_carries_the_card_gpus_and_length() -> None:
    fixed = spec(engine="vllm", cards=["L4"], gpus=2, seq_len=8192)
    request = fixed.engine_on("L4")
    assert request is not None
    assert (request.engine, request.card, request.tensor_parallel) == ("vllm", "L4", 2)
    assert request.max_model_len == 8192
    following = spec(engine="sglang", cards=["L4"], seq_len="max")
    assert following.engine_on("L4", 4096) == estimator.EngineRequest(
        engine="sglang", card="L4", max_model_len=4096
    )


def test_the_request_runs_the_estimators_engine_model() -> None:
    subscription = spec(engine="vllm", cards=["L4"], seq_len="max")
    card = subscription.cards[0]
    workload = subscription.workload_on(card, 4096)
    plan = estimator.plan(llama_config(), workload, engine=subscription.engine_on(card, 4096))
    assert plan.engine is not None
    assert plan.engine.name == "vllm" and plan.engine.max_model_len == 4096
    assert plan.engine.card == "L4" and plan.engine.kv_cache_bytes >= 0


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"engine": "vlm"}, "engine must be one of transformers, vllm, sglang, tgi, got 'vlm'"),
        ({"engine": "vllm", "method": "lora"}, "engine 'vllm' runs a serve workload"),
        ({"engine": 7}, "engine must be one of"),
    ],
)
def test_a_bad_engine_is_refused_naming_the_field(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(SubscriptionError, match=message) as caught:
        spec(**fields)
    assert str(caught.value).startswith("subscription 'serve-vllm': engine")


def test_the_engine_is_stored_and_a_record_without_one_reads_as_none(database: Database) -> None:
    with database.session() as session:
        stored, _ = save_subscription(session, spec(engine="tgi", cards=["L4"]), now=NOW)
    assert stored.spec["engine"] == "tgi"
    assert SubscriptionSpec.from_record(stored).engine == "tgi"
    older = {k: v for k, v in stored.spec.items() if k != "engine"}  # stored before the field
    with database.session() as session:
        record = find(session, "serve-vllm")
    assert record is not None
    assert SubscriptionSpec.from_record(replace(record, spec=older)).engine is None
