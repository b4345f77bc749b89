"""Rendered responses kept until the advisory log changes.

Feeds and OSV query results are a function of the advisory log alone, so a
render is reused while the log's version (how many advisories, the newest
modification) stays the same: one indexed query per request instead of a
full read and render. Any insert or withdrawal changes the version and the
next request renders afresh.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

T = TypeVar("T")
V = TypeVar("V", bound=Hashable)


class RenderCache(Generic[T]):
    """A bounded LRU of renders keyed by (request key, log version)."""

    def __init__(self, maxsize: int = 1024) -> None:
        self._maxsize = maxsize
        self._items: OrderedDict[Hashable, T] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable, version: Hashable, render: Callable[[], T]) -> T:
        full = (key, version)
        with self._lock:
            if full in self._items:
                self._items.move_to_end(full)
                return self._items[full]
        value = render()
        with self._lock:
            self._items[full] = value
            while len(self._items) > self._maxsize:
                self._items.popitem(last=False)
        return value


class LogVersion(Generic[V]):
    """The advisory log's version, re-read at most every ``ttl`` seconds.

    With ``ttl`` > 0 a cached render is served without touching the database
    at all, so a new or withdrawn advisory reaches feeds and the OSV API at
    most ``ttl`` seconds late; ``ttl=0`` reads the version on every request.
    """

    def __init__(self, read: Callable[[], V], ttl: float) -> None:
        self._read = read
        self._ttl = ttl
        self._lock = threading.Lock()
        self._value: V | None = None
        self._expires = float("-inf")

    def current(self) -> V:
        now = time.monotonic()
        with self._lock:
            if now < self._expires and self._value is not None:
                return self._value
        value = self._read()
        with self._lock:
            self._value, self._expires = value, now + self._ttl
        return value


__all__ = ["LogVersion", "RenderCache"]
