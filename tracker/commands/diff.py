"""Compare two recorded revisions of a repo by meaning, from storage alone (no Hub)."""

from __future__ import annotations

import argparse

from tracker.settings import Settings

NAME = "diff"
HELP = "changes between two recorded revisions"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("repo", metavar="REPO", help="model repo id, ORG/NAME")
    parser.add_argument("old", metavar="OLD", help="older revision (sha or unique prefix)")
    parser.add_argument("new", metavar="NEW", help="newer revision (sha or unique prefix)")
    parser.add_argument("--json", action="store_true", help="print JSON")


def run(args: argparse.Namespace, settings: Settings) -> int:
    from storage import plan_at
    from tracker.backfill import stored_content
    from tracker.commands.common import (
        open_storage,
        print_changes,
        print_json,
        resolve_sha,
        user_errors,
    )
    from tracker.diff.common import by_severity, change_json
    from tracker.diff.plan_delta import diff_plans
    from tracker.diff.revision import diff_revisions
    from tracker.repo_id import validate_repo_id

    with user_errors():
        repo_id = validate_repo_id(args.repo)
        with open_storage(settings) as database:
            old_sha = resolve_sha(database, repo_id, args.old)
            new_sha = resolve_sha(database, repo_id, args.new)
            with database.read_session() as session:
                old, new = (
                    stored_content(session, repo_id, old_sha),
                    stored_content(session, repo_id, new_sha),
                )
                plans = diff_plans(
                    plan_at(session, repo_id, old_sha), plan_at(session, repo_id, new_sha)
                )
                changes = by_severity(diff_revisions(old, new) + plans)
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
