"""Rendered responses kept until the advisory log changes, one entry per request key.

Feeds and OSV query results are a function of the advisory log alone, so a
render is reused while the log's version (the newest published and modified
times, two index lookups: storage.publishing.log_version) stays the same.
A new version does not rebuild anything: each key renders afresh, by its
own bounded index read, the next time it is asked for. Entries also age out
after ``max_age`` seconds, which bounds how long an advisory the version
misses (written by an instance whose clock is behind) stays unseen.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

T = TypeVar("T")
V = TypeVar("V", bound=Hashable)


MAX_AGE_SECONDS = 60.0


class RenderCache(Generic[T]):
    """A bounded LRU of renders keyed by (request key, log version), each kept ``max_age`` s."""

    def __init__(self, maxsize: int = 1024, max_age: float = MAX_AGE_SECONDS) -> None:
        self._maxsize = maxsize
        self._max_age = max_age
        self._items: OrderedDict[Hashable, tuple[float, T]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable, version: Hashable, render: Callable[[], T]) -> T:
        """The render kept for (``key``, ``version``), else ``render()``'s result, kept."""
        full = (key, version)
        now = time.monotonic()
        with self._lock:
            found = self._items.get(full)
            if found is not None and now < found[0]:
                self._items.move_to_end(full)
                return found[1]
        value = render()
        with self._lock:
            self._items[full] = (now + self._max_age, value)
            self._items.move_to_end(full)
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
        """The version, read afresh only when the last reading is older than ``ttl`` seconds."""
        now = time.monotonic()
        with self._lock:
            if now < self._expires and self._value is not None:
                return self._value
        value = self._read()
        with self._lock:
            self._value, self._expires = value, now + self._ttl
        return value


__all__ = ["MAX_AGE_SECONDS", "LogVersion", "RenderCache"]
