"""RSS description and content:encoded are HTML to readers: upstream markup must arrive as text.

feedparser is a real reader's parser: it takes those RSS fields as text/html and
keeps (sanitised) elements, so a card ``license: "<img src=x onerror=...>"``
quoted in an advisory comes out as ``<img src="x">`` when the field is only
XML-escaped.
"""

from __future__ import annotations

import html
from datetime import UTC, datetime

import feedparser

from feeds.settings import PublishSettings
from feeds.syndication import render
from storage.records import Advisory, Severity

HOSTILE = '<img src=x onerror="alert(1)"> & <a href="javascript:alert(2)">click</a>'
WHEN = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def advisory() -> Advisory:
    details = f"card license changed: `MIT` -> `{HOSTILE}`\\nfile `{HOSTILE}.py` added"
    return Advisory(
        id="x_NEURARCH-org-name-000000000000",
        repo_id="org/name",
        old_sha="a" * 40,
        new_sha="b" * 40,
        published=WHEN,
        modified=WHEN,
        summary=f"license {HOSTILE}",
        severity=Severity.HIGH,
        osv={"details": details},
    )


def parsed(kind: str, title: str = "org/name") -> feedparser.FeedParserDict:
    body = render(
        [advisory()],
        kind=kind,  # type: ignore[arg-type]
        title=title,
        self_path=f"/models/org/name/feed.{kind}",
        page_path="/models/org/name",
        settings=PublishSettings(accuracy=None),
    )
    result = feedparser.parse(body)
    assert not result.bozo, result.get("bozo_exception")
    return result


def test_rss_html_fields_carry_upstream_markup_as_text() -> None:
    result = parsed("rss")
    entry = result.entries[0]
    fields = [entry.description, entry.content[0].value, entry.summary]
    for value in fields:
        assert "<img" not in value and "<a " not in value, value
        # a reader renders the entities: exactly the upstream text, shown as text
        assert HOSTILE in html.unescape(value)
    assert entry.content[0].type == "text/html"


def test_rss_channel_description_escapes_a_path_chosen_title() -> None:
    result = parsed("rss", title='<img src=x onerror="alert(3)"> · neurarch-trace')
    assert "<img" not in result.feed.subtitle
    assert "<img src=x" in html.unescape(result.feed.subtitle)


def test_atom_text_stays_text() -> None:
    entry = parsed("atom").entries[0]
    assert entry.content[0].type == "text/plain"
    assert HOSTILE in entry.content[0].value
    assert entry.summary == f"license {HOSTILE}"
