"""Injected faults: what a flaky Hub does to a client, on a seeded schedule.

A ``Fault`` matches requests by endpoint kind (``model_info``, ``commits``, ``refs``,
``tree``, ``paths_info``, ``resolve``, ``list_models``, ``safetensors_metadata``) or by
bucket (``api`` = every kind but ``resolve``), optionally by a path substring; it fires
with probability ``rate`` (one RNG seeded by ``FaultPlan(seed)``) at most ``times``
times. Actions:

- ``status``: answer ``status`` (e.g. 500, 503) with ``{"error": ...}``;
- ``rate_limit``: 429 with numeric ``Retry-After`` and ``RateLimit``/``RateLimit-Policy``;
- ``reset``: close the connection with a TCP reset before answering;
- ``truncate``: send the headers with the full Content-Length, then ``keep_bytes`` of the
  body, then close;
- ``hang``: wait ``seconds`` (past the client's timeout), then close without answering;
- ``latency``: wait ``seconds``, then answer normally (does not stop other faults).
"""

from __future__ import annotations

import random
import threading
from dataclasses import dataclass
from typing import Literal

Action = Literal["status", "rate_limit", "reset", "truncate", "hang", "latency"]
API_KINDS = frozenset(
    {"model_info", "commits", "refs", "tree", "paths_info", "list_models", "safetensors_metadata"}
)


@dataclass
class Fault:
    action: Action
    endpoint: str | None = None
    path_contains: str | None = None
    rate: float = 1.0
    times: int | None = None
    status: int = 503
    retry_after: int = 1
    seconds: float = 0.0
    keep_bytes: int = 0
    hits: int = 0

    def matches(self, kind: str, path: str, method: str = "GET") -> bool:
        if self.times is not None and self.hits >= self.times:
            return False
        if self.action == "truncate" and method == "HEAD":
            return False  # a HEAD has no body to cut short
        if self.endpoint not in (None, kind) and not (self.endpoint == "api" and kind in API_KINDS):
            return False
        return self.path_contains is None or self.path_contains in path


class FaultPlan:
    """The faults in force; thread-safe, changeable while the server runs."""

    def __init__(self, seed: int = 0) -> None:
        self._lock = threading.Lock()
        self._rng = random.Random(seed)
        self._faults: list[Fault] = []

    def add(self, fault: Fault) -> Fault:
        with self._lock:
            self._faults.append(fault)
        return fault

    def clear(self, seed: int | None = None) -> None:
        with self._lock:
            self._faults.clear()
            if seed is not None:
                self._rng.seed(seed)

    def error_rate(self, rate: float, status: int = 500, endpoint: str | None = None) -> Fault:
        return self.add(Fault("status", endpoint, rate=rate, status=status))

    def errors(self, times: int, status: int = 503, endpoint: str | None = None) -> Fault:
        return self.add(Fault("status", endpoint, times=times, status=status))

    def rate_limit(self, times: int, retry_after: int = 1, endpoint: str | None = None) -> Fault:
        return self.add(
            Fault("rate_limit", endpoint, times=times, status=429, retry_after=retry_after)
        )

    def latency(self, seconds: float, endpoint: str | None = None) -> Fault:
        return self.add(Fault("latency", endpoint, seconds=seconds))

    def reset(self, times: int = 1, endpoint: str | None = None) -> Fault:
        return self.add(Fault("reset", endpoint, times=times))

    def truncate(self, times: int = 1, keep_bytes: int = 0, endpoint: str | None = None) -> Fault:
        return self.add(Fault("truncate", endpoint, times=times, keep_bytes=keep_bytes))

    def hang(self, seconds: float, times: int = 1, endpoint: str | None = None) -> Fault:
        return self.add(Fault("hang", endpoint, times=times, seconds=seconds))

    def draw(self, kind: str, path: str, method: str = "GET") -> tuple[float, Fault | None]:
        """Latency to add, and the one fault (if any) this request suffers."""
        delay = 0.0
        chosen: Fault | None = None
        with self._lock:
            for fault in self._faults:
                if not fault.matches(kind, path, method) or self._rng.random() >= fault.rate:
                    continue
                fault.hits += 1
                if fault.action == "latency":
                    delay += fault.seconds
                elif chosen is None:
                    chosen = fault
                else:
                    fault.hits -= 1
        return delay, chosen
