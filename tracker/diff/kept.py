"""What differs derive from parsed files, kept while the parse cache hands the same objects.

A walk parses each file version once: its parse cache (by kind and content key) hands
every later revision holding that version the same parsed object. The token tables
and listings the tokenizer row derives from a token file are pure functions of that
object, and each revision asks for them several times (the special-token table, the
listings, every JSON file's token names), and the next revision again for its parent.
``KeptByIdentity`` keeps such results keyed by the identity of the values they were
derived from, holding those values so that an identity is never reused while kept;
a value parsed anew is another object, so it is derived anew.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class KeptByIdentity(Generic[T]):
    """Up to ``size`` results of one pure function, by its arguments' identities (oldest
    dropped first); the callers only read the results, which are shared."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._held: dict[tuple[Hashable, tuple[int, ...]], tuple[tuple[Any, ...], T]] = {}
        self._lock = threading.Lock()  # the daemon's workers share it from their threads

    def get(self, label: Hashable, values: tuple[Any, ...], derive: Callable[[], T]) -> T:
        """The result for ``values`` (and ``label``, what else it depends on), derived by
        ``derive`` unless kept for these very objects."""
        # the values kept with a result are alive, so no other object has their identities
        key = (label, tuple(id(value) for value in values))
        with self._lock:
            held = self._held.get(key)
        if held is not None:
            return held[1]
        result = derive()
        with self._lock:
            self._held.pop(key, None)
            self._held[key] = (values, result)
            while len(self._held) > self._size:
                del self._held[next(iter(self._held))]
        return result


__all__ = ["KeptByIdentity"]
