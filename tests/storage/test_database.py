"""Opening databases: drivers picked, SQLite set up for one writer, errors a user can act on."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text

from storage import DatabaseUnavailable, DatabaseURLError, SchemaError, open_database
from storage.database import normalise_url


def test_plain_postgresql_url_uses_psycopg_3() -> None:
    url = normalise_url("postgresql://app:pw@db.example:5433/trace")
    assert url.drivername == "postgresql+psycopg"
    assert (url.host, url.port, url.database) == ("db.example", 5433, "trace")


def test_unsupported_backend_is_named() -> None:
    with pytest.raises(DatabaseURLError, match="'mysql'"):
        normalise_url("mysql://root@localhost/db")


def test_garbage_url_is_refused_without_echoing_the_password() -> None:
    with pytest.raises(DatabaseURLError) as caught:
        normalise_url("not a url with user:hunter2@host")
    assert "hunter2" not in str(caught.value)


def test_unreachable_postgresql_names_the_host_never_the_password() -> None:
    # Port 1 on loopback refuses at once: nothing listens there.
    with pytest.raises(DatabaseUnavailable) as caught:
        open_database("postgresql://trace:s3cret-pass@127.0.0.1:1/trace")
    message = str(caught.value)
    assert "127.0.0.1:1" in message
    assert "s3cret-pass" not in message


def test_sqlite_file_gets_its_directory_wal_and_foreign_keys(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "trace.db"
    db = open_database(f"sqlite:///{path}")
    try:
        with db.engine.connect() as connection:
            assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert connection.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
            assert connection.exec_driver_sql("PRAGMA busy_timeout").scalar() == 15000
        assert path.is_file()
    finally:
        db.close()


def test_sqlite_directory_that_cannot_be_created_is_a_named_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(DatabaseUnavailable, match="cannot create the directory"):
        open_database(f"sqlite:///{blocker / 'sub' / 'trace.db'}")


def test_session_commits_and_read_session_sees_it(database_url: str) -> None:
    db = open_database(database_url)
    try:
        with db.session() as session:
            session.execute(text("CREATE TABLE probe (n INTEGER)"))
            session.execute(text("INSERT INTO probe VALUES (7)"))
        with db.read_session() as session:
            assert session.execute(text("SELECT n FROM probe")).scalar() == 7
    finally:
        db.close()


def test_an_unmigrated_database_is_refused_with_the_command_to_run(database_url: str) -> None:
    db = open_database(database_url)
    try:
        with pytest.raises(SchemaError, match=r"has no schema yet.*neurarch-trace migrate"):
            db.check_schema()
        db.migrate()
        db.check_schema()
    finally:
        db.close()


@pytest.mark.postgres
def test_a_dropped_connection_is_named_and_the_pool_recovers(postgres_schema_url: str) -> None:
    db = open_database(postgres_schema_url)
    try:
        with pytest.raises(DatabaseUnavailable, match=r"127\.0\.0\.1"), db.session() as session:
            session.execute(text("SELECT pg_terminate_backend(pg_backend_pid())"))
        with db.read_session() as session:
            assert session.execute(text("SELECT 1")).scalar() == 1
    finally:
        db.close()
