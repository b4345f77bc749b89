"""A repo's revision log and stored changes read over the DB-API alone, without SQLAlchemy.

Importing SQLAlchemy and the models takes longer than a reading command may take in all
(tracker/README.md, Reading commands), so ``history`` and ``diff`` read through this
module when it can answer: ``sqlite3`` for a ``sqlite:///PATH`` URL, psycopg for a
``postgresql://`` (or ``postgresql+psycopg://``) one. It answers the same records
``storage.history``'s ``revision_log`` and ``changes_of`` hand back, with the same
repairs on the way out (``storage.values``), and raises the same errors.

``light_reader`` yields None whenever it cannot be sure: a URL of another shape, a
missing SQLite file, a server it cannot reach, a schema other than the head this code
ships (``storage.schema_version``). A driver error while reading (a lock held past the
busy timeout, a dropped connection) ends the ``with`` block without an answer. Either
way the caller takes the ORM path, which opens, migrates and reports exactly as before,
so every error a person sees is that path's.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, Protocol

from storage.errors import RepoNotFound, RevisionNotFound
from storage.records import Change, Revision, Severity, StoredRevision
from storage.repo_ids import RepoId
from storage.schema_version import shipped_head
from storage.values import loads_storable, storable_text

SQLITE_PREFIXES: Final = ("sqlite:///", "sqlite+pysqlite:///")
POSTGRES_PREFIXES: Final = ("postgresql://", "postgresql+psycopg://")
CONNECT_TIMEOUT_S: Final = 10
BUSY_TIMEOUT_MS: Final = 15_000

_LOG = (
    "SELECT sha, parents, date, title, author, processed_at, on_main, off_main_since"
    " FROM revisions WHERE repo_pk = ? ORDER BY position DESC, id DESC"
)
"""Main's order, as ``storage.history.NEWEST_FIRST`` gives it on each backend."""
_CHANGES = (
    "SELECT artifact, path, kind, old, new, severity, message"
    " FROM changes WHERE revision_pk = ? ORDER BY ordinal"
)


class _Cursor(Protocol):
    def execute(self, query: str, params: Sequence[Any] = ...) -> Any: ...
    def fetchall(self) -> list[Any]: ...


class LightReader:
    """Reads of one open DB-API connection, inside one read transaction."""

    def __init__(self, cursor: _Cursor, marker: str, json_value: Callable[[Any], Any]) -> None:
        self._cursor = cursor
        self._marker = marker  # the driver's parameter placeholder
        self._json = json_value

    def revision_log(self, repo_id: RepoId) -> list[StoredRevision]:
        """Every recorded revision, newest first (``storage.revision_log``)."""
        rows = self._rows(_LOG, self._repo_pk(repo_id))
        return [
            StoredRevision(
                revision=Revision(
                    repo_id=repo_id,
                    sha=sha,
                    parents=tuple(self._json(parents)),
                    date=_utc(date),
                    title=storable_text(title),
                    author=None if author is None else storable_text(author),
                ),
                processed_at=_utc(processed_at),
                on_main=bool(on_main),
                off_main_since=None if off_main_since is None else _utc(off_main_since),
            )
            for sha, parents, date, title, author, processed_at, on_main, off_main_since in rows
        ]

    def changes_of(self, repo_id: RepoId, sha: str) -> list[Change]:
        """The changes recorded for ``sha``, in order (``storage.changes_of``)."""
        found = self._rows(
            "SELECT id FROM revisions WHERE repo_pk = ? AND sha = ?", self._repo_pk(repo_id), sha
        )
        if not found:
            raise RevisionNotFound(f"{repo_id} has no recorded revision {sha}")
        return [
            Change(
                artifact=artifact,
                path=storable_text(path),
                kind=kind,
                old=self._json(old),
                new=self._json(new),
                severity=Severity(severity),
                message=storable_text(message),
            )
            for artifact, path, kind, old, new, severity, message in self._rows(
                _CHANGES, found[0][0]
            )
        ]

    def _repo_pk(self, repo_id: RepoId) -> int:
        rows = self._rows("SELECT id FROM repos WHERE repo_id = ?", repo_id)
        if not rows:
            raise RepoNotFound(f"repo {repo_id!r} is not tracked; track it first")
        return int(rows[0][0])

    def _rows(self, query: str, *params: Any) -> list[Any]:
        self._cursor.execute(query.replace("?", self._marker), params)
        return self._cursor.fetchall()


@contextmanager
def light_reader(url: str) -> Iterator[LightReader | None]:
    """A reader of the database at ``url`` when it can answer for sure, else None; a driver
    error inside the block ends it quietly, with no answer (see above)."""
    if url.startswith(SQLITE_PREFIXES):
        with _sqlite_reader(url.split(":///", 1)[1]) as reader:
            yield reader
    elif url.startswith(POSTGRES_PREFIXES):
        with _postgres_reader("postgresql://" + url.split("://", 1)[1]) as reader:
            yield reader
    else:
        yield None


@contextmanager
def _sqlite_reader(database: str) -> Iterator[LightReader | None]:
    import sqlite3

    # What SQLAlchemy would read differently from the plain path (a query string, an
    # escape, an in-memory database) is left to it.
    path = Path(database).expanduser()
    if not database or any(c in database for c in "?%") or not path.is_file():
        yield None
        return
    try:
        connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    except sqlite3.Error:
        yield None
        return
    try:
        cursor = connection.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            cursor.execute("BEGIN DEFERRED")  # one snapshot for every read, no write lock
            current = _at_head(cursor)
        except sqlite3.Error:
            current = False
        with contextlib.suppress(sqlite3.Error):
            yield LightReader(cursor, "?", _sqlite_json) if current else None
    finally:
        connection.close()


@contextmanager
def _postgres_reader(conninfo: str) -> Iterator[LightReader | None]:
    try:
        import psycopg
        from psycopg.types.json import set_json_loads
    except ImportError:
        yield None
        return
    try:
        connection = psycopg.connect(conninfo, connect_timeout=CONNECT_TIMEOUT_S)
    except (psycopg.Error, ValueError):
        yield None
        return
    try:
        connection.read_only = True
        set_json_loads(loads_storable, connection)  # as the engine's json_deserializer
        cursor = connection.cursor()
        try:
            current = _at_head(cursor)
        except psycopg.Error:
            current = False
        with contextlib.suppress(psycopg.Error):
            yield LightReader(cursor, "%s", _parsed) if current else None
    finally:
        connection.close()


def _at_head(cursor: _Cursor) -> bool:
    """True only if ``alembic_version`` holds exactly the head this code ships."""
    head = shipped_head()
    cursor.execute("SELECT version_num FROM alembic_version")
    rows = cursor.fetchall()
    return head is not None and len(rows) == 1 and rows[0][0] == head


def _utc(value: datetime | str) -> datetime:
    """``UTCDateTime``'s reading: SQLite hands back its naive UTC text, PostgreSQL an aware value."""
    moment = datetime.fromisoformat(value) if isinstance(value, str) else value
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _sqlite_json(value: Any) -> Any:
    """A JSON column's value from SQLite's text (or BLOB for a bare number, see
    ``storage.json_text``), read as the engine's ``json_deserializer`` reads it."""
    return None if value is None else loads_storable(value)


def _parsed(value: Any) -> Any:
    """psycopg's JSON value: already read by ``loads_storable`` (``set_json_loads``)."""
    return value


__all__ = ["LightReader", "light_reader"]
