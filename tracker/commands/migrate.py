"""Bring the configured database to the schema this version needs.

Every command migrates on start, so this is for operators who upgrade a
shared PostgreSQL once before rolling out new instances.
"""

from __future__ import annotations

import argparse

from tracker.settings import Settings

NAME = "migrate"
HELP = "upgrade the database schema (every command also does this on start)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """No options: the database comes from the settings (``--config``, ``NEURARCH_*``)."""
    del parser  # no options: the database comes from the settings


def run(args: argparse.Namespace, settings: Settings) -> int:
    """Migrate the configured database (schema changes are committed) and print its revision."""
    from tracker.commands.common import open_storage, user_errors

    del args
    with user_errors(), open_storage(settings) as database:
        revision = database.schema_revision()
    print(f"{database.url}: schema at revision {revision}")
    return 0
