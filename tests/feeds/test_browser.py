"""The model page in headless Chromium: tables render their stored values, markup stays inert."""

from __future__ import annotations

from pathlib import Path

from selenium import webdriver
from selenium.webdriver.common.by import By

from storage import latest_revision, plan_at
from storage.publishing import model_page
from tests.feeds.conftest import Site, no_alert
from tests.feeds.populate import HOSTILE, HOSTILE_REPO


def test_model_page_renders_the_stored_card_table(
    browser: webdriver.Chrome, demo_site: Site, tmp_path: Path
) -> None:
    with demo_site.database.read_session() as session:
        head = latest_revision(session, HOSTILE_REPO)
        assert head is not None
        plan = plan_at(session, HOSTILE_REPO, head.sha)
    assert plan is not None
    browser.get(f"{demo_site.url}/models/{HOSTILE_REPO}")
    rows = browser.find_elements(By.CSS_SELECTOR, "#cards tbody tr")
    assert [r.find_element(By.TAG_NAME, "td").text for r in rows] == [
        c["card"] for c in plan["cards"]
    ]
    verdict = plan["serving"]["engine"]
    assert (verdict["name"], verdict["card"]) == ("vllm", plan["workload"]["card"])
    for row, card in zip(rows, plan["cards"], strict=True):
        serve_cell = row.find_elements(By.TAG_NAME, "td")[5].text
        serve = card["methods"]["serve"]
        if serve["fits"]:
            assert serve_cell == f"fits, batch <= {serve['largest_batch']}"
        else:
            assert serve_cell.startswith("no")
        # processing stored vLLM's verdict on every card (serving.cards)
        engine = row.find_element(By.CSS_SELECTOR, "td.engine").text
        own = next(c for c in plan["serving"]["cards"] if c["card"] == card["card"])
        assert engine.startswith("starts; KV cache " if own["starts"] else "does not start")
        assert f"{own['kv_cache_tokens']:,} tokens" in engine
        if card["card"] == verdict["card"]:
            assert own["kv_cache_tokens"] == verdict["kv_cache_tokens"]
    total = plan["parameters"]["total"]
    assert f"{total:,} parameters" in browser.find_element(By.ID, "parameters").text
    assert browser.find_element(By.ID, "accuracy").text
    shot = tmp_path / "model-page.png"
    assert browser.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
    print(f"screenshot: {shot}")


def test_markup_stored_in_a_commit_title_renders_as_text(
    browser: webdriver.Chrome, demo_site: Site
) -> None:
    browser.get(f"{demo_site.url}/models/{HOSTILE_REPO}")
    assert no_alert(browser)
    titles = [e.text for e in browser.find_elements(By.CSS_SELECTOR, ".revision .title")]
    assert any(HOSTILE in title for title in titles), titles
    assert browser.execute_script("return document.querySelectorAll('body script').length") == 0
    browser.get(f"{demo_site.url}/feeds/all.atom")
    assert no_alert(browser)
    advisory = next(
        a for a in demo_site.advisories if a.repo_id == HOSTILE_REPO and HOSTILE in str(a.osv)
    )
    browser.get(f"{demo_site.url}/advisories/{advisory.id}")
    assert no_alert(browser)
    assert HOSTILE in browser.find_element(By.ID, "details").text


METHODS = ("full", "lora", "qlora", "serve")


def test_history_chart_plots_every_planned_revision_and_the_card_lines(
    browser: webdriver.Chrome, demo_site: Site, tmp_path: Path
) -> None:
    with demo_site.database.read_session() as session:
        page = model_page(session, HOSTILE_REPO)
    planned = [e for e in reversed(page.history) if e.stored.on_main and e.plan]
    newest = planned[-1].plan
    assert newest is not None
    planned = [e for e in planned if e.plan and e.plan["workload"] == newest["workload"]]
    assert len(planned) >= 2, "the demo history of this repo has several estimated revisions"
    browser.get(f"{demo_site.url}/models/{HOSTILE_REPO}")
    assert no_alert(browser)
    svg = browser.find_element(By.CSS_SELECTOR, "#history svg")
    for index, _method in enumerate(METHODS):
        dots = svg.find_elements(By.CSS_SELECTOR, f"g.serie-{index} circle.dot")
        assert len(dots) == len(planned)
    legend = svg.find_elements(By.CSS_SELECTOR, "g.legend text")
    labels = [t.text for t in legend]
    assert any(newest["workload"]["card"] in label and "room" in label for label in labels)
    assert browser.execute_script("return document.querySelectorAll('svg script').length") == 0
    shot = tmp_path / "history-chart.png"
    assert svg.screenshot(str(shot)) and shot.stat().st_size > 5_000
    print(f"chart screenshot: {shot}")
