"""One Hub request budget per account, shared by every instance through the database.

The Hub allows an account 1,000 to 10,000 API requests per 5-minute window
depending on its plan, whichever machine sends them. ``[daemon] hub_budget =
"1000/5m"`` names that budget once; each instance's pacer
(``tracker.ratelimit.RateLimiter``) then takes every request's token from one
bucket row in storage (``storage.hub_budget``), so two instances together
stay within it instead of each dividing it by hand.

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
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit

from storage import Database
from storage.hub_budget import BudgetState, budget_state, configure_budget, pause_budget, take_token
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


class SharedBudget:
    """The pacer's view of the bucket: take a token, pause everyone, lower the rate."""

    def __init__(
        self,
        database: Database,
        key: str,
        budget: HubBudget,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.database = database
        self.key = key
        self.budget = budget
        self._clock = clock
        self._policy: tuple[int, int] | None = None
        with database.session() as session:
            configure_budget(session, key, capacity=budget.burst, rate=budget.rate, now=clock())

    def take(self) -> float:
        """0.0 when a token was taken, else the seconds to wait before asking again."""
        with self.database.session() as session:
            return take_token(session, self.key, self._clock())

    def pause(self, seconds: float) -> None:
        with self.database.session() as session:
            pause_budget(session, self.key, self._clock() + seconds)

    def follow_policy(self, requests: int, window_s: int) -> None:
        """The Hub's ``RateLimit-Policy``: lower the shared rate if it allows less."""
        if self._policy == (requests, window_s) or requests < 2 or window_s <= 0:
            return
        self._policy = (requests, window_s)
        stated = HubBudget(requests, float(window_s))
        if stated.rate >= self.budget.rate:
            return
        with self.database.session() as session:
            configure_budget(
                session,
                self.key,
                capacity=min(stated.burst, self.budget.burst),
                rate=stated.rate,
                now=self._clock(),
                only_lower=True,
            )

    def state(self) -> BudgetState | None:
        with self.database.read_session() as session:
            return budget_state(session, self.key, self._clock())


def schedule_lag(repos: int, interval_s: float, requests_per_check: float, rate: float) -> float:
    """Seconds one round of every repo's check runs past ``interval_s`` at ``rate`` requests
    per second (0.0 when the budget covers the interval)."""
    return max(repos * requests_per_check / rate - interval_s, 0.0)


__all__ = ["MAX_BURST", "HubBudget", "SharedBudget", "budget_key", "schedule_lag"]
