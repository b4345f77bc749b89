"""The paste form plans a pasted config.json at the stated workload; /docs works offline."""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest

from tests.conftest import REPO_ROOT
from tests.feeds.conftest import Site
from tests.feeds.populate import HOSTILE_REPO

CONFIG = REPO_ROOT / "tests" / "data" / "configs" / "llama-3.2-1b" / "config.json"


@pytest.fixture(scope="module")
def client(demo_site: Site) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=demo_site.url, timeout=30) as client:
        yield client


def test_a_pasted_config_gets_its_plan_page_at_the_stated_workload(client: httpx.Client) -> None:
    assert 'action="/paste"' in client.get("/paste").text
    page = client.post("/paste", data={"config": CONFIG.read_text(), "repo": ""})
    assert page.status_code == 200
    assert "At batch 1 × 512 tokens, serving the pasted model" in page.text
    assert "Reconstructed from the pasted config.json with no weights read." in page.text
    assert page.text.count("<svg") == 2 and "<script" not in page.text


def test_a_tracked_repo_id_goes_to_its_page_and_bad_input_says_why(client: httpx.Client) -> None:
    moved = client.post("/paste", data={"repo": HOSTILE_REPO, "config": ""})
    assert moved.status_code == 303 and moved.headers["location"] == f"/models/{HOSTILE_REPO}"
    unknown = client.post("/paste", data={"repo": "nobody/none"})
    assert unknown.status_code == 400 and "nobody/none is not tracked here" in unknown.text
    empty = client.post("/paste", data={"config": "{}"})
    assert empty.status_code == 400 and "could not estimate" in empty.text
    broken = client.post("/paste", data={"config": "{not json"})
    assert broken.status_code == 400 and "is not JSON" in broken.text


def test_docs_load_swagger_ui_from_packaged_assets(client: httpx.Client) -> None:
    page = client.get("/docs").text
    sources = re.findall(r'(?:src|href)="([^"]+)"', page)
    assert sources and all(s.startswith("/docs/assets/") for s in sources), sources
    for source in sources:
        asset = client.get(source)
        assert asset.status_code == 200 and len(asset.content) > 500
    assert client.get("/docs/assets/index.html").status_code == 404
    assert client.get("/openapi.json").json()["openapi"]
