"""The model page's engine column on every card: vLLM's stored start-up per card, in Chromium.

The daemon's estimate stores vLLM's verdict at its defaults on each card of the table
(``serving.cards``); the page reads it back, never plans per request. Llama-2-7B's demo
revision at 131,072 tokens is recorded on SQLite and PostgreSQL and its page is read in
headless Chromium; the figures are vLLM's (v1 engine) as the estimator models it: the KV
cache each card allocates, whether the model's own context fits in it, and the
``--max-model-len`` that would start.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime

import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By

import estimator
from feeds import PublishSettings, create_app
from storage import Database, latest_revision, plan_at, record_revision
from storage.records import Revision, Snapshot
from tests.feeds.conftest import ServerThread, Site
from tests.feeds.populate import HOSTILE_REPO
from tests.storage.builders import RECORDED_AT
from tracker.demo import HISTORIES

LLAMA2_128K = (
    HISTORIES
    / "neurarch-demo"
    / "llama2-7b"
    / "59187708e28f74d2a1074eae3e844f9a6d991ebd"
    / "config.json"
)
START = datetime(2024, 7, 23, tzinfo=UTC)

# vLLM on Llama-2-7B at max_model_len 131,072 (64 GiB of KV cache for one sequence).
EXPECTED = {
    "L4": "does not start at max_model_len 131,072 "
    "(KV cache 14,896 tokens; --max-model-len 14896 starts)",
    "A100 80GB": "does not start at max_model_len 131,072 "
    "(KV cache 119,696 tokens; --max-model-len 119696 starts)",
    "H200": "starts; KV cache 230,912 tokens at max_model_len 131,072",
    "B200": "starts; KV cache 302,176 tokens at max_model_len 131,072",
    # 12.55 GiB of bf16 weights on an 8 GiB card: no context starts
    "RTX 4060": "does not start at max_model_len 131,072 "
    "(KV cache 0 tokens; no max_model_len starts)",
}


def _engine_cells(browser: webdriver.Chrome, url: str) -> dict[str, str]:
    browser.get(url)
    rows = browser.find_elements(By.CSS_SELECTOR, "#cards tbody tr")
    return {
        r.find_element(By.TAG_NAME, "td").text: r.find_element(By.CSS_SELECTOR, "td.engine").text
        for r in rows
    }


def _text(entry: dict[str, object]) -> str:
    """The cell as the page words a stored ``serving.cards`` entry."""
    tokens = f"KV cache {entry['kv_cache_tokens']:,} tokens"
    if entry["starts"]:
        return f"starts; {tokens} at max_model_len {entry['max_model_len']:,}"
    that = entry["max_model_len_that_starts"]
    fix = f"--max-model-len {that} starts" if that else "no max_model_len starts"
    return f"does not start at max_model_len {entry['max_model_len']:,} ({tokens}; {fix})"


@pytest.fixture(scope="module")
def llama_plan() -> dict[str, object]:
    config = json.loads(LLAMA2_128K.read_text())
    request = estimator.EngineRequest(engine="vllm")
    return estimator.plan(config, engine=request, engine_on_every_card=True).to_json()


def test_every_card_shows_vllms_stored_start_up(
    browser: webdriver.Chrome, database: Database, llama_plan: dict[str, object]
) -> None:
    repo_id = "org/llama-long"
    with database.session() as session:
        sha = hashlib.sha1(repo_id.encode()).hexdigest()
        record_revision(
            session,
            Snapshot(Revision(repo_id, sha, (), START, "c"), ()),
            [],
            llama_plan,
            processed_at=RECORDED_AT,
        )
    server = ServerThread()
    app = create_app(database, settings=PublishSettings(base_url=server.url))
    with server.mount(app):
        cells = _engine_cells(browser, f"{server.url}/models/{repo_id}")

    assert len(cells) == 20
    assert {card: cells[card] for card in EXPECTED} == EXPECTED
    assert "no engine verdict stored" not in cells.values()
    starts = sorted(card for card, cell in cells.items() if cell.startswith("starts"))
    assert starts == ["B200", "H20", "H200", "MI300X"]


def test_the_workload_cards_entry_agrees_with_the_full_verdict(
    llama_plan: dict[str, object],
) -> None:
    serving = llama_plan["serving"]
    assert isinstance(serving, dict)
    full, cards = serving["engine"], {c["card"]: c for c in serving["cards"]}
    own = cards[full["card"]]
    assert (
        (own["starts"], own["kv_cache_tokens"], own["max_model_len_that_starts"])
        == (
            full["starts"],
            full["kv_cache_tokens"],
            full["max_model_len_that_starts"],
        )
        == (False, 14896, 14896)
    )
    document = json.loads(json.dumps(llama_plan))
    assert estimator.Plan.from_json(document).to_json() == document


def test_the_daemons_stored_plans_carry_a_verdict_for_every_card(
    browser: webdriver.Chrome, demo_site: Site
) -> None:
    with demo_site.database.read_session() as session:
        head = latest_revision(session, HOSTILE_REPO)
        assert head is not None
        plan = plan_at(session, HOSTILE_REPO, head.sha)
    assert plan is not None
    stored = {c["card"]: _text(c) for c in plan["serving"]["cards"]}
    assert list(stored) == [c["card"] for c in plan["cards"]]
    assert _engine_cells(browser, f"{demo_site.url}/models/{HOSTILE_REPO}") == stored
