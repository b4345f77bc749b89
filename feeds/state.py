"""What every route of the app shares: the database, the settings, caches and the plan workers.

Feeds and OSV query results are a function of the advisory log alone, so a
render is reused while the log's version (the newest published and modified
times, two index lookups: storage.publishing.log_version) stays the same.
A new version does not rebuild anything: each key renders afresh, by its
own bounded index read, the next time it is asked for. Both caches are
cachetools TTLCaches behind a lock, as the app's worker threads share them;
the lock is not held while a render runs.

It is also where pages read storage: the model page through ``model_page``
(whose upstream text is clipped to ``MAX_SHOWN_CHARS`` per value, so a 9 MB
config key or card field cannot make an 18 MB page), the badge through
``badge`` (two indexed column reads: never the page's history, nor a
snapshot's weight manifest).
"""

from __future__ import annotations

import atexit
import json
import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Final

from cachetools import TTLCache, cached
from limits import parse
from limits.storage import MemoryStorage
from limits.strategies import MovingWindowRateLimiter

from feeds.compute import Budget, ComputePool
from feeds.settings import PublishSettings
from storage import Database, RepoId
from storage.publishing import (
    ModelPageData,
    ModelSummary,
    RevisionEntry,
    advisories_for,
    model_page,
)
from storage.publishing import log_version as read_log_version
from storage.records import Advisory, Change, StoredRevision
from storage.summaries import BadgeData, model_badge

MAX_SHOWN_CHARS: Final = 2000
"""The most of one upstream value (a key, a value, a card field, a title) a page shows."""
CLIPPED: Final = "…"

RENDER_MAX_AGE_SECONDS: Final = 60.0
"""How long a render is kept at most: it bounds how long an advisory the log's version
misses (written by an instance whose clock is behind) stays unseen."""
RENDERS_KEPT: Final = 1024

LogVersion = tuple[datetime | None, datetime | None]
Renders = Callable[[Hashable, Hashable, Callable[[], Any]], Any]
"""``renders(key, version, render)``: ``render()``, or what it gave for (key, version)."""


def render_cache(maxsize: int = RENDERS_KEPT, max_age: float = RENDER_MAX_AGE_SECONDS) -> Renders:
    """Renders kept by (request key, log version), least recently used out past ``maxsize``."""
    cache: TTLCache[tuple[Hashable, Hashable], Any] = TTLCache(maxsize, ttl=max_age)
    return cached(cache, key=_render_key, lock=threading.Lock())(_render)


def _render_key(
    key: Hashable, version: Hashable, render: Callable[[], Any]
) -> tuple[Hashable, Hashable]:
    return key, version


def _render(key: Hashable, version: Hashable, render: Callable[[], Any]) -> Any:
    return render()


@dataclass(frozen=True)
class AppState:
    """What every route shares: database, settings, render cache, log version, plan workers."""

    database: Database
    settings: PublishSettings
    renders: Renders = field(default_factory=render_cache)
    log_version: Callable[[], LogVersion] = field(init=False)
    compute: ComputePool = field(init=False)
    plan_rate: PlanRate = field(init=False)

    def __post_init__(self) -> None:
        settings = self.settings
        # re-read at most every log_poll_seconds: a cached render then costs no database round trip
        polled: TTLCache[tuple[()], LogVersion] = TTLCache(1, ttl=settings.log_poll_seconds)
        read = cached(polled, key=tuple, lock=threading.Lock())(self._read_version)
        object.__setattr__(self, "log_version", read)
        budget = Budget(
            cpu_seconds=settings.plan_cpu_seconds, wall_seconds=settings.plan_wall_seconds
        )
        pool = ComputePool(
            budget, settings.plan_workers, settings.plan_queue, preload=("feeds.plan_work",)
        )
        atexit.register(pool.close)
        object.__setattr__(self, "compute", pool)
        object.__setattr__(self, "plan_rate", PlanRate(settings.plan_rate))

    def _read_version(self) -> LogVersion:
        with self.database.read_session() as session:
            return read_log_version(session)

    def model_page(self, repo_id: RepoId) -> tuple[ModelPageData, list[Advisory]]:
        """The model page's data and the repo's advisories, upstream text clipped;
        RepoNotFound if the repo was never recorded."""
        with self.database.read_session() as session:
            data = model_page(session, repo_id)
            found = advisories_for(session, repo_id=repo_id, limit=None).advisories
        clipped = replace(
            data,
            summary=_clip_summary(data.summary),
            others=tuple(_clip_summary(other) for other in data.others),
            history=tuple(_clip_entry(entry) for entry in data.history),
            card={key: _clip_value(value) for key, value in data.card.items()},
        )
        return clipped, [replace(a, summary=clip(a.summary)) for a in found]

    def badge(self, repo_id: RepoId) -> BadgeData:
        """What the badge shows, from stored summaries; RepoNotFound if never recorded."""
        with self.database.read_session() as session:
            return model_badge(session, repo_id)


def clip(text: str, limit: int = MAX_SHOWN_CHARS) -> str:
    """``text``, or its first ``limit`` characters and an ellipsis."""
    return text if len(text) <= limit else text[:limit] + CLIPPED


def _clip_value(value: Any) -> Any:
    """A JSON value as stored if its text is short, else its text clipped."""
    if isinstance(value, str):
        return clip(value)
    if isinstance(value, dict | list):
        text = json.dumps(value, ensure_ascii=False)
        return value if len(text) <= MAX_SHOWN_CHARS else clip(text)
    return value


def _clip_change(change: Change) -> Change:
    return replace(
        change,
        path=clip(change.path),
        message=clip(change.message),
        old=_clip_value(change.old),
        new=_clip_value(change.new),
    )


def _clip_stored(stored: StoredRevision) -> StoredRevision:
    revision = stored.revision
    author = None if revision.author is None else clip(revision.author)
    return replace(stored, revision=replace(revision, title=clip(revision.title), author=author))


def _clip_summary(summary: ModelSummary) -> ModelSummary:
    latest = None if summary.latest is None else _clip_stored(summary.latest)
    return replace(summary, latest=latest)


def _clip_entry(entry: RevisionEntry) -> RevisionEntry:
    return replace(
        entry,
        stored=_clip_stored(entry.stored),
        changes=tuple(_clip_change(c) for c in entry.changes),
    )


class PlanRate:
    """How often one client address may call the plan API (a moving window, in memory).

    In memory, per web process: several instances behind a balancer each
    allow the rate, which bounds each one's CPU, the point of the limit.
    """

    def __init__(self, rate: str) -> None:
        self.item = parse(rate)
        self.limiter = MovingWindowRateLimiter(MemoryStorage())

    def admit(self, client: str) -> float | None:
        """None if ``client`` may call now, else the seconds until it may."""
        if self.limiter.hit(self.item, client):
            return None
        reset = self.limiter.get_window_stats(self.item, client).reset_time
        return max(1.0, float(reset) - time.time())


__all__ = [
    "MAX_SHOWN_CHARS",
    "RENDERS_KEPT",
    "RENDER_MAX_AGE_SECONDS",
    "AppState",
    "LogVersion",
    "PlanRate",
    "Renders",
    "clip",
    "render_cache",
]
