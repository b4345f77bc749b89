"""Stop a subscription's alerts; what it already delivered (its outbox) stays on record."""

from __future__ import annotations

import argparse

from tracker.errors import UsageError
from tracker.settings import Settings

NAME = "unsubscribe"
HELP = "stop a subscription (its delivery history is kept)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """NAME of an active subscription (``neurarch-trace subscriptions`` lists them)."""
    parser.add_argument("name", metavar="NAME", help="the subscription's name")


def run(args: argparse.Namespace, settings: Settings) -> int:
    """Deactivate the subscription (commits); exit 2 when no active one has that name."""
    from tracker.alerts.registry import remove
    from tracker.commands.common import open_storage, user_errors

    with user_errors(), open_storage(settings) as database, database.session() as session:
        if not remove(session, args.name):
            raise UsageError(
                f"no active subscription is named {args.name!r}; "
                "'neurarch-trace subscriptions' lists them"
            )
    print(f"{args.name}: unsubscribed (its delivery history is kept)")
    return 0


__all__ = ["HELP", "NAME", "add_arguments", "run"]
