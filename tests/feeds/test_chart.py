"""feeds.chart lays out the model page's history chart from the stored plans, oldest first."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import estimator
from feeds.chart import (
    MAX_XLABELS,
    batch_svg,
    breakdown_svg,
    history_chart,
    history_svg,
    room_bytes,
)
from storage.publishing import RevisionEntry
from storage.records import Revision, StoredRevision

CONFIG = json.loads(
    (Path(__file__).resolve().parents[1] / "data/configs/llama-3.2-1b/config.json").read_text()
)
START = datetime(2025, 1, 1, tzinfo=UTC)


def entry(n: int, plan: dict | None, on_main: bool = True) -> RevisionEntry:  # type: ignore[type-arg]
    revision = Revision(
        "o/m", f"{n:07x}".ljust(40, "0"), (), START + timedelta(days=n), f"<b>commit {n}</b>"
    )
    return RevisionEntry(StoredRevision(revision, START, on_main), (), None, plan)


@pytest.fixture(scope="module")
def plans() -> list[dict]:  # type: ignore[type-arg]
    layers = CONFIG["num_hidden_layers"]
    return [
        estimator.plan(
            {**CONFIG, "num_hidden_layers": layers * k}, estimator.STATED_WORKLOAD
        ).to_json()
        for k in (1, 2, 3)
    ]


def test_no_plan_no_chart() -> None:
    assert history_chart([]) is None
    assert history_chart([entry(1, None), entry(0, {"schema_version": "0.1"})]) is None


def test_one_point_per_on_main_revision_at_the_newest_workload_oldest_first(
    plans: list[dict],  # type: ignore[type-arg]
) -> None:
    other = estimator.plan(CONFIG, estimator.Workload(batch=8)).to_json()
    history = [  # newest first, as storage lists it
        entry(6, plans[2]),
        entry(5, other),  # another workload: not drawn beside the stated one
        entry(4, None),
        entry(3, plans[0], on_main=False),
        entry(2, plans[1]),
        entry(1, {"not": "a plan"}),
        entry(0, plans[0]),
    ]
    chart = history_chart(history)
    assert chart is not None
    assert chart.shas == tuple(f"{n:07x}".ljust(40, "0") for n in (0, 2, 6))
    assert chart.workload == "batch 1 × 512 tokens" and chart.card == "A10G"
    needed = dict(chart.needed)
    assert list(needed) == ["full", "lora", "qlora", "serve"]
    assert needed["lora"] == tuple(plans[k]["memory"]["lora"]["reserved_bytes"] for k in (0, 1, 2))


def test_a_card_line_is_the_room_the_table_compares_with(plans: list[dict]) -> None:  # type: ignore[type-arg]
    plan = estimator.Plan.from_json(plans[1])
    chart = history_chart([entry(0, plans[1])])
    assert chart is not None
    for fit in plan.cards:
        line = next(x for x in chart.lines if x.card == fit.card.name)
        assert line.room_bytes == room_bytes(fit.card, plan.workload.headroom, 1)
        for method, needed in chart.needed:
            assert (needed[-1] <= line.room_bytes) == fit.method(method).fits


def test_pictures_are_static_deterministic_svg_with_escaped_text(plans: list[dict]) -> None:  # type: ignore[type-arg]
    chart = history_chart([entry(n, plans[n % 3]) for n in reversed(range(30))])
    assert chart is not None
    plan = estimator.Plan.from_json(plans[0])
    for svg in (history_svg(chart), batch_svg(plan), breakdown_svg(plan)):
        assert svg.startswith("<svg") and "<script" not in svg and "<b>" not in svg
        assert not re.search(r'(href|src)="https?://', svg)
    first = str(history_svg(chart))
    assert first == str(history_svg(chart)), "same plan, same bytes"
    assert "&lt;b&gt;commit 0&lt;/b&gt;" in first
    shown = re.findall(r'class="major"[^>]*>([0-9a-f]{7})<', first)
    assert 0 < len(shown) <= MAX_XLABELS, shown
    stacked = str(breakdown_svg(plan))
    for part in ("weights", "optimizer state", "activations", "KV cache"):
        assert part in stacked
