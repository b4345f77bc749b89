"""What the track/history/diff/untrack commands share: opening storage, errors, rendering."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from storage import Database, StorageError, open_database, revision_log
from tracker.commands import UsageError
from tracker.errors import NotTracked, TrackerError
from tracker.settings import Settings


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
    if settings.storage.database_url.startswith("sqlite:///"):
        settings.storage.data_dir.mkdir(parents=True, exist_ok=True)
    database = open_database(settings.storage.database_url)
    try:
        database.migrate()
        yield database
    finally:
        database.close()


MAIN = "main"


def resolve_sha(database: Database, repo_id: str, prefix: str) -> str:
    """A recorded revision of ``repo_id`` named by its sha, a unique prefix of it, or ``main``.

    ``main`` is the branch the tracker follows: its newest recorded revision,
    the one on main that no other recorded revision on main has as parent.
    """
    with database.read_session() as session:
        log = revision_log(session, repo_id)
    shas = [stored.revision.sha for stored in log]
    if not shas:
        raise NotTracked(f"{repo_id}: no revisions recorded; run 'neurarch-trace track {repo_id}'")
    if prefix == MAIN:
        on_main = [stored.revision for stored in log if stored.on_main]
        parents = {parent for revision in on_main for parent in revision.parents}
        heads = [revision.sha for revision in on_main if revision.sha not in parents]
        if heads:
            return heads[0]  # the log is newest first
        raise NotTracked(f"{repo_id}: no recorded revision is on main")
    matches = [s for s in shas if s.startswith(prefix.lower())]
    if len(matches) != 1:
        found = "no" if not matches else f"{len(matches)}"
        raise NotTracked(f"{repo_id}: {found} recorded revisions match {prefix!r}")
    return matches[0]


def print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False, default=str))


__all__ = [
    "open_storage",
    "print_json",
    "resolve_sha",
    "user_errors",
]
