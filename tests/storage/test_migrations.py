"""Migrations: upgrading an empty database yields exactly the models; downgrade undoes it."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect

from storage import open_database
from storage.migrations import head_revision
from storage.models import Base

MODEL_TABLES = set(Base.metadata.tables)


def _diffs(url: str) -> list[object]:
    db = open_database(url)
    try:
        with db.engine.connect() as connection:
            context = MigrationContext.configure(connection, opts={"compare_type": True})
            return list(compare_metadata(context, Base.metadata))
    finally:
        db.close()


def test_upgrade_from_empty_equals_the_models(database_url: str) -> None:
    db = open_database(database_url)
    try:
        assert db.schema_revision() is None
        db.migrate()
        assert db.schema_revision() == head_revision()
        assert set(inspect(db.engine).get_table_names()) == MODEL_TABLES | {"alembic_version"}
    finally:
        db.close()
    assert _diffs(database_url) == []


def test_downgrade_to_base_leaves_no_tables_and_upgrade_works_again(database_url: str) -> None:
    db = open_database(database_url)
    try:
        db.migrate()
        db.downgrade("base")
        assert set(inspect(db.engine).get_table_names()) <= {"alembic_version"}
        assert db.schema_revision() is None
        db.migrate()
        assert db.schema_revision() == head_revision()
    finally:
        db.close()
    assert _diffs(database_url) == []


def test_migrating_twice_is_harmless(database_url: str) -> None:
    db = open_database(database_url)
    try:
        db.migrate()
        db.migrate()
        assert db.schema_revision() == head_revision()
    finally:
        db.close()
