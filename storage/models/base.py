"""Declarative base and the column types that behave the same on SQLite and PostgreSQL.

Why custom types: SQLite has no time zones. ``UTCDateTime`` stores UTC and
always hands back an aware UTC datetime, so a value read back compares equal
to the value written on either backend. ``Json`` is PostgreSQL's ``json``,
not ``jsonb``, on purpose: jsonb reorders object keys, and the order of a
manifest's tensors or a plan's cards is part of what the tracker recorded.
Nothing queries inside these columns, so jsonb's indexing would buy nothing.
``StorableText`` holds text quoted from upstream whatever characters it has.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, DateTime, MetaData, Text
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase
from sqlalchemy.types import TypeDecorator, TypeEngine

from storage.values import storable_text

# Deterministic constraint names, so migrations can name what they drop on both backends.
NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

Json: TypeEngine[Any] = JSON()
"""A JSON column that keeps key order on both backends."""


class StorableText(TypeDecorator[str]):
    """Text that quotes upstream (a commit title, a path, a message): NUL and lone surrogates
    are written, and read back from older rows, as U+FFFD (``storage.values``), so one hostile
    character can neither fail a write nor a reader."""

    impl = Text
    cache_ok = True

    def process_bind_param(self, value: str | None, dialect: Dialect) -> str | None:
        """Repair the text on its way in, so a hostile character cannot fail the write."""
        return None if value is None else storable_text(value)

    def process_result_value(self, value: str | None, dialect: Dialect) -> str | None:
        """Repair the text on its way out, for rows written before writes were repaired."""
        return None if value is None else storable_text(value)


class UTCDateTime(TypeDecorator[datetime]):
    """An aware datetime stored as UTC; naive datetimes are refused rather than guessed."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        """Store UTC (naive on SQLite); raises ValueError for a naive datetime rather than guess
        its zone."""
        if value is None:
            return None
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError(f"naive datetime {value.isoformat()} has no time zone; pass UTC")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        """Hand back an aware UTC datetime whichever backend stored it."""
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


class Base(DeclarativeBase):
    """Base of every table; its metadata is what the migrations must equal."""

    metadata = MetaData(naming_convention=NAMING_CONVENTION)
