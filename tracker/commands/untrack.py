"""Stop following a repo; its recorded history stays for feeds and advisories."""

from __future__ import annotations

import argparse

from tracker.settings import Settings

NAME = "untrack"
HELP = "stop following a repo (history is kept)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """REPO, in any form ``repo_argument`` reads, resolved only in ``run``."""
    parser.add_argument("repo", metavar="REPO", help="model repo id, ORG/NAME")


def run(args: argparse.Namespace, settings: Settings) -> int:
    """Mark the repo untracked (commits), keeping its history; exit 2 when it was not tracked."""
    from storage import untrack
    from tracker.commands.common import open_storage, user_errors
    from tracker.commands.repo_arg import repo_argument
    from tracker.errors import NotTracked
    from tracker.hub.repo_id import validate_repo_id

    with user_errors():
        repo_id = validate_repo_id(repo_argument(args.repo, settings)[0])
        with open_storage(settings) as database:
            with database.session() as session:
                was_tracked = untrack(session, repo_id)
            if not was_tracked:
                raise NotTracked(f"{repo_id} is not being tracked")
    print(f"{repo_id}: no longer tracked (its history is kept)")
    return 0
