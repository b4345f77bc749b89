"""The content key of a weight manifest encoded before, found without encoding it again.

Most revisions leave the weights alone, so their manifest is their parent's (the same
object, where the snapshot saw the shards unchanged, else an identical value built
again); encoding it to JSON, checking that text for characters
to repair and hashing it cost more than anything else the recording does with it.
``marshal`` (format version 0: no object references, no interned-string marks) writes
a JSON value in a fraction of that time and keeps exactly what ``json.dumps`` reads:
each type (``1``, ``1.0`` and ``True`` differ), every float's repr (``-0.0`` is not
``0.0``), the order of keys. Equal marshal bytes are therefore the same JSON text, and
the sha256 of those bytes names the manifest's blob key and whether its text needed
repair, remembered here from the encoding that computed them.

Only the two answers are kept, not the text: where the store lacks the blob
(the transaction that wrote it rolled back), the caller encodes the manifest then.
"""

from __future__ import annotations

import hashlib
import marshal
import threading
from typing import Any, Final

_MARSHAL_VERSION: Final = 0
_REMEMBERED: Final = 1024
"""Manifests remembered per process (about 150 bytes each): a worker needs its walk's last."""


class ManifestKeys:
    """The blob key and repair flag of manifests encoded in this process, by their marshal digest."""

    def __init__(self, size: int = _REMEMBERED) -> None:
        self._size = size
        self._known: dict[bytes, tuple[str, bool]] = {}
        self._lock = threading.Lock()
        self._last = threading.local()

    def digest(self, manifest: Any) -> bytes | None:
        """The value's identity as JSON, or None where ``marshal`` cannot write it (a type of
        its own, too deep): such a manifest is encoded every time.

        The very object this thread asked about last answers from memory: a revision that
        leaves the weights alone carries its parent's manifest object itself
        (``tracker.revision.weights_manifest``), and nothing mutates a recorded manifest.
        """
        last: tuple[Any, bytes] | None = getattr(self._last, "asked", None)
        if last is not None and last[0] is manifest:
            return last[1]
        try:
            digest = hashlib.sha256(marshal.dumps(manifest, _MARSHAL_VERSION)).digest()
        except ValueError:
            return None
        self._last.asked = (manifest, digest)
        return digest

    def get(self, digest: bytes | None) -> tuple[str, bool] | None:
        """The (content key, repaired) remembered for ``digest``, if any."""
        return None if digest is None else self._known.get(digest)

    def remember(self, digest: bytes | None, key: str, repaired: bool) -> None:
        """Keep what encoding the manifest of ``digest`` found; the oldest goes past ``size``."""
        if digest is None:
            return
        with self._lock:
            self._known[digest] = (key, repaired)
            while len(self._known) > self._size:
                del self._known[next(iter(self._known))]


MANIFEST_KEYS: Final = ManifestKeys()
"""The process's memory of manifests it encoded."""


__all__ = ["MANIFEST_KEYS", "ManifestKeys"]
