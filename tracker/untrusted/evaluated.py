"""Results of isolated evaluations, kept by the content they were computed from.

An isolated call (``tracker.untrusted.isolation``) costs a worker's CPU and a round
trip even for content the process has evaluated before: a chat template that changed
at one revision is rendered again as the next revision's old side, a template reverted
to an earlier text renders as it did then, and a tokenizer.json unchanged since the
last check of its repo is loaded again by the next check. What comes back is a
function of the content and of the fixed probes it is evaluated over, so it is kept
here under a SHA-256 of both (``content_key``) and handed back instead of a new call.

The caller keeps only what the content decided. A result a limit cut short (a
deadline, the worker's CPU or memory) depends on the moment too: it is not kept, so
that content is evaluated again next time, under the same limits. Kept results are
bounded by their pickled size (what the worker's reply weighed), least recently used
first out; every thread shares them and only reads them.
"""

from __future__ import annotations

import hashlib
import pickle
import threading
from collections import OrderedDict
from typing import Generic, TypeVar

T = TypeVar("T")


def content_key(*parts: str | bytes) -> str:
    """SHA-256 over ``parts``, each preceded by its kind and length, so that no two
    different lists of parts share a key."""
    digest = hashlib.sha256()
    for part in parts:
        data = part.encode("utf-8", "surrogatepass") if isinstance(part, str) else part
        digest.update(b"s" if isinstance(part, str) else b"b")
        digest.update(len(data).to_bytes(8, "big"))
        digest.update(data)
    return digest.hexdigest()


class EvaluatedByContent(Generic[T]):
    """Results by content key, within ``budget`` bytes of their pickles (oldest use out first)."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self._lock = threading.Lock()
        self._kept: OrderedDict[str, tuple[T, int]] = OrderedDict()
        self._size = 0

    def get(self, key: str) -> T | None:
        """The result kept for ``key``, or None."""
        with self._lock:
            found = self._kept.get(key)
            if found is None:
                return None
            self._kept.move_to_end(key)
            return found[0]

    def keep(self, key: str, result: T) -> None:
        """Keep ``result`` for ``key``; one larger than the whole budget is not kept."""
        size = len(pickle.dumps(result, pickle.HIGHEST_PROTOCOL))
        if size > self.budget:
            return
        with self._lock:
            held = self._kept.pop(key, None)
            if held is not None:
                self._size -= held[1]
            self._kept[key] = (result, size)
            self._size += size
            while self._size > self.budget:
                _, (_, dropped) = self._kept.popitem(last=False)
                self._size -= dropped


__all__ = ["EvaluatedByContent", "content_key"]
