"""The estimator's measured accuracy, as its benchmark last scored it.

``tests/bench/bench_estimator.py`` scores peak-memory estimates against
published measurements and writes ``data/accuracy.json``; pages that show
an estimate read it here (never the file by path), so the figure they quote
is the benchmark's own and the file's place stays the estimator's business.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from estimator.data_files import data_text


@dataclass(frozen=True)
class Accuracy:
    """One scoring of peak-memory estimates against measured GPU runs; errors in percent."""

    median_abs_error_pct: float
    p90_abs_error_pct: float
    verdict_accuracy_pct: float
    rows_with_figure: int
    rows_with_verdict: int
    date: str
    source: str

    def scores(self) -> dict[str, float | int | str]:
        """The record's fields in file order, for pages that list them."""
        return asdict(self)


def measured_accuracy() -> Accuracy:
    """The scores in the package's ``data/accuracy.json``."""
    text = data_text("accuracy.json")
    return Accuracy(**json.loads(text))
