"""tracker.diff.plan_delta maps estimator.delta's entries between typed Plans onto stored changes."""

from __future__ import annotations

import json
from pathlib import Path

import estimator
from estimator.deltas import stored_plan
from storage.records import Severity
from tracker.diff.plan_delta import diff_plans

CONFIG = json.loads(
    (Path(__file__).parents[1] / "data/configs/llama-3.2-1b/config.json").read_text()
)


def test_changes_word_parameters_memory_and_card_batches_with_numbers() -> None:
    old = estimator.plan(CONFIG)
    new = estimator.plan({**CONFIG, "num_hidden_layers": CONFIG["num_hidden_layers"] * 2})
    changes = diff_plans(old, new)
    assert changes == diff_plans(stored_plan(old.to_json()), stored_plan(new.to_json()))
    entries = estimator.delta(old, new).entries
    assert [(c.kind, c.old, c.new, c.message) for c in changes] == [
        (e.kind, e.old, e.new, e.message) for e in entries
    ]
    params = next(c for c in changes if c.kind == "parameters_changed")
    assert params.severity is Severity.HIGH and params.artifact == "estimate"
    assert params.message == f"parameters {params.old:,} -> {params.new:,}"
    methods = [c for c in changes if c.kind != "parameters_changed"]  # one line per method
    assert len(methods) == 4
    assert all(c.severity in (Severity.MODERATE, Severity.HIGH) for c in methods)
    assert all(c.message.count(" GiB") == 2 for c in methods)
    assert all(" at batch 32 x 512 tokens on A10G: peak " in c.message for c in methods)
    assert all("largest batch on A10G" in c.message for c in methods)


def test_no_plan_or_a_stored_document_that_is_not_a_plan_gives_no_changes() -> None:
    plan = estimator.plan(CONFIG)
    assert diff_plans(None, plan) == [] and diff_plans(plan, stored_plan({})) == []
    assert diff_plans(stored_plan({"schema_version": "0.1"}), plan) == []
    assert stored_plan(plan.to_json()) == plan
