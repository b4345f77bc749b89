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

``TransientMix`` (``FaultPlan.transient_mix(rate, seed=...)``, ``hubsim --faults 0.25``)
is the flaky network in one setting: a fraction ``rate`` of all requests fails with one
of 500, 503, 429 with ``Retry-After``, a reset, a body cut to half its Content-Length,
or answers after 1-3 s. Whether a request is hit depends only on the seed, the request
(method, path with query, Range) and how many times that same request came before,
never on which thread asked first, so a run is reproducible under any concurrency and
a retried request draws afresh. ``injected`` lists what it did.
"""

from __future__ import annotations

import random
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Literal

Action = Literal["status", "rate_limit", "reset", "truncate", "hang", "latency"]
API_KINDS = frozenset(
    {"model_info", "commits", "refs", "tree", "paths_info", "list_models", "safetensors_metadata"}
)


@dataclass
class Fault:
    """One scripted fault: what it does, which requests it hits, how often and how many times.

    ``hits`` counts the requests it was applied to; fields not used by ``action`` are ignored.
    """

    action: Action
    endpoint: str | None = None
    path_contains: str | None = None
    rate: float = 1.0
    times: int | None = None
    status: int = 503
    retry_after: int = 1
    seconds: float = 0.0
    keep_bytes: int = 0
    keep_fraction: float | None = None
    """For ``truncate``: keep this share of the body instead of ``keep_bytes``."""
    hits: int = 0

    def kept(self, size: int) -> int:
        """Body bytes a ``truncate`` lets through of a ``size``-byte body."""
        if self.keep_fraction is not None:
            return int(size * self.keep_fraction)
        return self.keep_bytes

    def matches(self, kind: str, path: str, method: str = "GET") -> bool:
        """Whether the fault hits this request now: ``times`` not used up, kind and path match."""
        if self.times is not None and self.hits >= self.times:
            return False
        if self.action == "truncate" and method == "HEAD":
            return False  # a HEAD has no body to cut short
        if self.endpoint not in (None, kind) and not (self.endpoint == "api" and kind in API_KINDS):
            return False
        return self.path_contains is None or self.path_contains in path


MixKind = Literal["500", "503", "429", "reset", "truncate", "slow"]
MIX_KINDS: tuple[MixKind, ...] = ("500", "503", "429", "reset", "truncate", "slow")


@dataclass(frozen=True)
class Injection:
    """One fault the mix dealt: to the ``occurrence``-th sending of ``request``."""

    kind: MixKind
    request: str
    occurrence: int


@dataclass
class TransientMix:
    """A seeded ``rate`` of every request fails transiently, each in one of ``kinds``."""

    rate: float
    seed: int = 0
    retry_after: int = 1
    slow_s: tuple[float, float] = (1.0, 3.0)
    kinds: tuple[MixKind, ...] = MIX_KINDS
    injected: list[Injection] = field(default_factory=list)
    _seen: Counter[str] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        if not 0.0 <= self.rate <= 1.0:
            raise ValueError(f"fault rate must be between 0 and 1, got {self.rate}")

    def deal(self, request: str, method: str) -> tuple[float, Fault | None]:
        """(delay, fault) for this sending of ``request``; the caller holds the plan's lock."""
        occurrence = self._seen[request]
        self._seen[request] += 1
        # A str seed is hashed with SHA-512 by random.seed: the same in every process.
        rng = random.Random(f"{self.seed}|{request}|{occurrence}")
        if rng.random() >= self.rate:
            return 0.0, None
        kinds = [k for k in self.kinds if not (k == "truncate" and method == "HEAD")]
        kind = rng.choice(kinds)
        self.injected.append(Injection(kind, request, occurrence))
        if kind == "slow":
            return rng.uniform(*self.slow_s), None
        if kind == "429":
            return 0.0, Fault("rate_limit", status=429, retry_after=self.retry_after)
        if kind == "reset":
            return 0.0, Fault("reset")
        if kind == "truncate":
            return 0.0, Fault("truncate", keep_fraction=0.5)
        return 0.0, Fault("status", status=int(kind))

    def sent(self, request: str) -> int:
        """How many times ``request`` (as ``draw`` names it) reached the emulator."""
        return self._seen[request]

    def counts(self) -> Counter[str]:
        """Faults dealt so far, by kind."""
        return Counter(injection.kind for injection in list(self.injected))


