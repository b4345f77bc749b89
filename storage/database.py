"""Opening a database: URL checks, engine settings per backend, sessions and migrations.

SQLite is the embedded default: WAL so readers never wait for the writer,
foreign keys on, a busy timeout so a second writer waits instead of failing,
and ``BEGIN IMMEDIATE`` for write sessions, because a deferred transaction
that reads and then writes fails outright (no waiting) when another writer
committed in between. PostgreSQL is reached through psycopg 3; a plain
``postgresql://`` URL is read as ``postgresql+psycopg://``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import URL, Engine, create_engine, event, make_url, text
from sqlalchemy.exc import ArgumentError, DBAPIError, IntegrityError, OperationalError
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import ConnectionPoolEntry, StaticPool

from storage.errors import (
    DatabaseUnavailable,
    DatabaseURLError,
    IntegrityConflict,
    InvalidRecord,
    SchemaError,
    StorageError,
)
from storage.json_text import dumps, dumps_for_sqlite
from storage.summary_upkeep import refresh_stale_summaries
from storage.values import loads_storable

SQLITE_BUSY_TIMEOUT_MS = 15_000
POSTGRES_CONNECT_TIMEOUT_S = 10
_BEGIN_OPTION = "neurarch_sqlite_begin"


class Database:
    """An open database: an engine plus the session factory bound to it."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._sessions = sessionmaker(engine, expire_on_commit=False)
        event.listen(self._sessions, "before_commit", refresh_stale_summaries)

    @property
    def dialect(self) -> str:
        """``"sqlite"`` or ``"postgresql"``."""
        return self.engine.dialect.name

    @property
    def url(self) -> str:
        """The URL with any password masked, fit for logs and messages."""
        return self.engine.url.render_as_string(hide_password=True)

    @contextmanager
    def session(self) -> Iterator[Session]:
        """One write transaction: committed when the block ends, rolled back if it raises.

        Nothing of a block that raises is left in the database.
        """
        with self._transaction(self.engine) as session:
            yield session

    @contextmanager
    def read_session(self) -> Iterator[Session]:
        """A transaction for readers; on SQLite it does not take the write lock."""
        with self._transaction(self.engine.execution_options(**{_BEGIN_OPTION: "DEFERRED"})) as s:
            yield s

    @contextmanager
    def _transaction(self, bind: Engine) -> Iterator[Session]:
        session = self._sessions(bind=bind)
        try:
            with translate_errors(self), session.begin():
                yield session
        finally:
            session.close()

    def migrate(self, target: str = "head") -> None:
        """Bring the schema up to ``target`` (the newest revision by default)."""
        from storage.migrations import upgrade

        upgrade(self.engine, target)

    def downgrade(self, target: str = "base") -> None:
        """Take the schema down to ``target``; ``"base"`` drops every table."""
        from storage.migrations import downgrade

        downgrade(self.engine, target)

    def schema_revision(self) -> str | None:
        """The migration revision the database is at, or None for an empty database."""
        from storage.migrations import current_revision

        return current_revision(self.engine)

    def check_schema(self) -> None:
        """Refuse to run on a schema other than the one this code was written for."""
        from storage.migrations import current_revision, head_revision

        found, wanted = current_revision(self.engine), head_revision()
        if found != wanted:
            state = "has no schema yet" if found is None else f"is at schema revision {found}"
            raise SchemaError(
                f"the database at {self.url} {state}; this version needs {wanted}: "
                "run `neurarch-trace migrate`"
            )

    def close(self) -> None:
        """Close every pooled connection."""
        self.engine.dispose()


def open_database(url: str) -> Database:
    """Open (and for SQLite, create) the database named by ``url`` and check it answers."""
    parsed = normalise_url(url)
    engine = _sqlite_engine(parsed) if parsed.get_backend_name() == "sqlite" else _pg_engine(parsed)
    database = Database(engine)
    try:
        with engine.connect() as connection:
            connection.execute(text("SELECT 1"))
    except (OperationalError, DBAPIError) as exc:
        engine.dispose()
        raise DatabaseUnavailable(unreachable_message(parsed, exc)) from exc
    return database


