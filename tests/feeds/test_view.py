"""The model page's parameter line reads the Plan's checkpoint fields."""

from __future__ import annotations

import json
from pathlib import Path

import estimator
from estimator.families import describe
from feeds.view import parameter_line

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
    assert line.startswith("1,235,814,400 parameters; the checkpoint holds 1,498,482,688")
    assert "differs by +262,668,288" in line


def test_parameter_line_without_a_manifest_says_so() -> None:
    config = json.loads(CONFIG.read_text(encoding="utf-8"))
    line = parameter_line(estimator.plan(config))
    assert line == "1,235,814,400 parameters; no weight manifest to check against"
