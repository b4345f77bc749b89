"""The Hub request budget every instance draws from: one token bucket row per account and endpoint.

Times are epoch seconds as floats, not datetimes: the bucket's arithmetic
(refill = elapsed x rate) runs inside one UPDATE on both backends, and plain
numbers are what SQLite and PostgreSQL subtract and multiply alike.
"""

from __future__ import annotations

from sqlalchemy import Float, String
from sqlalchemy.orm import Mapped, mapped_column

from storage.models.base import Base

BUDGET_KEY_LENGTH = 200


class HubBudgetRow(Base):
    """One token bucket shared by every instance spending one Hub account on one endpoint."""

    __tablename__ = "hub_budget"

    key: Mapped[str] = mapped_column(String(BUDGET_KEY_LENGTH), primary_key=True)
    capacity: Mapped[float] = mapped_column(Float)
    rate: Mapped[float] = mapped_column(Float)
    """Tokens added per second."""
    tokens: Mapped[float] = mapped_column(Float)
    updated_at: Mapped[float] = mapped_column(Float)
    """When ``tokens`` was last refilled (epoch seconds)."""
    paused_until: Mapped[float] = mapped_column(Float, default=0.0)
    """No token is handed out before this (epoch seconds): the Hub's 429 or an empty RateLimit."""
