"""A subscription's ``stack``: pins parsed by the estimator's own reader, stored, and applied
to the workload its verdicts use, as ``plan --stack`` applies them."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest

import estimator
from storage import Database
from tracker.alerts.registry import find, save_subscription
from tracker.alerts.spec import SubscriptionError, SubscriptionSpec, parse_subscription

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
LLAMA = {
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 11008,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 32,
    "vocab_size": 32000,
    "max_position_embeddings": 4096,
}


def spec(**fields: Any) -> SubscriptionSpec:
    return parse_subscription({"name": "stacked", "repos": ["org/*"], **fields})


def test_no_stack_is_the_default_and_leaves_the_estimators_defaults() -> None:
    plain = spec(cards=["L4"])
    assert plain.stack == "" and plain.to_document()["stack"] == ""
    assert plain.workload == estimator.Workload(method="lora", batch=1, lora_rank=16, card="L4")


def test_the_versions_set_their_mechanisms_and_the_subscriptions_fields_win() -> None:
    old = spec(cards=["L4"], stack="torch==1.13.1 transformers==4.30 peft==0.4")
    w = old.workload
    assert old.stack == "peft==0.4 torch==1.13.1 transformers==4.30"
    assert (w.zero_grad_set_to_none, w.adamw_impl, w.attention) == (False, "loop", "eager")
    assert w.reentrant_checkpointing is True and w.fsdp_mixed_units is True
    # peft in the stack picks peft's recipe (lora_alpha 8) beneath the subscription's rank.
    assert (w.recipe, w.lora_alpha, w.lora_rank) == ("peft", 8, 16)
    assert w.stack == "peft==0.4 torch==1.13.1 transformers==4.30"
    new = spec(cards=["L4"], stack="torch==2.4 transformers==4.44").workload
    assert (new.zero_grad_set_to_none, new.attention, new.recipe) == (True, "sdpa", "")


def test_a_mechanism_held_to_a_model_type_applies_once_the_revision_names_it() -> None:
    sub = spec(cards=["A100-80GB"], stack="transformers==4.44")
    assert sub.workload_on("A100-80GB").cache_in_training is False
    assert sub.workload_on("A100-80GB", None, "gpt_bigcode").cache_in_training is True
    assert sub.workload_on("A100-80GB", None, "gpt_bigcode").loss_upcast is False
    assert sub.workload_on("A100-80GB", None, "llama").cache_in_training is False


def test_the_engine_verdict_follows_the_pinned_engine_version() -> None:
    verdicts = {}
    for pins in ("vllm==0.6.4", "vllm==0.10.0"):
        sub = spec(method="serve", engine="vllm", cards=["L4"], seq_len=4096, stack=pins)
        plan = estimator.plan(LLAMA, sub.workload_on("L4"), engine=sub.engine_on("L4"))
        assert plan.engine is not None
        verdicts[pins] = plan.engine.version_modelled
    assert verdicts["vllm==0.6.4"] != verdicts["vllm==0.10.0"]
    assert "0.6.4" in verdicts["vllm==0.6.4"]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("requirements.txt", "'requirements.txt' is not NAME==VERSION"),
        ("torch>=2.0", "'torch>=2.0' is not NAME==VERSION"),
        (["torch==2.4"], "stack must be NAME==VERSION pins as text"),
        ("torch==" + "1" * 5000, "at most 4096 characters"),
    ],
)
def test_a_stack_that_is_not_pins_is_refused_naming_the_field(value: object, message: str) -> None:
    with pytest.raises(SubscriptionError, match=message) as caught:
        spec(stack=value)
    assert str(caught.value).startswith("subscription 'stacked': ")


def test_the_stack_is_stored_and_a_record_without_one_reads_as_none(database: Database) -> None:
    with database.session() as session:
        stored, _ = save_subscription(session, spec(stack="torch==1.13 peft==0.4"), now=NOW)
    assert stored.spec["stack"] == "peft==0.4 torch==1.13"
    again = SubscriptionSpec.from_record(stored)
    assert again.stack == "peft==0.4 torch==1.13" and again.workload.zero_grad_set_to_none is False
    older = {k: v for k, v in stored.spec.items() if k != "stack"}  # stored before the field
    with database.session() as session:
        record = find(session, "stacked")
    assert record is not None
    assert SubscriptionSpec.from_record(replace(record, spec=older)).stack == ""
