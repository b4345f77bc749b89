"""A token bucket in the database: one Hub request budget shared by every instance.

The Hub counts an account's requests per fixed 5-minute window, whichever
instance sends them, so the budget lives where every instance already meets:
one row per account and endpoint (``key``). Taking a token is one ``UPDATE``
that refills the bucket for the time elapsed, checks it holds a whole token
and no pause is in force, and takes it, all in the statement: on PostgreSQL a
concurrent taker waits for the row lock and then re-reads the row it updates
(READ COMMITTED's re-check of the ``WHERE``), and on SQLite write sessions
begin IMMEDIATE, so two instances never spend the same token. A pause (a 429,
or ``RateLimit`` saying nothing remains) is a time on the row that every
instance honours.

Times are the callers' wall clocks in epoch seconds; an instance whose clock
is behind the row's never refills it backwards.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import ColumnElement, case, select, update
from sqlalchemy.orm import Session

from storage.dialect import insert_ignoring_duplicates
from storage.errors import InvalidRecord, NotFound
from storage.models import HubBudgetRow
from storage.models.budget import BUDGET_KEY_LENGTH


@dataclass(frozen=True)
class BudgetState:
    """A bucket as of ``now``: its tokens refilled to then, and its pause."""

    key: str
    capacity: float
    rate: float
    tokens: float
    paused_until: float

    def wait(self, now: float) -> float:
        """Seconds from ``now`` until a token may be taken (0 when one may be now)."""
        short = 0.0 if self.tokens >= 1.0 else (1.0 - self.tokens) / self.rate
        return max(self.paused_until - now, short, 0.0)


def configure_budget(
    session: Session,
    key: str,
    *,
    capacity: float,
    rate: float,
    now: float,
    only_lower: bool = False,
) -> None:
    """Create the bucket ``key`` full, or set its capacity and rate (tokens capped to it).

    ``only_lower`` changes an existing bucket only where the new rate is lower:
    what the Hub's own ``RateLimit-Policy`` may do to a configured budget.
    """
    _check(key, capacity, rate)
    values = {
        "key": key,
        "capacity": capacity,
        "rate": rate,
        "tokens": capacity,
        "updated_at": now,
        "paused_until": 0.0,
    }
    if insert_ignoring_duplicates(session, HubBudgetRow, values, ["key"]):
        return
    grown = _refilled(now)
    statement = update(HubBudgetRow).where(HubBudgetRow.key == key)
    if only_lower:
        statement = statement.where(HubBudgetRow.rate > rate)
    session.execute(
        statement.values(
            capacity=capacity,
            rate=rate,
            tokens=case((grown > capacity, capacity), else_=grown),
            updated_at=_later(now),
        )
    )


def take_token(session: Session, key: str, now: float) -> float:
    """Take one token from bucket ``key``: 0.0 when taken, else the seconds to wait first.

    Commit the session to spend it. NotFound if the bucket was never configured.
    """
    grown = _refilled(now)
    taken = session.execute(
        update(HubBudgetRow)
        .where(HubBudgetRow.key == key, grown >= 1.0, HubBudgetRow.paused_until <= now)
        .values(tokens=grown - 1.0, updated_at=_later(now))
        .returning(HubBudgetRow.tokens)
        .execution_options(synchronize_session=False)
    ).first()
    if taken is not None:
        return 0.0
    state = budget_state(session, key, now)
    if state is None:
        raise NotFound(f"no Hub budget {key!r} is configured; start the daemon to create it")
    # A token appeared between the statements (another instance reconfigured): try again soon.
    return max(state.wait(now), 0.001)


def pause_budget(session: Session, key: str, until: float) -> None:
    """Hand out no token of bucket ``key`` before ``until`` (never shortens a pause)."""
    session.execute(
        update(HubBudgetRow)
        .where(HubBudgetRow.key == key, HubBudgetRow.paused_until < until)
        .values(paused_until=until)
        .execution_options(synchronize_session=False)
    )


def budget_state(session: Session, key: str, now: float) -> BudgetState | None:
    """Bucket ``key`` as of ``now`` (None if it was never configured); changes nothing."""
    row = session.scalars(select(HubBudgetRow).where(HubBudgetRow.key == key)).first()
    if row is None:
        return None
    elapsed = max(now - row.updated_at, 0.0)
    return BudgetState(
        key=row.key,
        capacity=row.capacity,
        rate=row.rate,
        tokens=min(row.capacity, row.tokens + elapsed * row.rate),
        paused_until=row.paused_until,
    )


def _refilled(now: float) -> ColumnElement[float]:
    """The row's tokens refilled to ``now``, capped at its capacity, as SQL."""
    elapsed = case((HubBudgetRow.updated_at < now, now - HubBudgetRow.updated_at), else_=0.0)
    grown = HubBudgetRow.tokens + elapsed * HubBudgetRow.rate
    return case((grown > HubBudgetRow.capacity, HubBudgetRow.capacity), else_=grown)


def _later(now: float) -> ColumnElement[float]:
    return case((HubBudgetRow.updated_at < now, now), else_=HubBudgetRow.updated_at)


def _check(key: str, capacity: float, rate: float) -> None:
    if not key or len(key) > BUDGET_KEY_LENGTH:
        raise InvalidRecord(f"a Hub budget key is 1 to {BUDGET_KEY_LENGTH} characters: {key!r}")
    if capacity < 1.0:
        raise InvalidRecord(f"a Hub budget holds at least one request, got capacity {capacity}")
    if rate <= 0.0:
        raise InvalidRecord(f"a Hub budget refills at a positive rate, got {rate}")


__all__ = ["BudgetState", "budget_state", "configure_budget", "pause_budget", "take_token"]
