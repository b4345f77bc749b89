"""RSS 2.0 and Atom 1.0 feeds parsed with feedparser; validators answer 304."""

from __future__ import annotations

from collections.abc import Iterator

import feedparser
import httpx
import pytest

from storage import changes_of
from storage.records import Severity
from tests.feeds.conftest import Site
from tests.feeds.populate import HOSTILE, HOSTILE_REPO

DEMO = "neurarch-demo/llama2-7b"
FEEDS = [
    f"/models/{DEMO}/feed.rss",
    f"/models/{DEMO}/feed.atom",
    "/orgs/neurarch-demo/feed.rss",
    "/orgs/neurarch-demo/feed.atom",
    "/feeds/all.rss",
    "/feeds/all.atom",
]


@pytest.fixture(scope="module")
def client(demo_site: Site) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=demo_site.url, timeout=30) as client:
        yield client


def urn(advisory_id: str) -> str:
    return f"urn:neurarch-trace:advisory:{advisory_id}"


@pytest.mark.parametrize("path", FEEDS)
def test_every_feed_parses_cleanly_with_stable_ids(
    client: httpx.Client, demo_site: Site, path: str
) -> None:
    first, second = client.get(path), client.get(path)
    assert first.status_code == 200 and first.content == second.content
    parsed = feedparser.parse(first.content)
    assert not parsed.bozo, parsed.get("bozo_exception")
    expected = [
        a
        for a in demo_site.advisories
        if path.startswith("/feeds/") or a.repo_id.startswith("neurarch-demo/")
    ]
    if path.startswith("/models/"):
        expected = [a for a in expected if a.repo_id == DEMO]
    assert {e.id for e in parsed.entries} == {urn(a.id) for a in expected}
    for entry in parsed.entries:
        advisory = next(a for a in expected if urn(a.id) == entry.id)
        assert entry.published_parsed[:6] == advisory.published.utctimetuple()[:6]


def test_markup_in_stored_text_is_escaped_in_feeds(client: httpx.Client) -> None:
    # Atom's text is XML-escaped once; RSS's description is HTML, so escaped twice
    for kind, escaped in (("rss", "&amp;lt;script&amp;gt;"), ("atom", "&lt;script&gt;")):
        raw = client.get(f"/models/{HOSTILE_REPO}/feed.{kind}").text
        assert HOSTILE not in raw
        assert f"{escaped}alert(1)" in raw


def test_model_feed_of_a_repo_never_recorded_is_404_as_its_page(client: httpx.Client) -> None:
    for path in ("/models/nope/nope", "/models/nope/nope/feed.atom", "/models/nope/nope/feed.rss"):
        response = client.get(path)
        assert response.status_code == 404, path
        assert response.json() == {"detail": "nope/nope is not tracked"}


def test_etag_and_last_modified_answer_304(client: httpx.Client) -> None:
    path = "/feeds/all.atom"
    response = client.get(path)
    etag, last = response.headers["etag"], response.headers["last-modified"]
    assert client.get(path, headers={"If-None-Match": etag}).status_code == 304
    assert client.get(path, headers={"If-Modified-Since": last}).status_code == 304
    assert client.get(path, headers={"If-None-Match": '"other"'}).status_code == 200
    early = "Mon, 01 Jan 2001 00:00:00 GMT"
    assert client.get(path, headers={"If-Modified-Since": early}).status_code == 200


def test_filters_keep_only_matching_advisories(client: httpx.Client, demo_site: Site) -> None:
    with demo_site.database.read_session() as session:
        touched = {
            a.id
            for a in demo_site.advisories
            if any(c.artifact == "chat_template" for c in changes_of(session, a.repo_id, a.new_sha))
        }
    assert touched
    parsed = feedparser.parse(client.get("/feeds/all.atom?artifact=chat_template").content)
    assert {e.id for e in parsed.entries} == {urn(i) for i in touched}
    high = {a.id for a in demo_site.advisories if a.severity >= Severity.HIGH}
    parsed = feedparser.parse(client.get("/feeds/all.rss?min_severity=high").content)
    assert {e.id for e in parsed.entries} == {urn(i) for i in high}
    bad = client.get("/feeds/all.rss?min_severity=urgent")
    assert bad.status_code == 400 and "unknown severity 'urgent'" in bad.json()["detail"]


def test_control_characters_in_a_feed_path_do_not_break_the_feed(client: httpx.Client) -> None:
    response = client.get("/orgs/a%00%1b/feed.atom")
    assert response.status_code == 200
    assert not feedparser.parse(response.content).bozo
