"""Pages, Markdown twin, index.json, badges and the plan API over a real server."""

from __future__ import annotations

import html as html_lib
import json
import re
from collections.abc import Iterator

import httpx
import pytest
from markdown_it import MarkdownIt

import estimator
from feeds import PublishSettings, create_app
from feeds.pages import markdown_text
from storage import changes_of, latest_revision, plan_at, revision_log
from tests.conftest import REPO_ROOT
from tests.feeds.conftest import ServerThread, Site
from tests.feeds.populate import HOSTILE, HOSTILE_REPO
from tracker.demo import HISTORIES

CONFIG = REPO_ROOT / "tests" / "data" / "configs" / "llama-3.2-1b" / "config.json"


@pytest.fixture(scope="module")
def client(demo_site: Site) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=demo_site.url, timeout=30) as client:
        yield client


def test_index_json_lists_every_demo_repo_with_its_head(
    client: httpx.Client, demo_site: Site
) -> None:
    manifest = json.loads((HISTORIES / "MANIFEST.json").read_text("utf-8"))
    models = client.get("/index.json").json()["models"]
    assert [m["repo_id"] for m in models] == sorted({e["repo_id"] for e in manifest})
    with demo_site.database.read_session() as session:
        for model in models:
            head = latest_revision(session, model["repo_id"])
            assert head is not None and model["sha"] == head.sha


def test_badge_states_the_workload_and_the_card_and_is_coloured_by_the_fit(
    client: httpx.Client, demo_site: Site
) -> None:
    repo = "neurarch-demo/llama3-8b-instruct"
    badge = client.get(f"/models/{repo}/badge.json").json()
    with demo_site.database.read_session() as session:
        head = latest_revision(session, repo)
        assert head is not None
        plan = plan_at(session, repo, head.sha)
    assert plan is not None
    w = plan["workload"]
    assert (w["batch"], w["seq_len"]) == (1, 512)
    device = plan["memory"]["serve"]["device_bytes"]
    card = next(c for c in plan["cards"] if c["card"] == w["card"])
    fits = card["methods"]["serve"]["fits"]
    assert set(badge) == {"schemaVersion", "label", "message", "color"}
    assert badge["label"] == "serve @ batch 1×512"
    verdict = "fits" if fits else "does not fit"
    assert badge["message"] == f"{device / 2**30:.1f} GiB · {verdict} {w['card']}"
    assert badge["color"] == ("brightgreen" if fits else "red")
    assert client.get("/models/nobody/none/badge.json").status_code == 404


def test_markdown_twin_carries_the_card_table_and_history(
    client: httpx.Client, demo_site: Site
) -> None:
    response = client.get(f"/models/{HOSTILE_REPO}.md")
    assert response.headers["content-type"].startswith("text/markdown")
    with demo_site.database.read_session() as session:
        head = latest_revision(session, HOSTILE_REPO)
        assert head is not None
        plan = plan_at(session, HOSTILE_REPO, head.sha)
    assert plan is not None
    first = plan["cards"][0]
    serve = first["methods"]["serve"]
    expected = f"fits, batch <= {serve['largest_batch']}" if serve["fits"] else "no"
    row = next(
        line for line in response.text.splitlines() if line.startswith(f"| {first['card']} |")
    )
    assert f"| {expected} | " in row or expected == "no"
    verdict = plan["serving"]["engine"]  # vLLM's, stored when the revision was processed
    engine = next(
        line for line in response.text.splitlines() if line.startswith(f"| {verdict['card']} |")
    )
    assert f"{verdict['kv_cache_tokens']:,} tokens" in engine
    # every card has vLLM's stored verdict (serving.cards), the first card's own included
    own = next(c for c in plan["serving"]["cards"] if c["card"] == first["card"])
    assert f"(KV cache {own['kv_cache_tokens']:,} tokens" in row or (
        own["starts"] and f"KV cache {own['kv_cache_tokens']:,} tokens at" in row
    )
    assert f"`{head.sha[:12]}`" in response.text


def test_html_pages_escape_stored_markup(client: httpx.Client, demo_site: Site) -> None:
    page = client.get(f"/models/{HOSTILE_REPO}").text
    assert HOSTILE not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    advisory = next(a for a in demo_site.advisories if HOSTILE in json.dumps(a.osv))
    html = client.get(f"/advisories/{advisory.id}").text
    assert HOSTILE not in html and "&lt;script&gt;" in html
    assert client.get("/models/nobody/none").status_code == 404


