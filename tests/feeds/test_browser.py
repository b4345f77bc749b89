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


def test_history_chart_plots_every_planned_revision_and_the_card_limits(
    browser: webdriver.Chrome, demo_site: Site, tmp_path: Path
) -> None:
    with demo_site.database.read_session() as session:
        page = model_page(session, HOSTILE_REPO)
    planned = [e for e in reversed(page.history) if e.stored.on_main and e.plan]
    assert len(planned) >= 2, "the demo history of this repo has several estimated revisions"
    browser.get(f"{demo_site.url}/models/{HOSTILE_REPO}")
    assert no_alert(browser)
    svg = browser.find_element(By.ID, "history-chart")
    memory = svg.find_element(By.ID, "panel-memory")
    top = float(memory.get_attribute("data-top") or "nan")
    height = float(memory.get_attribute("data-height") or "nan")
    top_value = float(memory.get_attribute("data-top-value") or "nan")
    for method in METHODS:
        points = memory.find_elements(
            By.CSS_SELECTOR, f'g.series[data-series="{method}"] circle.point'
        )
        assert len(points) == len(planned), method
        for point, entry in zip(points, planned, strict=True):
            assert entry.plan is not None
            peak = entry.plan["memory"][method]["peak_allocated_bytes"]
            assert point.get_attribute("data-sha") == entry.stored.revision.sha
            assert int(point.get_attribute("data-value") or "-1") == peak
            expected_y = top + height - peak / top_value * height
            assert abs(float(point.get_attribute("cy") or "nan") - expected_y) < 0.01
            box = browser.execute_script("return arguments[0].getBBox()", point)
            assert abs(box["y"] + box["height"] / 2 - expected_y) < 0.01
    xs = [
        float(p.get_attribute("cx") or "nan")
        for p in memory.find_elements(By.CSS_SELECTOR, 'g.series[data-series="lora"] circle')
    ]
    assert xs == sorted(xs) and len(set(xs)) == len(xs), "oldest revision on the left"
    parameters = svg.find_elements(By.CSS_SELECTOR, "#panel-parameters circle.point")
    assert [int(p.get_attribute("data-value") or "-1") for p in parameters] == [
        e.plan["parameters"]["total"] for e in planned if e.plan
    ]
    newest = planned[-1].plan
    assert newest is not None
    limits = sorted({c["usable_bytes"] for c in newest["cards"]})
    drawn = memory.find_elements(By.CSS_SELECTOR, "g.card-limit")
    assert [int(g.get_attribute("data-usable-bytes") or "-1") for g in drawn] == [
        b for b in limits if b <= top_value
    ]
    assert drawn, "at least the smallest card's memory is drawn"
    for group in drawn:
        usable = int(group.get_attribute("data-usable-bytes") or "-1")
        line = group.find_element(By.TAG_NAME, "line")
        assert (
            abs(
                float(line.get_attribute("y1") or "nan")
                - (top + height - usable / top_value * height)
            )
            < 0.01
        )
        label = group.find_element(By.CSS_SELECTOR, "text.card-label").text
        names = [c["card"] for c in newest["cards"] if c["usable_bytes"] == usable]
        assert all(name in label for name in names) and f"({usable / 2**30:.2f} GiB)" in label
    assert browser.execute_script("return document.querySelectorAll('svg script').length") == 0
    titles = browser.execute_script(
        "return Array.from(document.querySelectorAll('#history-chart .revisions title'))"
        ".map(t => t.textContent)"
    )
    assert any(HOSTILE in t for t in titles), "the markup title is there, as text"
    shot = tmp_path / "history-chart.png"
    assert svg.screenshot(str(shot)) and shot.stat().st_size > 5_000
    print(f"chart screenshot: {shot}")
