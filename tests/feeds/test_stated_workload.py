"""Every published figure states its workload and card; chart and table agree; nothing is zero."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from markdown_it import MarkdownIt

import estimator
from estimator.deltas import delta
from feeds import figures
from feeds.chart import room_bytes
from storage import latest_revision, plan_at
from tests.feeds.conftest import Site
from tests.feeds.populate import HOSTILE_REPO
from tracker.revision.estimate import STATED_WORKLOAD

GFM = MarkdownIt("commonmark").enable("table")


def corpus_configs(corpus: Path) -> list[tuple[str, dict[str, object]]]:
    """The newest config.json of every corpus repo (by the manifest's dates)."""
    entries = json.loads((corpus / "MANIFEST.json").read_text("utf-8"))
    newest: dict[str, tuple[str, Path]] = {}
    for e in entries:
        if e["file"] != "config.json" or not e.get("revision") or not e.get("date"):
            continue
        path = corpus / e["repo_id"] / e["revision"] / "config.json"
        fresher = e["repo_id"] not in newest or e["date"] > newest[e["repo_id"]][0]
        if path.is_file() and fresher:
            newest[e["repo_id"]] = (e["date"], path)
    return [
        (repo, json.loads(path.read_text("utf-8"))) for repo, (_, path) in sorted(newest.items())
    ]


def test_chart_draws_under_a_card_line_exactly_what_the_table_calls_a_fit(
    corpus_dir: Path,
) -> None:
    """For every corpus model, method and card: needed bytes under the card's room <=> fits."""
    checked = 0
    for repo, config in corpus_configs(corpus_dir):
        try:
            plan = estimator.plan(config, STATED_WORKLOAD)
        except estimator.EstimateError:
            continue
        w = plan.workload
        for method, memory in plan.memory:
            for fit in plan.cards:
                drawn_under = memory.reserved_bytes <= room_bytes(fit.card, w.headroom, w.gpus)
                assert drawn_under == fit.method(method).fits, (repo, method, fit.card.name)
                checked += 1
    assert checked > 1000, checked


def test_the_twins_tables_parse_as_gfm_tables_with_the_card_tables_rows(
    demo_site: Site,
) -> None:
    with httpx.Client(base_url=demo_site.url) as client:
        text = client.get(f"/models/{HOSTILE_REPO}.md").text
        page = client.get(f"/models/{HOSTILE_REPO}").text
    with demo_site.database.read_session() as session:
        head = latest_revision(session, HOSTILE_REPO)
        assert head is not None
        plan = plan_at(session, HOSTILE_REPO, head.sha)
    assert plan is not None
    tokens = GFM.parse(text)
    tables = [i for i, t in enumerate(tokens) if t.type == "table_open"]
    assert len(tables) >= 2  # the stated workload and the card table
    rows_of = []
    for start in tables:
        end = next(i for i in range(start, len(tokens)) if tokens[i].type == "table_close")
        rows_of.append(sum(1 for t in tokens[start:end] if t.type == "tr_open") - 1)
    assert len(plan["cards"]) in rows_of
    assert rows_of[0] == len(plan["memory"]) - 1  # one row per method ("selected" is not one)
    assert page.count("<tr>") >= len(plan["cards"])
    assert "batch 1 × 512 tokens" in text and plan["workload"]["card"] in text


def test_plan_delta_carries_one_line_per_method_at_the_stated_workload(corpus_dir: Path) -> None:
    configs = dict(corpus_configs(corpus_dir))
    config = dict(configs["openai/whisper-base"])
    old = estimator.plan(config, STATED_WORKLOAD)
    config["d_model"] = 768
    new = estimator.plan(config, STATED_WORKLOAD)
    moved = delta(old, new)
    assert len(moved.methods) == 4 and {e.method for e in moved.methods} == {
        "full",
        "lora",
        "qlora",
        "serve",
    }
    for entry in moved.methods:
        assert "at batch 1 x 512 tokens on A10G" in entry.message
        assert entry.card == "A10G" and "largest batch on A10G" in entry.message
    other = estimator.plan(config, estimator.Workload(batch=32))
    assert delta(old, other).methods == ()  # another workload: nothing compared


@pytest.mark.parametrize(
    "config",
    [{}, {"model_type": "bert"}, {"architectures": ["Foo"]}],
    ids=["empty", "bert-without-sizes-is-defaults", "unknown"],
)
def test_nothing_estimated_is_a_state_not_a_zero(config: dict[str, object]) -> None:
    try:
        plan = estimator.plan(config, STATED_WORKLOAD)
    except estimator.EstimateError as exc:
        assert "could not estimate" in str(exc)
        assert figures.headline("o/m", None).endswith(
            "could not estimate (the newest revision has no config.json the estimator can "
            "read, or one that gives no layer width)."
        )
        assert figures.badge(None)["message"] == "could not estimate"
        return
    assert dict(plan.parameters)["total"] > 0
    assert any(f.id == "config-key-defaulted" for f in plan.findings)


def test_a_misspelt_key_is_a_finding_naming_the_key_and_the_default() -> None:
    plan = estimator.plan(
        {"model_type": "llama", "hidden_sise": 2048, "num_hidden_layer": 4}, STATED_WORKLOAD
    )
    found = next(f for f in plan.findings if f.id == "config-key-misspelt")
    assert "hidden_size" in found.message and "hidden_sise" in found.message
    assert "hidden_size=4096" in found.message and "num_hidden_layers=32" in found.message
    assert "rename hidden_sise to hidden_size" in found.fix


def test_cost_is_never_priced_where_the_job_does_not_fit_and_serve_is_serving(
    corpus_dir: Path,
) -> None:
    config = dict(corpus_configs(corpus_dir))["meta-llama/Llama-2-7b-hf"]
    plan = estimator.plan(config, STATED_WORKLOAD)
    on_card = next(c for c in plan.cards if c.card.name == "A10G")
    for cost in plan.costs:
        fits = on_card.method(cost.method).fits
        assert (cost.usd is not None) == fits, cost.method
    full = next(c for c in plan.costs if c.method == "full")
    assert not on_card.method("full").fits and full.usd is None
    serve = next(c for c in plan.costs if c.method == "serve")
    assert serve.training_flops == 0 and serve.tokens == 1_000_000
    serving = estimator.plan(config, estimator.Workload(method="serve", batch=1, card="A10G"))
    assert serving.cost.method == "serve" and serving.cost.training_flops == 0
    lines = figures.cost_lines(plan)
    assert any(line.startswith("Full fine-tune on A10G: does not fit") for line in lines)
    assert any("per million generated tokens" in line for line in lines)


def test_siblings_carry_their_size_and_delta_against_this_checkpoint(demo_site: Site) -> None:
    with httpx.Client(base_url=demo_site.url) as client:
        text = client.get(f"/models/{HOSTILE_REPO}.md").text
    with demo_site.database.read_session() as session:
        own = plan_at(session, HOSTILE_REPO, latest_revision(session, HOSTILE_REPO).sha)  # type: ignore[union-attr]
        other = "neurarch-demo/llama3-8b-instruct"
        theirs = plan_at(session, other, latest_revision(session, other).sha)  # type: ignore[union-attr]
    assert own is not None and theirs is not None
    assert own["model"]["family"] == theirs["model"]["family"]
    a, b = own["parameters"]["total"], theirs["parameters"]["total"]
    row = next(line for line in text.splitlines() if line.startswith(f"| [{other}]"))
    assert row.endswith(f"| {b:,} | {(b - a) / a * 100:+.1f}% |")


def test_the_plan_api_names_every_default_it_used_and_refuses_nothing_to_estimate(
    demo_site: Site,
) -> None:
    with httpx.Client(base_url=demo_site.url) as client:
        answer = client.post("/api/v1/plan", json={"model_type": "llama"})
        empty = client.post("/api/v1/plan", json={})
    assert answer.status_code == 200
    found = {f["id"]: f for f in answer.json()["findings"]}
    assert "hidden_size=4096" in found["config-key-defaulted"]["message"]
    assert empty.status_code == 422 and "could not estimate" in empty.text
