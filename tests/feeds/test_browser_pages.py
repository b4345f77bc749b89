"""The corpus served and read in headless Chromium at 1400 px: what a person sees first.

Slow (the whole recorded corpus is backfilled once per module). Screenshots
of the index, two LLM pages, a BERT page and an advisory page are written to
``NEURARCH_SCREENSHOTS`` (a directory) when it is set, else to tmp_path.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By

from feeds import PublishSettings, create_app
from storage import latest_revision, open_database, plan_at
from tests.feeds.conftest import ServerThread, Site
from tests.feeds.populate import populate

pytestmark = pytest.mark.slow

LLMS = ("meta-llama/Llama-2-7b-hf", "mistralai/Mistral-7B-v0.1")
BERT = "google-bert/bert-base-uncased"
RAW_DUMPS = (
    re.compile(r"\bmethod=\w+, batch="),
    re.compile(r"median_abs_error_pct"),
    re.compile(r"tests/bench|\.\./shared"),
    re.compile(r"\bmfu=0"),
)


@pytest.fixture(scope="module")
def corpus_site(corpus_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    path = tmp_path_factory.mktemp("corpus-site") / "site.db"
    database = open_database(f"sqlite:///{path}")
    database.migrate()
    advisories = populate(database, corpus=corpus_dir)
    server = ServerThread()
    app = create_app(database, settings=PublishSettings(base_url=server.url))
    with server.mount(app):
        yield Site(database, advisories, server.url, app)
    database.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = os.environ.get("NEURARCH_SCREENSHOTS")
    path = Path(where) if where else tmp_path_factory.mktemp("screenshots")
    path.mkdir(parents=True, exist_ok=True)
    return path


def screenshot(browser: webdriver.Chrome, path: Path) -> None:
    height = browser.execute_script("return document.body.scrollHeight")
    browser.set_window_size(1400, min(int(height) + 100, 6000))
    assert browser.save_screenshot(str(path)) and path.stat().st_size > 10_000


def no_raw_dumps(browser: webdriver.Chrome) -> None:
    text = browser.find_element(By.TAG_NAME, "body").text
    for pattern in RAW_DUMPS:
        assert not pattern.search(text), pattern.pattern
    assert browser.execute_script("return document.querySelectorAll('script').length") == 0


@pytest.mark.parametrize("repo", [*LLMS, BERT])
def test_model_page_states_workload_and_card_and_chart_agrees_with_table(
    browser: webdriver.Chrome, corpus_site: Site, shots: Path, repo: str
) -> None:
    with corpus_site.database.read_session() as session:
        head = latest_revision(session, repo)
        assert head is not None
        plan = plan_at(session, repo, head.sha)
    assert plan is not None
    w = plan["workload"]
    browser.get(f"{corpus_site.url}/models/{repo}")
    headline = browser.find_element(By.ID, "headline").text
    assert f"At batch {w['batch']} × {w['seq_len']} tokens" in headline
    assert w["card"] in headline and ("fits" in headline)
    assert (
        "Reconstructed from its own config.json" in browser.find_element(By.ID, "provenance").text
    )
    # the stated table says per method what the card table says on the stated card
    rows = browser.find_elements(By.CSS_SELECTOR, "#cards tbody tr")
    card_row = next(r for r in rows if r.find_element(By.TAG_NAME, "td").text == w["card"])
    cells = [td.text for td in card_row.find_elements(By.TAG_NAME, "td")][2:6]
    stated = browser.find_elements(By.CSS_SELECTOR, "#stated tbody tr")
    for row, cell in zip(stated, cells, strict=True):
        verdict = row.find_elements(By.TAG_NAME, "td")[2].text
        assert verdict.startswith("fits") == cell.startswith("fits"), (verdict, cell)
    # the history picture: each method's newest point is drawn under the stated card's
    # dashed line exactly when the table calls it a fit there
    svg = browser.find_element(By.CSS_SELECTOR, "#history svg")
    legend = [
        t.get_attribute("textContent") or ""
        for t in svg.find_elements(By.CSS_SELECTOR, "g.legend text")
    ]
    line = next(i for i, text in enumerate(legend) if w["card"] in text.split(":")[0].split(" · "))
    path = svg.find_element(By.CSS_SELECTOR, f"g.serie-{line} path.line").get_attribute("d")
    line_y = float(re.findall(r"-?\d+(?:\.\d+)?", path or "")[1])
    for index, row in enumerate(stated):
        dots = svg.find_elements(By.CSS_SELECTOR, f"g.serie-{index} circle.dot")
        under = float(dots[-1].get_attribute("cy") or "nan") >= line_y  # SVG y grows downwards
        verdict = row.find_elements(By.TAG_NAME, "td")[2].text
        assert under == verdict.startswith("fits"), (repo, index, verdict)
    for figure in ("history", "batches", "breakdown"):
        assert browser.find_elements(By.CSS_SELECTOR, f"#{figure} svg")
    assert browser.find_element(By.ID, "cost").text
    no_raw_dumps(browser)
    screenshot(browser, shots / f"{repo.replace('/', '__')}.png")


def test_index_and_an_advisory_page_read_as_prose(
    browser: webdriver.Chrome, corpus_site: Site, shots: Path
) -> None:
    browser.get(corpus_site.url)
    assert len(browser.find_elements(By.CSS_SELECTOR, "#models tbody tr")) >= 30
    screenshot(browser, shots / "index.png")
    advisory = next(
        a
        for a in corpus_site.advisories
        if a.repo_id == "openai/whisper-base" and "Estimate" in str(a.osv)
    )
    browser.get(f"{corpus_site.url}/advisories/{advisory.id}")
    details = browser.find_element(By.ID, "details")
    assert not browser.find_elements(By.CSS_SELECTOR, "pre#details")
    assert details.find_elements(By.TAG_NAME, "table")  # the estimate delta, rendered
    assert "at batch 1 x 512 tokens on A10G" in details.text
    no_raw_dumps(browser)
    screenshot(browser, shots / "advisory.png")
