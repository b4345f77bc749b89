"""Show the recorded revisions of a repo, newest first (as ``git log``), with their changes."""

from __future__ import annotations

import argparse

from tracker.settings import Settings

NAME = "history"
HELP = "list a repo's recorded revisions, newest first, and their changes"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """REPO (any form ``repo_argument`` reads) and ``--json``, resolved only in ``run``."""
    parser.add_argument(
        "repo",
        metavar="REPO",
        help="model repo: ORG/NAME, a legacy id, hf://ORG/NAME or its page URL",
    )
    parser.add_argument("--json", action="store_true", help="print JSON (newest first)")


def run(args: argparse.Namespace, settings: Settings) -> int:
    """Exit 0; asks a daemon on this host, else reads storage (the Hub only for a legacy id)."""
    from tracker.commands.render import history_text, json_text
    from tracker.commands.repo_arg import repo_argument
    from tracker.reads.local_daemon import ask

    repo, _ = repo_argument(args.repo, settings)
    entries = ask(settings, NAME, {"repo": repo})
    if entries is None:  # no daemon here answers: read storage
        from tracker.commands.reading import read_history

        entries = read_history(settings, repo)
    print(json_text(entries) if args.json else history_text(entries), end="")
    return 0
