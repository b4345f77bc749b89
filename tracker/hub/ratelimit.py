"""One limiter for every request this process sends to the Hub.

The Hub counts requests per 5-minute window and answers 429 with
``Retry-After: N`` or ``RateLimit: "api";r=0;t=N`` when we overrun it. The
limiter hooks into huggingface_hub's shared HTTP client (its client
factory), so every worker thread waits on the same gate: a 429 seen by one
worker pauses all of them until the Hub's reset, instead of each worker
discovering the limit on its own. Between pauses a token bucket spaces the
requests. The same hooks count responses by status for /metrics, and the
client gets a finite timeout: huggingface_hub's default has none, and a Hub
that stops answering must become a retry, not a hung worker.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import Protocol

import httpx2
from huggingface_hub.utils import (  # type: ignore[attr-defined]  # lazily exported
    parse_ratelimit_headers,
    set_client_factory,
)
from huggingface_hub.utils._http import hf_request_event_hook

MAX_PAUSE_S = 300.0
"""Never pause longer than one documented rate-limit window, whatever a header says."""


def pause_from_headers(status: int, headers: Mapping[str, str]) -> float | None:
    """Seconds the Hub asks us to wait, from a 429's RateLimit or Retry-After header."""
    if status != 429:
        info = parse_ratelimit_headers(headers)
        return float(info.reset_in_seconds) if info and info.remaining == 0 else None
    info = parse_ratelimit_headers(headers)
    if info is not None and info.remaining == 0:
        return float(min(info.reset_in_seconds, MAX_PAUSE_S))
    return retry_after_header(headers)


def retry_after_header(headers: Mapping[str, str]) -> float | None:
    """The seconds of a ``Retry-After`` header, at most ``MAX_PAUSE_S``; None without one."""
    retry_after = headers.get("retry-after") or headers.get("Retry-After")
    if retry_after is not None:
        try:
            return min(max(float(retry_after.strip()), 0.0), MAX_PAUSE_S)
        except ValueError:
            return None  # an HTTP-date; huggingface_hub does not read it either
    return None


class SharedGate(Protocol):
    """A budget several instances draw from (``tracker.hub.budget.SharedBudget``)."""

    def take(self) -> float:
        """0.0 when a request may go now, else the seconds to wait before asking again."""
        ...

    def pause(self, seconds: float) -> None:
        """Hold every request back for ``seconds`` (a 429's Retry-After), across instances."""
        ...

    def follow_policy(self, requests: int, window_s: int) -> None:
        """Lower the budget to what the Hub's RateLimit-Policy header announces."""
        ...


class RateLimiter:
    """A token bucket plus a global pause that any response can extend.

    With ``shared`` (the account's budget in the database) every request
    also takes that budget's token, after this instance's own: the local
    bucket spaces this process's workers, the shared one keeps all instances
    together within the account's budget, and pauses reach every instance.
    """

    def __init__(
        self,
        requests_per_second: float,
        *,
        burst: int = 10,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        shared: SharedGate | None = None,
    ) -> None:
        if requests_per_second <= 0:
            raise ValueError(f"requests_per_second must be positive, got {requests_per_second}")
        self._rate = requests_per_second
        self._burst = float(burst)
        self._tokens = float(burst)
        self._clock = clock
        self._sleep = sleep
        self._updated = clock()
        self._paused_until = 0.0
        self._lock = threading.Lock()
        self._shared = shared
        self.pauses = 0
        self.budget_waited_s = 0.0
        """Seconds callers waited on the shared budget (beyond this instance's own pacing)."""

    def acquire(self) -> float:
        """Wait for the pause to end and a token to be free; returns the seconds waited."""
        waited = 0.0
        while True:
            with self._lock:
                now = self._clock()
                self._tokens = min(self._burst, self._tokens + (now - self._updated) * self._rate)
                self._updated = now
                delay = max(self._paused_until - now, 0.0)
                if delay == 0.0:
                    if self._tokens >= 1.0:
                        self._tokens -= 1.0
                        break
                    delay = (1.0 - self._tokens) / self._rate
            self._sleep(delay)
            waited += delay
        return waited + self._take_shared()

    def _take_shared(self) -> float:
        """Wait for a token of the shared budget, if there is one; the seconds waited."""
        if self._shared is None:
            return 0.0
        waited = 0.0
        while (delay := self._shared.take()) > 0.0:
            self._sleep(delay)
            waited += delay
        with self._lock:
            self.budget_waited_s += waited
        return waited

    def pause(self, seconds: float) -> None:
        """Hold every caller of ``acquire`` for ``seconds`` from now (never shortens a pause)."""
        with self._lock:
            until = self._clock() + seconds
            if until > self._paused_until:
                self._paused_until = until
                self.pauses += 1

    def observe(self, status: int, headers: Mapping[str, str]) -> None:
        """Read a response's rate-limit headers and pause everyone if the Hub asks.

        Everyone is every instance when the budget is shared; the Hub's
        ``RateLimit-Policy`` then also caps the shared rate.
        """
        seconds = pause_from_headers(status, headers)
        if seconds is not None and seconds > 0:
            self.pause(seconds)
            if self._shared is not None:
                self._shared.pause(seconds)
        if self._shared is not None:
            info = parse_ratelimit_headers(headers)
            if info is not None and info.limit is not None and info.window_seconds is not None:
                self._shared.follow_policy(info.limit, info.window_seconds)


ResponseObserver = Callable[[httpx2.Response], None]


def install(
    limiter: RateLimiter,
    *,
    timeout_s: float = 30.0,
    observers: tuple[ResponseObserver, ...] = (),
) -> None:
    """Make huggingface_hub's shared client go through ``limiter`` (process-wide).

    ``observers`` see every response (the metrics count them by status).
    """

    def before(request: httpx2.Request) -> None:
        limiter.acquire()
        hf_request_event_hook(request)

    def after(response: httpx2.Response) -> None:
        limiter.observe(response.status_code, response.headers)
        for observer in observers:
            observer(response)

    def factory() -> httpx2.Client:
        return httpx2.Client(
            event_hooks={"request": [before], "response": [after]},
            follow_redirects=True,
            timeout=httpx2.Timeout(timeout_s, connect=min(timeout_s, 10.0)),
        )

    set_client_factory(factory)


__all__ = [
    "MAX_PAUSE_S",
    "RateLimiter",
    "SharedGate",
    "install",
    "pause_from_headers",
    "retry_after_header",
]
