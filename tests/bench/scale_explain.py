"""EXPLAIN ANALYZE of every published read, as storage issues it, on a loaded PostgreSQL database.

The statements are not rewritten here: each storage call runs once with a
listener that records the SQL and parameters the driver receives, and each
recorded SELECT is then explained with those same parameters. What it
prints per read: the plan's node types top-down (scans name their index or table)
and the execution time.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from itertools import islice
from typing import Any

from sqlalchemy import event
from sqlalchemy.orm import Session

from storage import Database, Severity
from storage.advisory_refs import RefQuery, advisory_refs_for_many
from storage.dumps import advisories_by_id, modified_batches
from storage.publishing import advisories_for, log_version, model_page, model_summaries

_NODE = re.compile(
    r"^\s*(?:->\s+)?([A-Z][A-Za-z ]*?)(?: (?:using|on) (\w+))?(?: on \w+(?: \w+)?)?  \("
)


def explain_all(
    database: Database, repo_id: str, org: str, commit: str, batch_repos: list[str]
) -> Iterator[str]:
    """One line per published read: its name, plan shape and execution time."""
    with database.read_session() as session:
        cursor = advisories_for(session, limit=50).next_cursor
    reads: list[tuple[str, Callable[[Session], object]]] = [
        ("/v1/query by package", lambda s: advisories_for(s, repo_id=repo_id, limit=1000)),
        ("/v1/query by commit", lambda s: advisories_for(s, commit=commit, limit=1000)),
        ("/feeds/all.atom newest 50", lambda s: advisories_for(s, limit=50)),
        ("global page 2 (cursor)", lambda s: advisories_for(s, cursor=cursor, limit=50)),
        ("org feed newest 50", lambda s: advisories_for(s, org=org, limit=50)),
        (
            "critical-only feed",
            lambda s: advisories_for(s, min_severity=Severity.CRITICAL, limit=50),
        ),
        (
            "/v1/querybatch 1,000 repos",
            lambda s: advisory_refs_for_many(s, [RefQuery(r) for r in batch_repos], 1000),
        ),
        ("all.zip batch (keyset)", lambda s: next(advisories_by_id(s, batch=500))),
        ("modified_id.csv batch", lambda s: list(islice(modified_batches(s), 2))),
        ("log version (cache key)", log_version),
        ("index page 1 (101 repos)", lambda s: model_summaries(s, limit=101)),
        (
            "index page after repo_id",
            lambda s: model_summaries(s, after=repo_id, limit=101),
        ),
        ("model page (history, siblings)", lambda s: model_page(s, repo_id)),
    ]
    for name, read in reads:
        with database.read_session() as session, _recorded(session) as statements:
            read(session)
        for index, (statement, parameters) in enumerate(statements):
            label = name if len(statements) == 1 else f"{name} [{index + 1}]"
            yield _explained(database, label, statement, parameters)


@contextmanager
def _recorded(session: Session) -> Iterator[list[tuple[str, Any]]]:
    engine = session.get_bind()
    statements: list[tuple[str, Any]] = []

    def record(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        if statement.lstrip().upper().startswith("SELECT"):
            statements.append((statement, parameters))

    event.listen(engine, "before_cursor_execute", record)
    try:
        yield statements
    finally:
        event.remove(engine, "before_cursor_execute", record)


def _explained(database: Database, label: str, statement: str, parameters: Any) -> str:
    raw = database.engine.raw_connection()
    try:
        cursor = raw.cursor()
        cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + statement, parameters)
        plan = [row[0] for row in cursor.fetchall()]
        raw.rollback()
    finally:
        raw.close()
    nodes = []
    for line in plan:
        match = _NODE.match(line)
        if match:
            node, index = match.groups()
            nodes.append(f"{node.strip()}({index})" if index else node.strip())
    took = next(
        (line.split(":")[1].strip() for line in plan if line.startswith("Execution Time")), "?"
    )
    return f"{label:30s} {took:>12s}  {' > '.join(nodes)}"


__all__ = ["explain_all"]
