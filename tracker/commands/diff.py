"""Compare two recorded revisions of a repo by meaning, from storage alone (no Hub).

When OLD is the revision NEW was processed against (its recorded parent), the changes
stored for NEW are that comparison, computed once when NEW was recorded: they are
printed as they are, with nothing re-read or re-rendered. Any other pair is diffed
from the stored snapshots. OLD must not be newer than NEW: the arguments are refused
(exit 2) with the order that works, so a reversed diff never reads as the real one.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from tracker.commands import UsageError
from tracker.settings import Settings

if TYPE_CHECKING:  # imported when run, not when the parser is built
    from sqlalchemy.orm import Session

    from storage.records import Change, Revision

NAME = "diff"
HELP = "changes between two recorded revisions (OLD must not be newer than NEW)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("repo", metavar="REPO", help="model repo id, ORG/NAME")
    parser.add_argument("old", metavar="OLD", help="older revision (sha or unique prefix)")
    parser.add_argument("new", metavar="NEW", help="newer revision (sha or unique prefix)")
    parser.add_argument("--json", action="store_true", help="print JSON")


def run(args: argparse.Namespace, settings: Settings) -> int:
    from storage import changes_of, has_revision, revisions
    from tracker.commands.common import print_changes, print_json, resolve_sha, user_errors
    from tracker.commands.reading import open_for_reading
    from tracker.diff.common import change_json
    from tracker.repo_id import validate_repo_id

    with user_errors():
        repo_id = validate_repo_id(args.repo)
        with open_for_reading(settings) as database:
            old_sha = resolve_sha(database, repo_id, args.old)
            new_sha = resolve_sha(database, repo_id, args.new)
            with database.read_session() as session:
                recorded = {r.sha: r for r in revisions(session, repo_id, include_off_main=True)}
                old, new = recorded[old_sha], recorded[new_sha]
                _refuse_reversed(repo_id, old, new)
                parent = next((p for p in new.parents if has_revision(session, repo_id, p)), None)
                if parent == old_sha:
                    changes = changes_of(session, repo_id, new_sha)
                else:
                    changes = _recomputed(session, repo_id, old_sha, new_sha)
    if args.json:
        print_json(
            {
                "repo": repo_id,
                "old": old_sha,
                "new": new_sha,
                "changes": [change_json(c) for c in changes],
            }
        )
    else:
        print(f"{repo_id} {old_sha[:12]} -> {new_sha[:12]}: {len(changes)} changes")
        print_changes(changes)
    return 1 if changes else 0


def _refuse_reversed(repo_id: str, old: Revision, new: Revision) -> None:
    if old.date > new.date:
        raise UsageError(
            f"{repo_id}: OLD {old.sha[:12]} ({old.date:%Y-%m-%d %H:%M}) is newer than NEW "
            f"{new.sha[:12]} ({new.date:%Y-%m-%d %H:%M}); "
            f"run 'neurarch-trace diff {repo_id} {new.sha[:12]} {old.sha[:12]}'"
        )


def _recomputed(session: Session, repo_id: str, old_sha: str, new_sha: str) -> list[Change]:
    """The differs and the plan delta run again over two stored snapshots."""
    from storage import plan_at
    from tracker.backfill import stored_content
    from tracker.diff.common import by_severity
    from tracker.diff.plan_delta import diff_plans
    from tracker.diff.revision import diff_revisions

    old, new = stored_content(session, repo_id, old_sha), stored_content(session, repo_id, new_sha)
    plans = diff_plans(plan_at(session, repo_id, old_sha), plan_at(session, repo_id, new_sha))
    return list(by_severity(diff_revisions(old, new) + plans))
