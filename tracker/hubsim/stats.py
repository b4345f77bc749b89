"""Counters of every request the emulator answered and every body byte it wrote.

Tests assert on them ("a safetensors header read never transfers the weight body"),
so each request is kept as a record and the totals are computed from the records.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, replace


@dataclass
class RequestRecord:
    """One answered request; ``bytes_sent`` counts body bytes only, not headers.

    A record is logged before its response is written and its bytes are counted before
    each chunk goes out, so a client that has read a response always finds it counted.
    """

    method: str
    path: str
    kind: str
    status: int
    bytes_sent: int
    range: str | None


class Stats:
    """Thread-safe request log with totals per endpoint kind, status and path."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._records: list[RequestRecord] = []

    def record(self, record: RequestRecord) -> None:
        """Log one answered request; the server calls it before writing the response."""
        with self._lock:
            self._records.append(record)

    def add_bytes(self, record: RequestRecord, count: int) -> None:
        """Count ``count`` body bytes to ``record``, before they are written."""
        with self._lock:
            record.bytes_sent += count

    def reset(self) -> None:
        """Forget every record, so a test counts only what follows."""
        with self._lock:
            self._records.clear()

    def records(self, kind: str | None = None) -> list[RequestRecord]:
        """Copies of the records (of ``kind``), in the order logged; safe to keep."""
        with self._lock:
            return [replace(r) for r in self._records if kind is None or r.kind == kind]

    def requests(self, kind: str | None = None) -> int:
        """How many requests (of ``kind``) were answered."""
        return len(self.records(kind))

    def bytes_sent(self, kind: str | None = None) -> int:
        """Body bytes sent (for ``kind``), headers not counted."""
        return sum(r.bytes_sent for r in self.records(kind))

    def by_kind(self) -> Counter[str]:
        """Requests per endpoint kind."""
        return Counter(r.kind for r in self.records())

    def by_status(self) -> Counter[int]:
        """Requests per HTTP status; 0 counts resets and hangs (no answer at all)."""
        return Counter(r.status for r in self.records())

    def by_path(self) -> Counter[str]:
        """Requests per path (query left off)."""
        return Counter(r.path for r in self.records())

    def bytes_by_path(self) -> Counter[str]:
        """Body bytes sent per path: which file a client downloaded, and how much."""
        totals: Counter[str] = Counter()
        for r in self.records():
            totals[r.path] += r.bytes_sent
        return totals
