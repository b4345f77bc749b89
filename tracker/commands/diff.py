"""Compare two recorded revisions of a repo by meaning, from storage alone (no Hub).

When OLD is the revision NEW was processed against (its recorded parent), the changes
stored for NEW are that comparison, computed once when NEW was recorded: they are
printed as they are, with nothing re-read or re-rendered. Any other pair is diffed
from the stored snapshots. OLD must not be newer than NEW: the arguments are refused
(exit 2) with the order that works, so a reversed diff never reads as the real one.
"""

from __future__ import annotations

import argparse

from tracker.settings import Settings

NAME = "diff"
HELP = "changes between two recorded revisions (OLD must not be newer than NEW)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """REPO, OLD and NEW (each a sha, a unique prefix or main), resolved only in ``run``."""
    parser.add_argument(
        "repo",
        metavar="REPO",
        help="model repo: ORG/NAME, a legacy id, hf://ORG/NAME or its page URL",
    )
    parser.add_argument("old", metavar="OLD", help="older revision (sha, unique prefix or main)")
    parser.add_argument(
        "new",
        metavar="NEW",
        help="newer revision (sha, unique prefix or main: the newest recorded)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON")


def run(args: argparse.Namespace, settings: Settings) -> int:
    """Exit 1 when the revisions differ, 0 when they do not, as diff(1) does.

    Asks a daemon on this host, else reads storage; the Hub only to resolve a legacy id.
    """
    from tracker.commands.render import diff_text, json_text
    from tracker.commands.repo_arg import repo_argument
    from tracker.reads.local_daemon import ask

    repo, _ = repo_argument(args.repo, settings)
    document = ask(settings, NAME, {"repo": repo, "old": args.old, "new": args.new})
    if document is None:  # no daemon here answers: read storage
        from tracker.commands.reading import read_diff

        document = read_diff(settings, repo, args.old, args.new)
    print(json_text(document) if args.json else diff_text(document), end="")
    return 1 if document["changes"] else 0
