"""Whether a database is at the schema this code ships, answered without importing alembic.

Commands that only read (``history``, ``diff``) would spend most of their start-up
importing alembic (with mako and pygments) just to learn that nothing needs migrating.
``is_current`` reads the ``alembic_version`` table with one query and the shipped head
from the version files' own ``revision`` / ``down_revision`` lines; when it cannot tell
(no table, a merge revision, files it cannot read) it says False and the caller migrates
through alembic, so a wrong answer can only cost time, never skip a migration.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the shipped head is read without SQLAlchemy (storage.light_reads asks it)
    from sqlalchemy import Engine

VERSIONS = Path(__file__).resolve().parent / "migrations" / "versions"
_REVISION = re.compile(r"^revision\s*(?::\s*str\s*)?=\s*[\"']([^\"']+)[\"']", re.MULTILINE)
_DOWN = re.compile(r"^down_revision\b[^=]*=\s*(?P<value>.+)$", re.MULTILINE)
_QUOTED = re.compile(r"^[\"']([^\"']+)[\"']$")


def shipped_head() -> str | None:
    """The newest migration revision in the version files, or None if that is not plain."""
    revisions: set[str] = set()
    parents: set[str] = set()
    try:
        sources = [path.read_text("utf-8") for path in VERSIONS.glob("*.py")]
    except OSError:
        return None
    for source in sources:
        revision, down = _REVISION.search(source), _DOWN.search(source)
        if revision is None or down is None:
            continue
        revisions.add(revision[1])
        value = down["value"].strip()
        if value == "None":
            continue
        parent = _QUOTED.match(value)
        if parent is None:  # a merge (tuple) or something computed: let alembic decide
            return None
        parents.add(parent[1])
    heads = revisions - parents
    return heads.pop() if len(heads) == 1 else None


def recorded_revision(engine: Engine) -> str | None:
    """The revision in ``alembic_version``, or None when there is none (or several)."""
    from sqlalchemy import text
    from sqlalchemy.exc import SQLAlchemyError

    try:
        with engine.connect() as connection:
            rows = connection.execute(text("SELECT version_num FROM alembic_version")).all()
    except SQLAlchemyError:
        return None
    return str(rows[0][0]) if len(rows) == 1 else None


def is_current(engine: Engine) -> bool:
    """True only if the database records exactly the head revision this code ships."""
    head = shipped_head()
    return head is not None and recorded_revision(engine) == head


__all__ = ["is_current", "recorded_revision", "shipped_head"]
