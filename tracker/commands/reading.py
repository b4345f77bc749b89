"""Storage for the commands that only read (``history``, ``diff``): opened, migrated if behind.

Every command brings the schema to the current revision on start. Asking alembic costs
about half a second of imports per call, which for a reading command is most of its run,
so ``storage.schema_version`` is asked first and alembic runs only when the database
is not already at the head this code ships (a new database, or one an older version
wrote).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from storage import Database, open_database
from storage.schema_version import is_current
from tracker.commands.common import user_errors
from tracker.settings import Settings

T = TypeVar("T")


@contextmanager
def open_for_reading(settings: Settings) -> Iterator[Database]:
    """The configured database at the current schema, closed when the block ends."""
    if settings.storage.database_url.startswith("sqlite:///"):
        settings.storage.data_dir.mkdir(parents=True, exist_ok=True)
    database = open_database(settings.storage.database_url)
    try:
        if not is_current(database.engine):
            database.migrate()
        yield database
    finally:
        database.close()


def read_storage(settings: Settings, build: Callable[..., T], *args: str) -> T:
    """``build(database, *args)`` over the configured database; our errors as UsageError."""
    with user_errors(), open_for_reading(settings) as database:
        return build(database, *args)


__all__ = ["open_for_reading", "read_storage"]
