"""One Hub request budget per account, shared by every instance through the database.

The Hub allows an account 1,000 to 10,000 API requests per 5-minute window
depending on its plan, whichever machine sends them. ``[daemon] hub_budget =
"1000/5m"`` names that budget once; each instance's pacer
(``tracker.hub.ratelimit.RateLimiter``) then takes every request's token from one
bucket row in storage (``tracker.hub.shared_budget``, ``storage.hub_budget``), so
two instances together stay within it instead of each dividing it by hand.
This module is the setting alone and imports no storage: the configuration
file is read by every command.

The bucket holds ``burst`` tokens and refills at ``(requests - burst) /
window``: any stretch of one window then holds at most ``burst + rate x
window = requests`` requests, so no fixed window the Hub counts can see more
than the budget. The Hub's own ``RateLimit-Policy`` (``q`` requests per ``w``
seconds) lowers the shared rate when it is below the configured one, and a
429 or ``RateLimit: r=0`` pauses every instance until the Hub's reset.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit

from tracker.errors import ConfigFileError

_BUDGET = re.compile(r"^\s*(?P<n>\d+)\s*/\s*(?P<w>\d+(?:\.\d+)?)?\s*(?P<unit>[smh])\s*$")
_UNITS: Final = {"s": 1.0, "m": 60.0, "h": 3600.0}
MAX_BURST: Final = 10
"""Tokens an idle instance may spend at once; more would bunch requests against the Hub."""


@dataclass(frozen=True)
class HubBudget:
    """``requests`` per ``window_s`` seconds for one account."""

    requests: int
    window_s: float

    @classmethod
    def parse(cls, value: object, where: str) -> HubBudget:
        """``"1000/5m"`` (also ``/300s``, ``/1h``); ConfigFileError naming ``where`` otherwise."""
        match = _BUDGET.match(value) if isinstance(value, str) else None
        if match is None:
            raise ConfigFileError(
                f'{where}: expected requests per window such as "1000/5m", got {value!r}'
            )
        requests = int(match["n"])
        window = float(match["w"] or 1) * _UNITS[match["unit"]]
        if requests < 2 or window <= 0:
            raise ConfigFileError(f"{where}: a budget is at least 2 requests per window: {value!r}")
        return cls(requests, window)

    @property
    def burst(self) -> int:
        """Tokens the bucket holds at most: a tenth of the window's requests, 1 to MAX_BURST."""
        return max(1, min(MAX_BURST, self.requests // 10))

    @property
    def rate(self) -> float:
        """Tokens per second, so that burst + rate x window is the budget."""
        return (self.requests - self.burst) / self.window_s

    def __str__(self) -> str:
        return f"{self.requests}/{self.window_s:g}s"


def budget_key(endpoint: str, token: str | None) -> str:
    """The bucket of an account on an endpoint; the token enters only as a digest."""
    host = urlsplit(endpoint).netloc or endpoint
    account = hashlib.sha256(token.encode()).hexdigest()[:16] if token else "anonymous"
    return f"{host}/api/{account}"


def schedule_lag(repos: int, interval_s: float, requests_per_check: float, rate: float) -> float:
    """Seconds one round of every repo's check runs past ``interval_s`` at ``rate`` requests
    per second (0.0 when the budget covers the interval)."""
    return max(repos * requests_per_check / rate - interval_s, 0.0)


__all__ = ["MAX_BURST", "HubBudget", "budget_key", "schedule_lag"]
