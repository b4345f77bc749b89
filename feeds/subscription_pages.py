"""Public pages of a subscription: ``/subscriptions/{name}`` and its Atom feed of alerts.

Every subscription has a feed whatever its channels: the alerts queued on
its "feed" channel are its entries, newest first, with the id
``urn:neurarch-trace:alert:<subscription>:<event key>``, which never changes
when the entry is rendered again. The page shows what the subscription
watches (repos and workload, as stored: the fields of the subscription
field table) and the alerts given up on, by channel kind only: channel URLs and secrets are for the API's bearer-token holders, not
the public. Stored text is escaped (autoescape for HTML, feedgen for Atom),
and a link is only ever http(s) or a path of this app.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final
from urllib.parse import urlsplit

from fastapi import APIRouter, HTTPException, Request, Response
from fastapi.responses import HTMLResponse
from feedgen.feed import FeedGenerator
from sqlalchemy.orm import Session

from feeds.http import conditional
from feeds.pages import environment
from feeds.settings import PublishSettings
from feeds.state import AppState
from storage import NotFound, deliveries, get_subscription
from storage.records import Delivery, DeliveryStatus, Subscription

FEED_CHANNEL: Final = "feed"
ATOM_MEDIA_TYPE: Final = "application/atom+xml; charset=utf-8"
EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_NOT_XML = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


@dataclass(frozen=True)
class AlertEntry:
    """One alert of the subscription's feed, as the page and the Atom feed show it."""

    entry_id: str
    summary: str
    repo_id: str | None
    sha: str | None
    link: str
    advisory_link: str | None
    created_at: datetime


@dataclass(frozen=True)
class DeadLetter:
    """An alert given up on; ``kind`` is the channel's kind ("webhook"), never its URL."""

    kind: str
    attempts: int
    last_error: str
    created_at: datetime


@dataclass(frozen=True)
class SubscriptionPage:
    """A subscription's page: the subscription, its workload as rows, alerts and dead letters."""

    subscription: Subscription
    workload: list[tuple[str, str]]
    alerts: list[AlertEntry]
    dead_letters: list[DeadLetter]

    @property
    def newest(self) -> datetime | None:
        """When the newest listed alert was queued; None when there is none."""
        return max((a.created_at for a in self.alerts), default=None)


def router(state: AppState) -> APIRouter:
    """The subscription page and its Atom feed of alerts."""
    env = environment()
    api = APIRouter(tags=["subscriptions"])

    @api.get("/subscriptions/{name}", response_class=HTMLResponse)
    def page(name: str, request: Request) -> Response:
        """What a subscription watches, its alerts newest first, and its dead letters."""
        data = load(state, name)
        body = env.get_template("subscription.html").render(settings=state.settings, page=data)
        return conditional(request, body.encode(), "text/html; charset=utf-8", data.newest)

    @api.get("/subscriptions/{name}/alerts.atom", response_class=Response)
    def alerts_feed(name: str, request: Request) -> Response:
        """The subscription's alerts as Atom 1.0."""
        data = load(state, name)
        body = render_atom(data, self_path=request.url.path, settings=state.settings)
        return conditional(request, body, ATOM_MEDIA_TYPE, data.newest)

    return api


def load(state: AppState, name: str) -> SubscriptionPage:
    """The page data of the active subscription ``name``; 404 if there is none."""
    with state.database.read_session() as session:
        record = _active(session, name)
        rows = deliveries(session, record.id)
    alerts = [
        alert_entry(record.name, d, state.settings)
        for d in sorted(rows, key=lambda d: d.sequence, reverse=True)
        if d.channel == FEED_CHANNEL
    ]
    dead = [
        DeadLetter(
            kind=d.channel.partition(":")[0],
            attempts=d.attempts,
            last_error=d.last_error or "",
            created_at=d.created_at,
        )
        for d in rows
        if d.status is DeliveryStatus.DEAD_LETTER
    ]
    return SubscriptionPage(record, workload_rows(record), alerts, dead)