def test_plan_api_returns_the_estimators_plan(client: httpx.Client) -> None:
    body = CONFIG.read_bytes()
    response = client.post("/api/v1/plan", content=body)
    assert response.status_code == 200
    assert response.json() == json.loads(json.dumps(estimator.plan(json.loads(body)).to_json()))


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        (b"{not json", 400, "config.json is not valid JSON: Expecting property name"),
        (b"[1, 2]", 400, "config.json must be a JSON object, not list"),
        (b"\xff\xfe", 400, "config.json body is not UTF-8"),
        (
            b'{"model_type": "llama", "hidden_size": -5}',
            422,
            "config.json cannot be estimated: config.json: hidden_size (-5) must be at least 1",
        ),
        (b" " * 1_000_001, 413, "config.json body is over 1000000 bytes"),
    ],
)
def test_plan_api_refuses_bad_bodies_by_name(
    client: httpx.Client, body: bytes, status: int, message: str
) -> None:
    try:
        response = client.post("/api/v1/plan", content=body)
    except (httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError):
        # An oversized body is refused from its Content-Length, before it is read; the server
        # may close while the client is still sending, which is a refusal too.
        assert status == 413
        return
    assert response.status_code == status, response.text
    assert response.json()["detail"].startswith(message)


def test_openapi_documents_the_osv_and_feed_paths(client: httpx.Client) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    for path in (
        "/v1/query",
        "/v1/querybatch",
        "/v1/vulns/{vuln_id}",
        "/api/v1/plan",
        "/feeds/all.{kind}",
    ):
        assert path in paths


def test_markdown_twin_shows_stored_markup_as_entities(client: httpx.Client) -> None:
    text = client.get(f"/models/{HOSTILE_REPO}.md").text
    assert HOSTILE not in text and "&lt;script>alert(1)&lt;/script> extend context" in text
    rendered = MarkdownIt("commonmark", {"html": True}).render(text)
    assert "<script" not in rendered and "&lt;script&gt;alert(1)&lt;/script&gt;" in rendered


def test_markdown_twin_writes_arrows_as_arrows(client: httpx.Client, demo_site: Site) -> None:
    text = client.get(f"/models/{HOSTILE_REPO}.md").text
    with demo_site.database.read_session() as session:
        messages = [
            c.message
            for stored in revision_log(session, HOSTILE_REPO)
            for c in changes_of(session, HOSTILE_REPO, stored.revision.sha)
            if " -> " in c.message and not {"<", "&", "[", "]", "`", "\\"} & set(c.message)
        ]
    assert messages, "the demo history words some change as old -> new"
    assert "-&gt;" not in text
    assert all(" ".join(m.split()) in text for m in messages)


HOSTILE_MARKDOWN = [
    HOSTILE,
    "[click](javascript:alert(1))",
    "![pixel](http://tracker.invalid/p.png)",
    "<img src=x onerror=alert(1)>",
    "&lt;script&gt;alert(1)&lt;/script&gt;",
    "`code` \\`escaped\\`",
    "<https://autolink.invalid>",
    "> quoted",
    "# heading",
    "line\n\n<script>two</script>",
]


@pytest.mark.parametrize("hostile", HOSTILE_MARKDOWN)
def test_markdown_text_forms_no_markup_and_keeps_the_words(hostile: str) -> None:
    line = markdown_text(hostile)
    assert "\n" not in line
    html = MarkdownIt("commonmark", {"html": True}).render(f"- **high** config {line}")
    for tag in ("<script", "<img", "<a ", "<code", "<blockquote", "<h1"):
        assert tag not in html, (hostile, html)
    shown = html_lib.unescape(re.sub(r"<[^>]*>", "", html))
    assert " ".join(hostile.split()) in shown, (hostile, shown)
    assert markdown_text("parameters 1,000 -> 2,000") == "parameters 1,000 -> 2,000"


def page_with(site: Site, accuracy: estimator.Accuracy | None) -> str:
    server = ServerThread()
    settings = PublishSettings(base_url=server.url, accuracy=accuracy)
    with (
        server.mount(create_app(site.database, settings=settings)),
        httpx.Client(base_url=server.url) as client,
    ):
        return client.get(f"/models/{HOSTILE_REPO}").text


def test_model_page_shows_the_benchmarks_last_score_as_a_sentence(demo_site: Site) -> None:
    scored = estimator.Accuracy(7.5, 20.0, 96.0, 41, 50, "2026-01-02", "tests/bench/x.py")
    text = page_with(demo_site, scored)
    assert (
        "Against 41 measured GPU runs (scored 2026-01-02), the median peak-memory estimate "
        "was off by 7.5% (90th percentile 20%)" in text
    )
    assert "right in 96% of 50 runs" in text and "tests/bench" not in text
    assert "median_abs_error_pct" not in text
    assert "has not been measured yet" in page_with(demo_site, None)


def test_the_app_quotes_the_estimators_own_record_by_default() -> None:
    recorded = json.loads((REPO_ROOT / "estimator" / "data" / "accuracy.json").read_text())
    assert PublishSettings().accuracy == estimator.measured_accuracy()
    assert estimator.measured_accuracy().scores() == recorded