def normalise_url(url: str) -> URL:
    """Parse ``url`` and pick our drivers: pysqlite for SQLite, psycopg 3 for PostgreSQL."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        # The text is not echoed: it may hold a password we cannot locate.
        raise DatabaseURLError(
            "the database URL is not a URL; expected sqlite:///PATH or "
            "postgresql://USER@HOST:PORT/NAME"
        ) from None
    backend = parsed.get_backend_name()
    if backend == "postgresql":
        return parsed.set(drivername="postgresql+psycopg")
    if backend == "sqlite":
        return parsed.set(drivername="sqlite+pysqlite")
    raise DatabaseURLError(
        f"database URL {parsed.render_as_string(hide_password=True)!r} names backend "
        f"{backend!r}; only sqlite and postgresql are supported"
    )


def unreachable_message(url: URL, exc: BaseException) -> str:
    """Say which database could not be reached and why, without the password."""
    reason = str(getattr(exc, "orig", exc)).strip().splitlines()[0] if str(exc) else type(exc)
    if url.password:
        reason = str(reason).replace(str(url.password), "***")
    if url.get_backend_name() == "sqlite":
        return f"cannot open SQLite database {url.database!r}: {reason}"
    where = f"{url.host or 'localhost'}:{url.port or 5432}"
    return (
        f"cannot reach PostgreSQL at {where} (database {url.database!r}, user "
        f"{url.username!r}): {reason}; check that the server runs and the URL is right"
    )


@contextmanager
def translate_errors(database: Database) -> Iterator[None]:
    """Turn driver errors escaping a transaction into StorageErrors; let ours pass."""
    try:
        yield
    except StorageError:
        raise
    except IntegrityError as exc:
        raise IntegrityConflict(f"write refused by the database: {_first_line(exc)}") from exc
    except OperationalError as exc:
        if exc.connection_invalidated or "connect" in str(exc.orig).lower():
            raise DatabaseUnavailable(unreachable_message(database.engine.url, exc)) from exc
        raise StorageError(f"database error at {database.url}: {_first_line(exc)}") from exc
    except DBAPIError as exc:
        raise InvalidRecord(f"the database refused a value: {_first_line(exc)}") from exc


def _sqlite_engine(url: URL) -> Engine:
    database = url.database or ""
    in_memory = database in ("", ":memory:") or database.startswith("file::memory:")
    if not in_memory:
        path = Path(database).expanduser()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise DatabaseUnavailable(
                f"cannot create the directory {str(path.parent)!r} for the SQLite database: "
                f"{exc.strerror}"
            ) from exc
        url = url.set(database=str(path))
    options: dict[str, Any] = {
        "connect_args": {"check_same_thread": False},
        "json_serializer": dumps_for_sqlite,  # storage.json_text: bare numbers as BLOBs
        "json_deserializer": loads_storable,  # storage.values: rows from before the repair
    }
    if in_memory:
        # One shared connection, or every session would see its own empty database.
        options["poolclass"] = StaticPool
    engine = create_engine(url, **options)
    event.listen(engine, "connect", _configure_sqlite_connection)
    event.listen(engine, "begin", _begin_sqlite_transaction)
    return engine


def _configure_sqlite_connection(dbapi_connection: Any, _record: ConnectionPoolEntry) -> None:
    # Take over transaction control from pysqlite so BEGIN can be IMMEDIATE.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    finally:
        cursor.close()


def _begin_sqlite_transaction(connection: Any) -> None:
    mode = connection.get_execution_options().get(_BEGIN_OPTION, "IMMEDIATE")
    connection.exec_driver_sql(f"BEGIN {mode}")


def _pg_engine(url: URL) -> Engine:
    return create_engine(
        url,
        pool_pre_ping=True,
        pool_size=5,
        max_overflow=10,
        pool_recycle=1800,
        connect_args={"connect_timeout": POSTGRES_CONNECT_TIMEOUT_S},
        json_serializer=dumps,  # storage.json_text: standard JSON, as SQLite gets it
        json_deserializer=loads_storable,  # storage.values: rows from before the repair
    )


def _first_line(exc: DBAPIError) -> str:
    return str(exc.orig).strip().splitlines()[0] if exc.orig is not None else str(exc)
