"""Storage for the commands that only read (``history``, ``diff``): light first, then the ORM.

Importing SQLAlchemy and the models costs more than such a command may take in all, so
``storage.light_reads`` answers first, over the DB-API, whenever it can be sure: a
database that exists at the schema this code ships. Anything else (a new database, one an
older version wrote, a URL or server it cannot use, a diff that must be computed again
from the stored snapshots) goes the ORM way, which brings the schema to the current
revision first and reports every error as it always has. There alembic runs only when
``storage.schema_version`` says the database is behind: asking alembic costs about half a
second of imports.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from tracker.commands.common import user_errors
from tracker.settings import Settings

if TYPE_CHECKING:
    from storage import Database

T = TypeVar("T")


def read_history(settings: Settings, repo: str) -> list[dict[str, Any]]:
    """``history``'s document for ``repo``; our errors as UsageError."""
    from storage.light_reads import light_reader
    from tracker.reads.documents import history_document, history_from

    with user_errors(), light_reader(settings.storage.database_url) as reader:
        if reader is not None:
            return history_from(reader, repo)
    return read_storage(settings, history_document, repo)


def read_diff(settings: Settings, repo: str, old: str, new: str) -> dict[str, Any]:
    """``diff``'s document for ``repo`` from ``old`` to ``new``; our errors as UsageError."""
    from storage.light_reads import light_reader
    from tracker.reads.documents import diff_document, diff_from

    document = None
    with user_errors(), light_reader(settings.storage.database_url) as reader:
        document = None if reader is None else diff_from(reader, repo, old, new, None)
    if document is not None:
        return document
    return read_storage(settings, diff_document, repo, old, new)


@contextmanager
def open_for_reading(settings: Settings) -> Iterator[Database]:
    """The configured database at the current schema, closed when the block ends."""
    from storage import open_database
    from storage.schema_version import is_current

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


__all__ = ["open_for_reading", "read_diff", "read_history", "read_storage"]
