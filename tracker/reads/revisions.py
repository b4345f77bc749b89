"""Naming a recorded revision the way a person types it: a sha, a unique prefix, or ``main``."""

from __future__ import annotations

from collections.abc import Sequence

from storage import RepoId, StoredRevision
from tracker.errors import NotTracked

MAIN = "main"


def resolve_sha(log: Sequence[StoredRevision], repo_id: RepoId, prefix: str) -> str:
    """The revision of ``log`` (``repo_id``'s, newest first) named by its sha, a unique
    prefix of it, or ``main``.

    ``main`` is the branch the tracker follows: its newest recorded revision,
    the one on main that no other recorded revision on main has as parent.
    """
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


__all__ = ["MAIN", "resolve_sha"]
