"""The public subscription page and its Atom feed of alerts, over a real server and in Chromium."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import feedparser
import httpx
import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By

from feeds import PublishSettings, create_app
from storage import (
    Database,
    claim_due_deliveries,
    enqueue_delivery,
    latest_revision,
    record_delivery_failure,
    remove_subscription,
)
from tests.feeds.conftest import ServerThread, Site, no_alert
from tests.feeds.populate import HOSTILE, HOSTILE_REPO
from tracker.alerts.registry import save_subscription
from tracker.alerts.spec import parse_subscription

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
SECRET = "whsec_bmV1cmFyY2gtdGVzdC1zZWNyZXQta2V5"
HOOK = "https://hooks.example/private-path"
SHA_A, SHA_B = "a" * 40, "b" * 40
ADVISORY_URL = "https://trace.example/advisories/NTRACE-2026-abc"


def subscribe(database: Database, name: str, repos: list[str]) -> int:
    spec = parse_subscription(
        {
            "name": name,
            "repos": repos,
            "method": "qlora",
            "batch": 8,
            "seq_len": 2048,
            "cards": ["T4", "L4"],
            "alert_on": ["fit", "tokenizer"],
            "channels": [
                {"type": "webhook", "url": HOOK, "secret": SECRET},
                {"type": "apprise", "url": "discord://1234/apprise-token-xyz"},
            ],
        }
    )
    with database.session() as session:
        record, _ = save_subscription(session, spec, now=NOW)
    return record.id


def alert(
    database: Database, subscription_id: int, key: str, summary: str, at: datetime, **extra: Any
) -> None:
    """One alert queued the way the daemon queues it: on the feed and on the webhook."""
    repo_id, sha = extra.pop("stored_repo", None), extra.pop("stored_sha", None)
    payload = {"summary": summary, "advisory_url": None, **extra}
    with database.session() as session:
        for channel in ("feed", "webhook:0"):
            enqueue_delivery(
                session, subscription_id, channel, key, payload, now=at, repo_id=repo_id, sha=sha
            )


def give_up_on_webhooks(database: Database, error: str, at: datetime) -> None:
    """Every webhook row attempted once and dead-lettered with ``error``."""
    with database.session() as session:
        for delivery in claim_due_deliveries(session, at, 100, 60):
            if delivery.channel.startswith("webhook"):
                record_delivery_failure(session, delivery.id, error, retry_at=None)


@dataclass(frozen=True)
class Served:
    database: Database
    client: httpx.Client
    url: str


@pytest.fixture
def served(database: Database) -> Iterator[Served]:
    sid = subscribe(database, "qlora-on-t4", ["meta-llama/*", "org/model"])
    alert(
        database,
        sid,
        "org/model@aaa/fit",
        "QLoRA r=16 no longer fits T4",
        NOW,
        repo_id="org/model",
        sha=SHA_A,
        advisory_url=ADVISORY_URL,
    )
    give_up_on_webhooks(database, "HTTP 503 from https://hooks.example/private-path", NOW)
    alert(
        database,
        sid,
        "meta-llama/x@bbb/changes",
        f"{HOSTILE} tokenizer changed",
        NOW + timedelta(hours=1),
        repo_id="meta-llama/x",
        sha=SHA_B,
        advisory_url="javascript:alert(1)",
    )
    server = ServerThread()
    app = create_app(database, settings=PublishSettings(base_url=server.url))
    with server.mount(app), httpx.Client(base_url=server.url, timeout=30) as client:
        yield Served(database, client, server.url)


def test_page_shows_repos_workload_alerts_newest_first_and_dead_letters(served: Served) -> None:
    response = served.client.get("/subscriptions/qlora-on-t4")
    assert response.status_code == 200
    page = response.text
    for value in ("<code>meta-llama/*</code>", "<code>org/model</code>"):
        assert value in page
    for key, value in [
        ("method", "qlora"),
        ("batch", "8"),
        ("seq_len", "2048"),
        ("cards", "T4, L4"),
        ("alert_on", "fit, tokenizer"),
    ]:
        assert f"<tr><th>{key}</th><td>{value}</td></tr>" in page
    hostile_at = page.index("tokenizer changed")
    older_at = page.index("QLoRA r=16 no longer fits T4")
    assert hostile_at < older_at, "newest alert first"
    assert f"<code>{SHA_B[:12]}</code>" in page and f'<a href="{ADVISORY_URL}">advisory</a>' in page
    assert '<a href="/models/org/model">org/model</a>' in page
    assert "2026-03-01T13:00:00Z" in page and "2026-03-01T12:00:00Z" in page
    dead = page[page.index('<table id="dead-letters">') :]
    assert "<tr><td>webhook</td><td>1</td><td>HTTP 503 from" in dead
    assert SECRET not in page and "apprise-token-xyz" not in page and "discord://" not in page
    assert "hooks.example/private-path</td>" not in page.split("Dead letters")[0]


def test_markup_in_an_alert_is_inert(served: Served) -> None:
    page = served.client.get("/subscriptions/qlora-on-t4").text
    assert HOSTILE not in page and "&lt;script&gt;alert(1)&lt;/script&gt; tokenizer changed" in page
    assert "javascript:" not in page
    atom = served.client.get("/subscriptions/qlora-on-t4/alerts.atom")
    assert b"<script>" not in atom.content and b"javascript:" not in atom.content
    parsed = feedparser.parse(atom.content)
    assert parsed.entries[0].title == f"{HOSTILE} tokenizer changed"


def test_atom_feed_has_one_stable_entry_per_feed_alert(served: Served) -> None:
    first = served.client.get("/subscriptions/qlora-on-t4/alerts.atom")
    assert first.status_code == 200
    assert first.headers["content-type"] == "application/atom+xml; charset=utf-8"
    parsed = feedparser.parse(first.content)
    assert not parsed.bozo, parsed.get("bozo_exception")
    ids = [e.id for e in parsed.entries]
    assert ids == [
        "urn:neurarch-trace:alert:qlora-on-t4:meta-llama/x@bbb/changes",
        "urn:neurarch-trace:alert:qlora-on-t4:org/model@aaa/fit",
    ]
    titles = [e.title for e in parsed.entries]
    assert titles[1] == "QLoRA r=16 no longer fits T4"
    assert parsed.entries[1].link == ADVISORY_URL
    assert parsed.entries[0].link == f"{served.url}/models/meta-llama/x"
    assert parsed.feed.id == "urn:neurarch-trace:subscription:qlora-on-t4"

    second = served.client.get("/subscriptions/qlora-on-t4/alerts.atom")
    assert second.content == first.content
    assert [e.id for e in feedparser.parse(second.content).entries] == ids
    cached = served.client.get(
        "/subscriptions/qlora-on-t4/alerts.atom", headers={"If-None-Match": first.headers["etag"]}
    )
    assert cached.status_code == 304


def test_unknown_and_removed_subscriptions_are_404(served: Served) -> None:
    for path in (
        "/subscriptions/nobody",
        "/subscriptions/nobody/alerts.atom",
        "/subscriptions/a%00b",
        "/subscriptions/a%00b/alerts.atom",
    ):
        assert served.client.get(path).status_code == 404
    with served.database.session() as session:
        assert remove_subscription(session, "qlora-on-t4")
    for path in ("/subscriptions/qlora-on-t4", "/subscriptions/qlora-on-t4/alerts.atom"):
        response = served.client.get(path)
        assert response.status_code == 404
        assert response.json()["detail"] == "the subscription 'qlora-on-t4' was removed"


def test_subscription_page_in_chromium_shows_stored_alerts_as_text(
    browser: webdriver.Chrome, demo_site: Site
) -> None:
    with demo_site.database.read_session() as session:
        head = latest_revision(session, HOSTILE_REPO)
    assert head is not None
    sid = subscribe(demo_site.database, "browser-check", [HOSTILE_REPO])
    alert(
        demo_site.database,
        sid,
        f"{HOSTILE_REPO}@{head.sha}/fit",
        f"{HOSTILE} no longer fits L4",
        NOW,
        stored_repo=HOSTILE_REPO,
        stored_sha=head.sha,
    )
    give_up_on_webhooks(demo_site.database, f"{HOSTILE} refused", NOW)
    browser.get(f"{demo_site.url}/subscriptions/browser-check")
    assert no_alert(browser)
    assert browser.execute_script("return document.querySelectorAll('body script').length") == 0
    rows = browser.find_elements(By.CSS_SELECTOR, "#alerts tbody tr")
    cells = [[td.text for td in row.find_elements(By.TAG_NAME, "td")] for row in rows]
    assert [c[1:4] for c in cells] == [
        [HOSTILE_REPO, head.sha[:12], f"{HOSTILE} no longer fits L4"]
    ]
    dead = browser.find_elements(By.CSS_SELECTOR, "#dead-letters tbody tr td")
    assert [td.text for td in dead[:3]] == ["webhook", "1", f"{HOSTILE} refused"]
    workload = {
        row.find_element(By.TAG_NAME, "th").text: row.find_element(By.TAG_NAME, "td").text
        for row in browser.find_elements(By.CSS_SELECTOR, "#workload tr")
    }
    assert workload["method"] == "qlora" and workload["cards"] == "T4, L4"
    assert HOOK not in browser.page_source and SECRET not in browser.page_source
