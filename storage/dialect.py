"""The few statements that differ between SQLite and PostgreSQL, written once.

Both backends speak ``INSERT ... ON CONFLICT DO NOTHING``; it is what makes
concurrent writers of the same key (two instances storing one blob, a webhook
redelivered) safe without catching integrity errors mid-transaction.

Statements that name only tables and columns run through ``execute_core``: the
session's connection, with none of the ORM's per-statement machinery (its
execution context, bulk-insert planning), which cost more CPU than the
statement itself on SQLite.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any, cast

from sqlalchemy import CursorResult, Executable, Insert, Table
from sqlalchemy.orm import Session

from storage.models import Base


def execute_core(
    session: Session,
    statement: Executable,
    parameters: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None,
) -> CursorResult[Any]:
    """Run a Core ``statement`` on the session's connection, in its transaction.

    What the session holds unflushed is flushed first, as ``Session.execute`` would
    (a row inserted here may name one added through the ORM).
    """
    session.flush()
    return session.connection().execute(statement, parameters)


def table_of(model: type[Base]) -> Table:
    """The Core table of ``model``, for statements ``execute_core`` runs."""
    return cast(Table, model.__table__)


def insert_ignoring_duplicates(
    session: Session,
    model: type[Base],
    values: Mapping[str, Any],
    conflict_columns: Sequence[str],
) -> bool:
    """Insert one row unless a row with the same ``conflict_columns`` exists; True if inserted."""
    # RETURNING, not rowcount: rowcount of an ignored conflict differs between drivers.
    statement = _insert_or_skip(
        _dialect(session), table_of(model), tuple(conflict_columns), conflict_columns[0]
    )
    return execute_core(session, statement, dict(values)).first() is not None


def insert_many_ignoring_duplicates(
    session: Session,
    model: type[Base],
    rows: Sequence[Mapping[str, Any]],
    conflict_columns: Sequence[str],
) -> None:
    """Insert each of ``rows`` unless a row with its ``conflict_columns`` exists: one
    executemany (batched by the driver), not one statement per row."""
    if not rows:
        return
    statement = _insert_or_skip(_dialect(session), table_of(model), tuple(conflict_columns), None)
    execute_core(session, statement, [dict(row) for row in rows])


def insert_returning_id(
    session: Session,
    model: type[Base],
    values: Mapping[str, Any],
    conflict_columns: Sequence[str],
) -> int | None:
    """Insert one row unless it exists; its new ``id``, or None if it was already there."""
    statement = _insert_or_skip(_dialect(session), table_of(model), tuple(conflict_columns), "id")
    new_id = execute_core(session, statement, dict(values)).scalar_one_or_none()
    return None if new_id is None else int(new_id)


@cache
def _insert_or_skip(
    dialect: str, table: Table, conflict_columns: tuple[str, ...], returning: str | None
) -> Insert:
    """``INSERT ... ON CONFLICT DO NOTHING [RETURNING returning]``, built once per table:
    each row binds its values to it."""
    statement = dialect_insert(dialect, table).on_conflict_do_nothing(
        index_elements=list(conflict_columns)
    )
    return statement if returning is None else statement.returning(table.c[returning])  # type: ignore[no-any-return]


def _dialect(session: Session) -> str:
    return session.get_bind().dialect.name


def dialect_insert(dialect: str, table: Any) -> Any:
    """The ``insert(table)`` of the backend named ``dialect``, the one that speaks
    ``ON CONFLICT``."""
    # Imported on first use: the PostgreSQL dialect costs ~0.1 s that a SQLite read never needs.
    module: Any = importlib.import_module(
        "sqlalchemy.dialects.postgresql"
        if dialect == "postgresql"
        else "sqlalchemy.dialects.sqlite"
    )
    return module.insert(table)


def upsert(
    session: Session,
    model: type[Base],
    values: Mapping[str, Any],
    conflict_columns: Sequence[str],
) -> None:
    """Insert one row, or overwrite the other columns of the row with the same key."""
    statement = _upsert(_dialect(session), table_of(model), tuple(values), tuple(conflict_columns))
    execute_core(session, statement, dict(values))


@cache
def _upsert(
    dialect: str, table: Table, columns: tuple[str, ...], conflict_columns: tuple[str, ...]
) -> Insert:
    """``upsert``'s statement for one set of columns, built once: each row binds its values."""
    statement = dialect_insert(dialect, table)
    changed = {k: statement.excluded[k] for k in columns if k not in conflict_columns}
    return statement.on_conflict_do_update(  # type: ignore[no-any-return]
        index_elements=list(conflict_columns), set_=changed
    )
