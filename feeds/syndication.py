"""RSS 2.0 and Atom 1.0 feeds of the advisory log, per model, per org and global.

Entry ids are ``urn:neurarch-trace:advisory:<advisory id>``: they never change
when the app moves host or an entry is re-rendered, so readers never show an
entry twice. Dates are the advisory's published/modified times, and the
feed's own date is the newest entry's, so rendering the same log twice gives
the same bytes (and the same ETag). Text goes through feedgen, which escapes
it for XML; characters XML 1.0 cannot carry are dropped first.

RSS readers take ``description`` and ``content:encoded`` as HTML (feedparser
sanitises them as ``text/html``), and what they hold (summaries and details
quoting card fields, file names, config keys, commit titles, rendered
prompts) is upstream text. So in RSS those fields are HTML-escaped before
XML escaping: a card ``license: "<img src=x onerror=...>"`` reads as that text,
never as an element. Atom says ``type="text"`` and needs no second escape.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Literal

from feedgen.feed import FeedGenerator

from feeds.errors import FeedFilterError
from feeds.osv import DATA
from feeds.settings import PublishSettings
from storage.records import Advisory, Severity

Format = Literal["rss", "atom"]
MEDIA_TYPES: dict[str, str] = {
    "rss": "application/rss+xml; charset=utf-8",
    "atom": "application/atom+xml; charset=utf-8",
}
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_NOT_XML = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


@dataclass(frozen=True)
class FeedFilter:
    """Which advisories a feed keeps: changed ``artifact``, at ``min_severity`` or above."""

    artifact: str | None = None
    min_severity: Severity = Severity.INFO

    @classmethod
    def parse(cls, artifact: str | None, min_severity: str | None) -> FeedFilter:
        """The filter from query parameters, refusing unknown names with the choices."""
        known = artifacts()
        if artifact is not None and artifact not in known:
            raise FeedFilterError(
                f"unknown artifact {artifact!r}; expected one of {', '.join(known)}"
            )
        try:
            severity = Severity.parse(min_severity) if min_severity else Severity.INFO
        except ValueError as exc:
            raise FeedFilterError(str(exc)) from None
        return cls(artifact, severity)


@cache
def artifacts(path: Path = DATA) -> tuple[str, ...]:
    """The artifact names a feed can be filtered by."""
    return tuple(sorted(json.loads(path.read_text("utf-8"))["artifacts"]))


def render(
    advisories: Sequence[Advisory],
    *,
    kind: Format,
    title: str,
    self_path: str,
    page_path: str,
    settings: PublishSettings,
) -> bytes:
    """The feed document of ``advisories`` (newest first) in ``kind``."""
    feed = FeedGenerator()
    feed.id(_xml(f"urn:neurarch-trace:feed:{self_path.rsplit('.', 1)[0]}"))
    feed.title(_xml(title))
    about = _xml(f"{title}: revisions that changed behaviour or cost")
    feed.description(html.escape(about) if kind == "rss" else about)
    feed.link(href=_xml(settings.url(page_path)), rel="alternate")
    feed.link(href=_xml(settings.url(self_path)), rel="self")
    feed.language("en")
    feed.generator(settings.title)
    newest = max((a.modified for a in advisories), default=EPOCH)
    feed.updated(newest)
    feed.lastBuildDate(newest)
    for advisory in advisories:
        entry = feed.add_entry(order="append")
        link = settings.url(f"/advisories/{advisory.id}")
        entry.id(f"urn:neurarch-trace:advisory:{advisory.id}")
        entry.guid(f"urn:neurarch-trace:advisory:{advisory.id}", permalink=False)
        prefix = "[withdrawn] " if advisory.withdrawn else ""
        entry.title(_xml(f"{prefix}{advisory.repo_id}: {advisory.summary}"))
        entry.link(href=link)
        entry.published(advisory.published)
        entry.updated(advisory.modified)
        entry.category(term=advisory.severity.label)
        details = _xml(str(advisory.osv.get("details", advisory.summary)))
        if kind == "rss":
            escaped = html.escape(details)
            entry.content(escaped)  # content:encoded
            entry.description(escaped)
        else:
            entry.summary(_xml(advisory.summary))
            entry.content(details, type="text")
    document: bytes = feed.rss_str(pretty=True) if kind == "rss" else feed.atom_str(pretty=True)
    return document


def _xml(text: str) -> str:
    return _NOT_XML.sub("", text)


__all__ = ["MEDIA_TYPES", "FeedFilter", "FeedFilterError", "Format", "artifacts", "render"]
