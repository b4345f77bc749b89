"""Show the recorded revisions of a repo, newest first (as ``git log``), with their changes."""

from __future__ import annotations

import argparse

from tracker.settings import Settings

NAME = "history"
HELP = "list a repo's recorded revisions, newest first, and their changes"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("repo", metavar="REPO", help="model repo id, ORG/NAME")
    parser.add_argument("--json", action="store_true", help="print JSON (newest first)")


def run(args: argparse.Namespace, settings: Settings) -> int:
    # Storage only: the changes were computed when each revision was processed.
    from storage import changes_of, revision_log
    from tracker.commands.common import print_changes, print_json, user_errors
    from tracker.commands.reading import open_for_reading
    from tracker.diff.common import change_json
    from tracker.errors import NotTracked
    from tracker.repo_id import validate_repo_id

    with user_errors():
        repo_id = validate_repo_id(args.repo)
        with open_for_reading(settings) as database, database.read_session() as session:
            log = revision_log(session, repo_id)  # newest first
            if not log:
                raise NotTracked(f"{repo_id}: no revisions recorded; run 'neurarch-trace track'")
            entries = [
                (stored, changes_of(session, repo_id, stored.revision.sha)) for stored in log
            ]
    if args.json:
        print_json(
            [
                {
                    "sha": stored.revision.sha,
                    "date": stored.revision.date.isoformat(),
                    "title": stored.revision.title,
                    "author": stored.revision.author,
                    "on_main": stored.on_main,
                    "changes": [change_json(c) for c in changes],
                }
                for stored, changes in entries
            ]
        )
        return 0
    for stored, changes in entries:
        revision = stored.revision
        flag = "" if stored.on_main else " (no longer on main)"
        print(f"{revision.sha[:12]} {revision.date:%Y-%m-%d} {revision.title}{flag}")
        print_changes(changes)
    return 0