def workload_rows(record: Subscription) -> list[tuple[str, str]]:
    """(field, shown value) of the stored workload: the job, the cards and what alerts.

    The rows are the record's own ``spec`` fields in stored order, which is
    the subscription field table's (the tracker writes them from it), then
    its severity; no list of fields is kept here to drift from that table.
    Channels are left out: their URLs and secrets are not for the public.
    """
    rows = []
    for key, value in record.spec.items():
        if isinstance(value, list):
            shown = ", ".join(map(str, value))
        else:
            shown = "none" if value is None else str(value)  # engine: none modelled
        rows.append((key, shown))
    rows.append(("min_severity", record.min_severity.label))
    return rows


def alert_entry(subscription: str, delivery: Delivery, settings: PublishSettings) -> AlertEntry:
    """A feed delivery as an entry; the link is its advisory, else the model's page."""
    payload = delivery.payload
    repo_id = delivery.repo_id or _text(payload.get("repo_id"))
    advisory = _web_url(payload.get("advisory_url"))
    if advisory is None and delivery.advisory_id:
        advisory = settings.url(f"/advisories/{delivery.advisory_id}")
    fallback = f"/models/{repo_id}" if repo_id else f"/subscriptions/{subscription}"
    return AlertEntry(
        entry_id=f"urn:neurarch-trace:alert:{subscription}:{delivery.event_key}",
        summary=_text(payload.get("summary")) or delivery.event_key,
        repo_id=repo_id,
        sha=delivery.sha or _text(payload.get("sha")),
        link=advisory or settings.url(fallback),
        advisory_link=advisory,
        created_at=delivery.created_at,
    )


def render_atom(data: SubscriptionPage, *, self_path: str, settings: PublishSettings) -> bytes:
    """The Atom document of ``data.alerts``; the same alerts give the same bytes."""
    name = data.subscription.name
    feed = FeedGenerator()
    feed.id(_xml(f"urn:neurarch-trace:subscription:{name}"))
    feed.title(_xml(f"{name} alerts · {settings.title}"))
    feed.subtitle(_xml(f"alerts of the subscription {name}: {', '.join(_repos(data))}"))
    feed.link(href=_xml(settings.url(f"/subscriptions/{name}")), rel="alternate")
    feed.link(href=_xml(settings.url(self_path)), rel="self")
    feed.language("en")
    feed.generator(settings.title)
    feed.updated(data.newest or EPOCH)
    for alert in data.alerts:
        entry = feed.add_entry(order="append")
        entry.id(_xml(alert.entry_id))
        entry.title(_xml(alert.summary.splitlines()[0] if alert.summary.strip() else name))
        entry.link(href=_xml(alert.link))
        entry.published(alert.created_at)
        entry.updated(alert.created_at)
        where = f"{alert.repo_id}@{alert.sha}" if alert.repo_id and alert.sha else ""
        entry.summary(_xml(alert.summary))
        entry.content(_xml(f"{alert.summary}\n\n{where}".strip()), type="text")
    document: bytes = feed.atom_str(pretty=True)
    return document


def _active(session: Session, name: str) -> Subscription:
    if any(ord(ch) < 32 for ch in name):  # no name has them, and PostgreSQL refuses a NUL
        raise HTTPException(404, f"no subscription is named {name!r}")
    try:
        record = get_subscription(session, name)
    except NotFound:
        raise HTTPException(404, f"no subscription is named {name!r}") from None
    if not record.active:
        raise HTTPException(404, f"the subscription {name!r} was removed")
    return record


def _repos(data: SubscriptionPage) -> Sequence[str]:
    return data.subscription.repo_patterns


def _web_url(value: Any) -> str | None:
    """``value`` if it is an absolute http(s) URL, so no ``javascript:`` link is ever made."""
    if not isinstance(value, str):
        return None
    parts = urlsplit(value)
    return value if parts.scheme in ("http", "https") and parts.netloc else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _xml(text: str) -> str:
    return _NOT_XML.sub("", text)


__all__ = [
    "AlertEntry",
    "DeadLetter",
    "SubscriptionPage",
    "alert_entry",
    "load",
    "render_atom",
    "router",
    "workload_rows",
]
