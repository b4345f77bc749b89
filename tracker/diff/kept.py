"""What differs derive from parsed files, kept while the parse cache hands the same objects.

A walk parses each file version once: its parse cache (by kind and content key) hands
every later revision holding that version the same parsed object. The token tables
and listings the tokenizer row derives from a token file are pure functions of that
object, and each revision asks for them several times (the special-token table, the
listings, every JSON file's token names), and the next revision again for its parent.
``KeptByIdentity`` keeps such results keyed by the identity of the values they were
derived from, holding those values so that an identity is never reused while kept;
a value parsed anew is another object, so it is derived anew.

Each thread keeps its own few: a check worker walks one repo at a time, and what it
needs again is its revision's and its parent's. Held per thread and that few, the
kept values are ones its walk holds anyway, so an upstream file at its size limit is
not held longer than the walk holds it (a table shared by every thread would keep
others' files alive after their walks moved on).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class KeptByIdentity(Generic[T]):
    """Up to ``size`` results of one pure function per thread, by its arguments' identities
    (oldest dropped first); the callers only read the results, which are shared."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._local = threading.local()

    def get(self, label: Hashable, values: tuple[Any, ...], derive: Callable[[], T]) -> T:
        """The result for ``values`` (and ``label``, what else it depends on), derived by
        ``derive`` unless this thread kept it for these very objects."""
        held: dict[tuple[Hashable, tuple[int, ...]], tuple[tuple[Any, ...], T]] | None
        held = getattr(self._local, "held", None)
        if held is None:
            held = self._local.held = {}
        # the values kept with a result are alive, so no other object has their identities
        key = (label, tuple(id(value) for value in values))
        found = held.get(key)
        if found is not None:
            return found[1]
        result = derive()
        held[key] = (values, result)
        while len(held) > self._size:
            del held[next(iter(held))]
        return result


__all__ = ["KeptByIdentity"]
