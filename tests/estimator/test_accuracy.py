"""The accuracy the model page quotes is the one the benchmark wrote."""

from __future__ import annotations

import json
from pathlib import Path

from estimator import measured_accuracy

RECORD = Path(__file__).resolve().parents[2] / "estimator" / "data" / "accuracy.json"


def test_measured_accuracy_reads_the_scores_the_benchmark_recorded() -> None:
    recorded = json.loads(RECORD.read_text())
    accuracy = measured_accuracy()
    assert accuracy.median_abs_error_pct == recorded["median_abs_error_pct"]
    assert accuracy.p90_abs_error_pct == recorded["p90_abs_error_pct"]
    assert accuracy.verdict_accuracy_pct == recorded["verdict_accuracy_pct"]
    assert accuracy.rows_with_verdict >= accuracy.rows_with_figure > 0
    assert 0 <= accuracy.median_abs_error_pct <= accuracy.p90_abs_error_pct
