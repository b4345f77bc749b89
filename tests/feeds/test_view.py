"""The model page's parameter line reads the Plan's checkpoint fields, with the delta in %."""

from __future__ import annotations

import json
from pathlib import Path

import estimator
from estimator.families import describe
from feeds.figures import parameters_line as parameter_line

CONFIG = Path(__file__).resolve().parents[1] / "data" / "configs" / "llama-3.2-1b" / "config.json"


def test_parameter_line_sets_the_count_against_the_checkpoint() -> None:
    config = json.loads(CONFIG.read_text(encoding="utf-8"))
    tensors = {
        t.name: {"dtype": "BF16", "shape": list(t.shape), "data_offsets": [0, 0]}
        for t in describe(config).tensors
    }
    tensors["lm_head.weight"] = {"dtype": "BF16", "shape": [128256, 2048], "data_offsets": [0, 0]}
    plan = estimator.plan(config, manifest=estimator.WeightManifest.from_headers([tensors]))
    line = parameter_line(plan)
    assert parameter_line(estimator.Plan.from_json(plan.to_json())) == line
    assert line.startswith(
        "1,235,814,400 parameters, counted from config.json; the checkpoint holds 1,498,482,688 "
        "(+21.25%, read from the revision's safetensors headers)"
    )


def test_parameter_line_without_a_manifest_says_so() -> None:
    config = json.loads(CONFIG.read_text(encoding="utf-8"))
    line = parameter_line(estimator.plan(config))
    assert line == (
        "1,235,814,400 parameters, counted from config.json; no weight manifest to check against."
    )


def test_a_generic_estimate_is_said_as_a_lower_bound_and_no_plan_is_not_zero() -> None:
    plan = estimator.plan(
        {
            "model_type": "brand-new",
            "hidden_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "vocab_size": 100,
        }
    )
    assert parameter_line(plan).startswith("At least ")
    assert "model_type 'brand-new' has no family module" in parameter_line(plan)
    assert parameter_line(None) == "Parameters: could not estimate."
