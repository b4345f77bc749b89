"""Alembic migrations shipped inside the package, driven through alembic's Python API.

No alembic.ini is needed at run time: the script location is this directory,
and the connection is handed to ``env.py`` through ``Config.attributes``. On
PostgreSQL a transaction-scoped advisory lock serialises instances that start
at the same time and all try to migrate.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine, text
from sqlalchemy.exc import SQLAlchemyError

from storage.errors import SchemaError

SCRIPT_LOCATION = Path(__file__).resolve().parent
# Any fixed 64-bit number; it only has to be the same for every instance.
_MIGRATION_LOCK_ID = 0x6E61_7472_6D69_6772


def alembic_config(connection: Connection | None = None) -> Config:
    """An alembic Config pointing at the migrations in this package."""
    config = Config()
    config.set_main_option("script_location", str(SCRIPT_LOCATION))
    config.attributes["connection"] = connection
    return config


def head_revision() -> str:
    """The newest migration revision this code ships."""
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    if head is None:
        raise SchemaError("no migrations are shipped with this installation")
    return head


def upgrade(engine: Engine, target: str = "head") -> None:
    """Run every migration up to ``target`` in one transaction."""
    _run(engine, "upgrade", target)


def downgrade(engine: Engine, target: str = "base") -> None:
    """Undo migrations down to ``target`` in one transaction."""
    _run(engine, "downgrade", target)


def current_revision(engine: Engine) -> str | None:
    """The revision recorded in the database's alembic_version table, if any."""
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def _run(engine: Engine, direction: str, target: str) -> None:
    try:
        with engine.begin() as connection:
            if connection.dialect.name == "postgresql":
                connection.execute(text("SELECT pg_advisory_xact_lock(:id)"), {"id": _LOCK})
            step = command.upgrade if direction == "upgrade" else command.downgrade
            step(alembic_config(connection), target)
    except SQLAlchemyError as exc:
        raise SchemaError(
            f"{direction} to {target!r} failed on {engine.url.render_as_string()}: "
            f"{str(exc).splitlines()[0]}"
        ) from exc


_LOCK = _MIGRATION_LOCK_ID - (1 << 63) if _MIGRATION_LOCK_ID >= 1 << 63 else _MIGRATION_LOCK_ID
