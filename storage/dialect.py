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
    statement = _on_conflict_do_nothing(session, model, values, conflict_columns)
    # RETURNING, not rowcount: rowcount of an ignored conflict differs between drivers.
    key = model.__table__.c[conflict_columns[0]]
    return execute_core(session, statement.returning(key)).first() is not None


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
    statement = _dialect_insert(session, model).on_conflict_do_nothing(
        index_elements=list(conflict_columns)
    )
    execute_core(session, statement, [dict(row) for row in rows])


def insert_returning_id(
    session: Session,
    model: type[Base],
    values: Mapping[str, Any],
    conflict_columns: Sequence[str],
) -> int | None:
    """Insert one row unless it exists; its new ``id``, or None if it was already there."""
    statement = _on_conflict_do_nothing(session, model, values, conflict_columns)
    new_id = execute_core(session, statement.returning(model.__table__.c.id)).scalar_one_or_none()
    return None if new_id is None else int(new_id)


def _on_conflict_do_nothing(
    session: Session,
    model: type[Base],
    values: Mapping[str, Any],
    conflict_columns: Sequence[str],
) -> Insert:
    statement = _dialect_insert(session, model).values(dict(values))
    return statement.on_conflict_do_nothing(index_elements=list(conflict_columns))  # type: ignore[no-any-return]


def _dialect_insert(session: Session, model: type[Base]) -> Any:
    """The backend's own ``insert(model)``, the one that speaks ``ON CONFLICT``."""
    return dialect_insert(session.get_bind().dialect.name, model.__table__)


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
    statement = _dialect_insert(session, model).values(dict(values))
    changed = {k: statement.excluded[k] for k in values if k not in conflict_columns}
    execute_core(
        session,
        statement.on_conflict_do_update(index_elements=list(conflict_columns), set_=changed),
    )
