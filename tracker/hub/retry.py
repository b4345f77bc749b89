"""Per-request retries for the Hub reads of a check, so a transient fault costs one request.

Every read the tracker sends to the Hub (head probe, file list, commit pages,
text bodies, safetensors ranges) is idempotent, so a check does not fail on
one transient answer: ``Retrying.call`` runs the request again after an
exponential backoff with full jitter (a uniform draw in ``[0, min(cap, base *
2**n))``), waits at least what a 429's ``Retry-After`` or ``RateLimit`` header
asks, and stops after ``attempts`` tries or when the next wait would pass the
request's ``total_s`` budget. Then the last error goes up, carrying a note
("gave up after 4 tries in 1.9 s") that ``tracker.hub.translate.translate_hub_errors``
puts in its one-line message, and the worker's own per-repo backoff takes over.

This is the only retry layer over the Hub: ``tracker.hub.client`` sends its requests
through huggingface_hub's session without the library's ``http_backoff``, and
``tracker.hub.plan_source`` asks for file metadata with ``retry_on_errors=False``
(the library's default there). Discovery's ``list_models`` walk is the exception:
huggingface_hub pages it through its own ``http_backoff`` (``utils/_pagination.py``)
with no way around it, so no ``Retrying`` is stacked on it. A command a person waits
on (``plan``, ``track``, ``audit``) uses ``INTERACTIVE``, 15 s at most; the daemon the
default, a minute per request.

huggingface_hub's own ``http_backoff`` (2.5.0, ``utils/_http.py``) cannot stand in
for this, because it

- retries one raw ``(method, url)`` request it sends itself: ``HfApi.model_info``
  and ``list_models`` (the probe, the file list, discovery) do not go through it,
  and a body read or checked after it returns (a streamed text, its content key)
  is outside it, so a body cut short or corrupted is never tried again;
- waits a fixed ``1, 2, 4, 8`` s with no jitter, so workers that failed together
  retry together, and has no bound on a request's total time;
- sleeps with ``time.sleep`` and reads no clock we pass in, so tests cannot run
  its waits on a fake clock;
- adds no note saying how many tries were made before it gave up.

What counts as transient is the library's: its ``_DEFAULT_RETRY_ON_STATUS_CODES``
and ``_DEFAULT_RETRY_ON_EXCEPTIONS``, plus our ``HubUnavailable`` raised for a body
that came back short or not matching its content key. A 4xx other than 408 and
429 (not found, gated, disabled, bad request) is an answer, never retried.

The pause a 429 imposes on the whole process is the rate limiter's
(``tracker.hub.ratelimit``, which sees every response): each retry goes through the
same client hooks, so it also waits for a pause another thread's 429 started.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from huggingface_hub.errors import HfHubHTTPError
from huggingface_hub.utils._http import (
    _DEFAULT_RETRY_ON_EXCEPTIONS,
    _DEFAULT_RETRY_ON_STATUS_CODES,
)

from tracker.errors import HubUnavailable
from tracker.hub.ratelimit import pause_from_headers, retry_after_header

T = TypeVar("T")

RETRY_STATUSES = frozenset(_DEFAULT_RETRY_ON_STATUS_CODES)
"""408, 429 and the 5xx a gateway answers with (huggingface_hub 2.5.0, utils/_http.py)."""
RETRY_EXCEPTIONS: tuple[type[Exception], ...] = _DEFAULT_RETRY_ON_EXCEPTIONS
"""Timeouts, network errors (a reset) and protocol errors (a body cut short), as the
library retries them (huggingface_hub 2.5.0, utils/_http.py)."""


@dataclass(frozen=True)
class RetryPolicy:
    """How hard one request is tried before its check gives up on it."""

    attempts: int = 6
    """Tries in all: huggingface_hub's ``http_backoff`` makes 1 + max_retries (5)."""
    base_s: float = 0.25
    """The first backoff window; each retry doubles it."""
    cap_s: float = 8.0
    """The largest backoff window (huggingface_hub's ``max_wait_time``, 8 s)."""
    total_s: float = 60.0
    """Time one request may take with all its tries and waits."""

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError(f"attempts must be at least 1, got {self.attempts}")
        if self.base_s < 0 or self.cap_s < 0 or self.total_s <= 0:
            raise ValueError("base_s and cap_s must not be negative and total_s must be positive")


NO_RETRIES = RetryPolicy(attempts=1)
INTERACTIVE = RetryPolicy(attempts=4, total_s=15.0)
"""What a command a person waits on spends on one request: 4 tries, at most 15 s of waiting."""


def retry_after(exc: BaseException) -> float | None:
    """Seconds a 429 (or a 503 with Retry-After) asks the client to wait, if it says."""
    response = exc.response if isinstance(exc, HfHubHTTPError) else None
    if response is None:
        return None
    if response.status_code == 429:
        return pause_from_headers(429, response.headers)
    return retry_after_header(response.headers)


def is_transient(exc: BaseException) -> bool:
    """True for an error that another try of the same request may not meet."""
    if isinstance(exc, (HubUnavailable, *RETRY_EXCEPTIONS)):
        return True
    if isinstance(exc, HfHubHTTPError) and exc.response is not None:
        return exc.response.status_code in RETRY_STATUSES
    return False


def gave_up(attempts: int, seconds: float) -> str:
    """The note a request's last error carries when the policy stops trying."""
    tries = "1 try" if attempts == 1 else f"{attempts} tries"
    return f"gave up after {tries} in {seconds:.1f} s"


class Retrying:
    """Runs one request with the policy's retries; shareable between threads."""

    def __init__(
        self,
        policy: RetryPolicy | None = None,
        *,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
    ) -> None:
        self.policy = policy or RetryPolicy()
        self._sleep = sleep
        self._clock = clock
        self._rng = rng or random.Random()
        self._lock = threading.Lock()
        self.retries = 0
        """Retries made so far, over every call (for tests and figures)."""

    def call(self, request: Callable[[], T]) -> T:
        """``request()``, tried again on a transient error while the policy allows."""
        started = self._clock()
        for attempt in range(1, self.policy.attempts + 1):
            try:
                return request()
            except Exception as exc:
                if not is_transient(exc):
                    raise
                delay = self._delay(attempt, exc)
                if attempt == self.policy.attempts or (
                    self._clock() - started + delay > self.policy.total_s
                ):
                    if attempt > 1:
                        exc.add_note(gave_up(attempt, self._clock() - started))
                    raise
            with self._lock:
                self.retries += 1
            self._sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover

    def _delay(self, attempt: int, exc: BaseException) -> float:
        window = min(self.policy.cap_s, self.policy.base_s * 2 ** (attempt - 1))
        with self._lock:
            jitter = self._rng.uniform(0.0, window)
        asked = retry_after(exc)
        return jitter if asked is None else max(asked, jitter)


__all__ = [
    "INTERACTIVE",
    "NO_RETRIES",
    "RETRY_EXCEPTIONS",
    "RETRY_STATUSES",
    "RetryPolicy",
    "Retrying",
    "gave_up",
    "is_transient",
    "retry_after",
]