class FaultPlan:
    """The faults in force; thread-safe, changeable while the server runs."""

    def __init__(self, seed: int = 0) -> None:
        self._lock = threading.Lock()
        self._rng = random.Random(seed)
        self._faults: list[Fault] = []
        self._mixes: list[TransientMix] = []

    def add(self, fault: Fault) -> Fault:
        """Put ``fault`` in force at once, even while serving; returns it, to read its ``hits``."""
        with self._lock:
            self._faults.append(fault)
        return fault

    def clear(self, seed: int | None = None) -> None:
        """Lift every fault and mix; ``seed`` restarts the plan's random draws."""
        with self._lock:
            self._faults.clear()
            self._mixes.clear()
            if seed is not None:
                self._rng.seed(seed)

    def error_rate(self, rate: float, status: int = 500, endpoint: str | None = None) -> Fault:
        """Answer ``status`` to a ``rate`` share of requests (of ``endpoint``), for ever."""
        return self.add(Fault("status", endpoint, rate=rate, status=status))

    def errors(self, times: int, status: int = 503, endpoint: str | None = None) -> Fault:
        """Answer ``status`` to the next ``times`` requests (of ``endpoint``)."""
        return self.add(Fault("status", endpoint, times=times, status=status))

    def rate_limit(self, times: int, retry_after: int = 1, endpoint: str | None = None) -> Fault:
        """Answer 429 with ``Retry-After: retry_after`` to the next ``times`` requests."""
        return self.add(
            Fault("rate_limit", endpoint, times=times, status=429, retry_after=retry_after)
        )

    def latency(self, seconds: float, endpoint: str | None = None) -> Fault:
        """Delay every request (of ``endpoint``) by ``seconds``, then answer normally."""
        return self.add(Fault("latency", endpoint, seconds=seconds))

    def reset(self, times: int = 1, endpoint: str | None = None) -> Fault:
        """Close the next ``times`` connections with a TCP reset before answering."""
        return self.add(Fault("reset", endpoint, times=times))

    def truncate(self, times: int = 1, keep_bytes: int = 0, endpoint: str | None = None) -> Fault:
        """Send the full Content-Length, then only ``keep_bytes`` of the body, ``times`` times."""
        return self.add(Fault("truncate", endpoint, times=times, keep_bytes=keep_bytes))

    def hang(self, seconds: float, times: int = 1, endpoint: str | None = None) -> Fault:
        """Wait ``seconds`` (past a client's timeout), then close unanswered, ``times`` times."""
        return self.add(Fault("hang", endpoint, times=times, seconds=seconds))

    def transient_mix(
        self,
        rate: float,
        *,
        seed: int = 0,
        retry_after: int = 1,
        slow_s: tuple[float, float] = (1.0, 3.0),
        kinds: tuple[MixKind, ...] = MIX_KINDS,
    ) -> TransientMix:
        """Fail ``rate`` of all requests transiently (see the module docstring)."""
        mix = TransientMix(rate, seed, retry_after, slow_s, kinds)
        with self._lock:
            self._mixes.append(mix)
        return mix

    def draw(
        self, kind: str, path: str, method: str = "GET", request: str | None = None
    ) -> tuple[float, Fault | None]:
        """Latency to add, and the one fault (if any) this request suffers.

        ``request`` names the request exactly (method, path with query, Range) for the
        transient mixes; without it they key on ``method`` and ``path``.
        """
        delay = 0.0
        chosen: Fault | None = None
        with self._lock:
            if kind != "other":
                for mix in self._mixes:
                    extra, dealt = mix.deal(request or f"{method} {path}", method)
                    delay += extra
                    chosen = chosen or dealt
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
