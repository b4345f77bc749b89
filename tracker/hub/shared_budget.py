"""The account's Hub budget as a bucket row every instance's pacer draws from.

``tracker.hub.budget`` says how the budget is set and why the bucket's rate
keeps every window within it; this is its storage side, what
``tracker.hub.ratelimit.RateLimiter`` calls as its ``SharedGate``.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from storage import Database
from storage.hub_budget import BudgetState, budget_state, configure_budget, pause_budget, take_token
from tracker.hub.budget import HubBudget


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
        """Pause the shared budget for every instance until ``seconds`` from now (commits)."""
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
        """The budget row as stored now, None before any instance took a token."""
        with self.database.read_session() as session:
            return budget_state(session, self.key, self._clock())


__all__ = ["SharedBudget"]
