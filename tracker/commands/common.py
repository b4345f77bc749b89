"""What the track/history/diff/untrack commands share: opening storage, errors, rendering."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from storage import StorageError
from tracker.errors import TrackerError, UsageError
from tracker.settings import Settings

if TYPE_CHECKING:  # SQLAlchemy is loaded by the commands that open storage, when they do
    from storage import Database


@contextmanager
def user_errors() -> Iterator[None]:
    """Our rooms' errors as UsageError, so the CLI prints one line and exits 2."""
    try:
        yield
    except (TrackerError, StorageError) as exc:
        raise UsageError(str(exc)) from exc


@contextmanager
def open_storage(settings: Settings) -> Iterator[Database]:
    """The configured database, migrated to the current schema, closed when the block ends."""
    from storage import open_database

    if settings.storage.database_url.startswith("sqlite:///"):
        settings.storage.data_dir.mkdir(parents=True, exist_ok=True)
    database = open_database(settings.storage.database_url)
    try:
        database.migrate()
        yield database
    finally:
        database.close()


def print_json(value: Any) -> None:
    """Indented JSON on stdout, non-ASCII kept; values JSON lacks (dates) as their ``str``."""
    print(json.dumps(value, indent=2, ensure_ascii=False, default=str))


__all__ = [
    "open_storage",
    "print_json",
    "user_errors",
]
