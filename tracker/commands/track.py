"""Start following a Hub model repo: record and publish its head (with --backfill, its whole
main history), each revision diffed against its parent on main, as the daemon does."""

from __future__ import annotations

import argparse
import sys

from tracker.settings import Settings

NAME = "track"
HELP = "follow a repo (and record its history with --backfill)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """REPO (any form ``repo_argument`` reads) and ``--backfill``."""
    parser.add_argument(
        "repo",
        metavar="REPO",
        help="model repo: ORG/NAME, a legacy id, hf://ORG/NAME or its page URL",
    )
    parser.add_argument(
        "--backfill",
        action="store_true",
        help="record and publish every revision of main, oldest first (default: only the head)",
    )


def run(args: argparse.Namespace, settings: Settings) -> int:
    """Record and publish the head (or all of main) against the Hub, committing each revision.

    Exit 0; a repo the Hub does not have, or bad input, exits 2.
    """
    from tracker.commands.backfill_progress import backfill_bar, repos
    from tracker.commands.common import open_storage, user_errors
    from tracker.commands.repo_arg import repo_argument
    from tracker.daemon import revision_publishers, utc_now
    from tracker.hub.client import Hub
    from tracker.hub.repo_id import validate_repo_id
    from tracker.hub.retry import INTERACTIVE, Retrying
    from tracker.revision.backfill import backfill

    with user_errors():
        repo_id = validate_repo_id(repo_argument(args.repo, settings)[0])
        with open_storage(settings) as database:
            hub = Hub.from_settings(settings.hub, Retrying(INTERACTIVE))
            # Without --backfill only the head is recorded (against its parent, read from the
            # Hub); the daemon's first check records the history before it.
            progress = backfill_bar(sys.stderr, repos_total=1) if args.backfill else None
            try:
                report = backfill(
                    database,
                    hub,
                    repo_id,
                    progress=progress,
                    newest_only=not args.backfill,
                    publish=revision_publishers(settings, utc_now),
                    clock=utc_now,
                )
                if progress is not None:
                    progress.set_description_str(repos(1, 1), refresh=False)
            finally:
                if progress is not None:
                    progress.close()
    print(
        f"{repo_id}: {report.recorded} new revisions recorded "
        f"({report.revisions} on main, {report.changes} changes, "
        f"{report.advisories} advisories published) in {report.seconds:.1f}s"
    )
    if report.off_main:
        print(f"{repo_id}: {len(report.off_main)} recorded revisions are no longer on main")
    return 0
