"""The local database as a read-only lookup: used when it exists, never created or migrated.

``plan`` and ``audit`` look there first (a recorded revision needs no Hub
request; recorded advisories need no server) but must work on a machine that
never ran ``track``: a missing SQLite file, an unreachable server or a schema
of another version means "no local database", not an error.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from storage import Database, StorageError, open_database

SQLITE_PREFIX = "sqlite:///"


@contextmanager
def existing_database(url: str) -> Iterator[Database | None]:
    """The database at ``url`` when it exists at the current schema, else None; closed after."""
    if url.startswith(SQLITE_PREFIX) and not Path(url.removeprefix(SQLITE_PREFIX)).is_file():
        yield None
        return
    try:
        database = open_database(url)
    except StorageError:
        yield None
        return
    try:
        try:
            database.check_schema()
        except StorageError:
            yield None
        else:
            yield database
    finally:
        database.close()


__all__ = ["existing_database"]
