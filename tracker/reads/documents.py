"""What ``history`` and ``diff`` print, as one JSON document each, read from storage.

The document is the command's ``--json`` output, and its text output is rendered from it
(``tracker.commands.render``). The same builder answers both when the command reads the
database itself and when a running daemon answers for it
(``tracker.reads.local_daemon``), so the two ways print the same bytes by construction.
``answer`` is what the daemon mounts: a read by name, its error as the line the command
would print.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from storage import Change, RepoId, StoredRevision
from tracker.errors import UsageError

if TYPE_CHECKING:  # imported when a document is built, not when a command module loads
    from sqlalchemy.orm import Session

    from storage import Database
    from storage.records import Revision

Recompute = Callable[[RepoId, str, str], list[Change]]
"""Diffs two stored revisions again (``_recomputed`` over a session)."""


class HistoryReads(Protocol):
    """The two reads the documents need: ``storage.light_reads.LightReader`` answers them
    over the DB-API, ``SessionReads`` over an ORM session."""

    def revision_log(self, repo_id: RepoId) -> list[StoredRevision]:
        """Every recorded revision, newest first."""
        ...

    def changes_of(self, repo_id: RepoId, sha: str) -> list[Change]:
        """The changes recorded for ``sha`` against its parent, in order."""
        ...


@dataclass(frozen=True)
class SessionReads:
    """``HistoryReads`` through storage's queries in one ORM session."""

    session: Session

    def revision_log(self, repo_id: RepoId) -> list[StoredRevision]:
        """``storage.revision_log`` in this session."""
        from storage import revision_log

        return revision_log(self.session, repo_id)

    def changes_of(self, repo_id: RepoId, sha: str) -> list[Change]:
        """``storage.changes_of`` in this session."""
        from storage import changes_of

        return changes_of(self.session, repo_id, sha)


def history_document(database: Database, text: str) -> list[dict[str, Any]]:
    """``history_from`` over ``database``, in one read transaction."""
    with database.read_session() as session:
        return history_from(SessionReads(session), text)


def history_from(reads: HistoryReads, text: str) -> list[dict[str, Any]]:
    """Every recorded revision of the repo ``text`` names, newest first, with its stored changes.

    ``text`` comes as typed (the CLI, the daemon's read API), so it is checked here.
    """
    # Storage only: the changes were computed when each revision was processed.
    from tracker.diff.common import change_json
    from tracker.errors import NotTracked
    from tracker.hub.repo_id import validate_repo_id

    repo_id = validate_repo_id(text)
    log = reads.revision_log(repo_id)  # newest first
    if not log:
        raise NotTracked(f"{repo_id}: no revisions recorded; run 'neurarch-trace track'")
    return [
        {
            "sha": stored.revision.sha,
            "date": stored.revision.date.isoformat(),
            "title": stored.revision.title,
            "author": stored.revision.author,
            "on_main": stored.on_main,
            "changes": [change_json(c) for c in reads.changes_of(repo_id, stored.revision.sha)],
        }
        for stored in log
    ]


def diff_document(database: Database, text: str, old: str, new: str) -> dict[str, Any]:
    """``diff_from`` over ``database``, in one read transaction, any pair diffed."""
    with database.read_session() as session:

        def recompute(repo_id: RepoId, old_sha: str, new_sha: str) -> list[Change]:
            return _recomputed(session, repo_id, old_sha, new_sha)

        document = diff_from(SessionReads(session), text, old, new, recompute)
    assert document is not None  # only a call without ``recompute`` stops short
    return document


def diff_from(
    reads: HistoryReads, text: str, old: str, new: str, recompute: Recompute | None
) -> dict[str, Any] | None:
    """The changes from revision ``old`` to ``new`` (shas or unique prefixes).

    When ``old`` is the recorded parent of ``new``, these are the changes stored for
    ``new``; any other pair is diffed again from the stored snapshots by ``recompute``,
    and without one (a reader with no snapshots) the answer is None.
    """
    from tracker.diff.common import change_json
    from tracker.hub.repo_id import validate_repo_id
    from tracker.reads.revisions import resolve_sha

    repo_id = validate_repo_id(text)
    log = reads.revision_log(repo_id)
    old_sha = resolve_sha(log, repo_id, old)
    new_sha = resolve_sha(log, repo_id, new)
    recorded = {stored.revision.sha: stored.revision for stored in log}
    _refuse_reversed(repo_id, recorded[old_sha], recorded[new_sha])
    parent = next((p for p in recorded[new_sha].parents if p in recorded), None)
    if parent == old_sha:
        changes = reads.changes_of(repo_id, new_sha)
    elif recompute is None:
        return None
    else:
        changes = recompute(repo_id, old_sha, new_sha)
    return {
        "repo": repo_id,
        "old": old_sha,
        "new": new_sha,
        "changes": [change_json(c) for c in changes],
    }


def _refuse_reversed(repo_id: RepoId, old: Revision, new: Revision) -> None:
    if old.date > new.date:
        raise UsageError(
            f"{repo_id}: OLD {old.sha[:12]} ({old.date:%Y-%m-%d %H:%M}) is newer than NEW "
            f"{new.sha[:12]} ({new.date:%Y-%m-%d %H:%M}); "
            f"run 'neurarch-trace diff {repo_id} {new.sha[:12]} {old.sha[:12]}'"
        )


def _recomputed(session: Session, repo_id: RepoId, old_sha: str, new_sha: str) -> list[Change]:
    """The differs and the plan delta run again over two stored snapshots."""
    from estimator.deltas import stored_plan
    from storage import plan_at
    from tracker.diff.common import by_severity
    from tracker.diff.plan_delta import diff_plans
    from tracker.diff.revision import diff_revisions
    from tracker.revision.backfill import stored_content

    old, new = stored_content(session, repo_id, old_sha), stored_content(session, repo_id, new_sha)
    old_plan, new_plan = (stored_plan(plan_at(session, repo_id, sha)) for sha in (old_sha, new_sha))
    plans = diff_plans(old_plan, new_plan)
    return list(by_severity(diff_revisions(old, new) + plans))


READS: Mapping[str, tuple[tuple[str, ...], Callable[..., Any]]] = {
    "history": (("repo",), history_document),
    "diff": (("repo", "old", "new"), diff_document),
}
"""The reads a daemon answers for the CLI: name -> (its parameters in order, its builder)."""


def answer(database: Database, name: str, params: Mapping[str, str]) -> tuple[int, Any]:
    """(HTTP status, body) of the read ``name``: 200 and its document; 404 for a read this
    code does not know or parameters it lacks; 422 and ``{"error": line}`` for what the
    command would refuse, with the line it would print."""
    from storage import StorageError
    from tracker.errors import TrackerError

    keys, build = READS.get(name, ((), None))
    if build is None or any(key not in params for key in keys):
        return 404, {"error": f"no read {name!r} with parameters {sorted(params)}"}
    try:
        return 200, build(database, *(params[key] for key in keys))
    except (TrackerError, StorageError) as exc:
        return 422, {"error": str(exc)}


__all__ = [
    "READS",
    "HistoryReads",
    "SessionReads",
    "answer",
    "diff_document",
    "diff_from",
    "history_document",
    "history_from",
]
