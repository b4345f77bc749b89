"""feeds.chart lays out the model page's history chart from the stored plans, oldest first."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from pathlib import Path

import pytest

import estimator
from feeds.chart import LABEL_GAP, history_chart
from storage.publishing import RevisionEntry
from storage.records import Revision, StoredRevision

CONFIG = json.loads(
    (Path(__file__).resolve().parents[1] / "data/configs/llama-3.2-1b/config.json").read_text()
)
START = datetime(2025, 1, 1, tzinfo=UTC)


def entry(n: int, plan: dict | None, on_main: bool = True) -> RevisionEntry:  # type: ignore[type-arg]
    revision = Revision("o/m", f"{n:040x}", (), START + timedelta(days=n), f"<b>commit {n}</b>")
    return RevisionEntry(StoredRevision(revision, START, on_main), (), None, plan)


@pytest.fixture(scope="module")
def plans() -> list[dict]:  # type: ignore[type-arg]
    layers = CONFIG["num_hidden_layers"]
    return [
        estimator.plan({**CONFIG, "num_hidden_layers": layers * k}).to_json() for k in (1, 2, 3)
    ]


def test_no_plan_no_chart() -> None:
    assert history_chart([]) is None
    assert history_chart([entry(1, None), entry(0, {"schema_version": "0.1"})]) is None


def test_one_point_per_on_main_revision_with_a_plan_oldest_first(plans: list[dict]) -> None:  # type: ignore[type-arg]
    history = [  # newest first, as storage lists it
        entry(5, plans[2]),
        entry(4, None),
        entry(3, plans[0], on_main=False),
        entry(2, plans[1]),
        entry(1, {"not": "a plan"}),
        entry(0, plans[0]),
    ]
    chart = history_chart(history)
    assert chart is not None and chart.points == 3
    assert [x.text for x in chart.xlabels] == [f"{n:040x}"[:7] for n in (0, 2, 5)]
    assert chart.xlabels[0].title == "<b>commit 0</b>"  # escaped by the template, kept here
    (params,) = chart.parameters.series
    assert [p.value for p in params.points] == [plans[k]["parameters"]["total"] for k in (0, 1, 2)]
    assert [s.key for s in chart.memory.series] == ["full", "lora", "qlora", "serve"]
    lora = next(s for s in chart.memory.series if s.key == "lora")
    for point, k in zip(lora.points, (0, 1, 2), strict=True):
        peak = plans[k]["memory"]["lora"]["peak_allocated_bytes"]
        assert point.value == peak
        assert point.y == pytest.approx(chart.memory.y(peak))
        expected = chart.memory.top + chart.memory.height * (1 - peak / chart.memory.top_value)
        assert point.y == pytest.approx(expected)
    assert lora.points[0].y > lora.points[2].y, "more memory is drawn higher"
    largest = max(p.value for s in chart.memory.series for p in s.points)
    assert chart.memory.top_value == pytest.approx(largest * 1.1)


def test_card_limits_in_range_one_line_each_labels_apart(plans: list[dict]) -> None:  # type: ignore[type-arg]
    chart = history_chart([entry(0, plans[2])])
    assert chart is not None
    usable = sorted({c["usable_bytes"] for c in plans[2]["cards"]})
    assert [lim.usable_bytes for lim in chart.limits] == [
        b for b in usable if b <= chart.memory.top_value
    ]
    assert chart.limits, "the smallest card is always within range"
    for lim in chart.limits:
        assert lim.y == pytest.approx(chart.memory.y(lim.usable_bytes))
        names = [c["card"] for c in plans[2]["cards"] if c["usable_bytes"] == lim.usable_bytes]
        assert lim.text == f"{' · '.join(names)} ({lim.usable_bytes / 2**30:.2f} GiB)"
    baselines = sorted(lim.label_y for lim in chart.limits)
    assert all(b - a >= LABEL_GAP - 1e-9 for a, b in pairwise(baselines))


def test_long_histories_print_at_most_ten_shas(plans: list[dict]) -> None:  # type: ignore[type-arg]
    chart = history_chart([entry(n, plans[n % 3]) for n in reversed(range(25))])
    assert chart is not None and chart.points == 25 and chart.label_every == 3
    ticks = [t.text for t in chart.memory.ticks]
    assert ticks[0] == "0 GiB" and all(t.endswith(" GiB") for t in ticks)
