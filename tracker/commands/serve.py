"""Run the daemon: scheduled and pushed checks, the workers, and the HTTP app, until SIGTERM.

Repos come from the configuration file's ``[[repos]]`` and from ``--track``;
several instances may share one PostgreSQL database (see README).

--role all (the default) runs the check workers in this process and the HTTP
app in a second one, so work never starves requests; --role web runs only the
app (pages, feeds, OSV API, webhooks, /healthz, /metrics) over the shared
database and takes no leases; --role worker runs only the scheduler, inbox,
check workers and alert delivery, and binds no port. SIGTERM stops both
processes and exits 0; if one of them dies the other is stopped and serve
exits 1 with one line saying which.
"""

from __future__ import annotations

import argparse
import logging
import sys
from dataclasses import replace

from tracker.errors import UsageError
from tracker.settings import Settings

NAME = "serve"
HELP = "run the daemon: checks, webhooks, /healthz, /metrics and the published pages"
ROLES = ("all", "web", "worker")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Overrides of the ``[server]`` settings, extra repos and the role."""
    parser.add_argument("--host", help="address to bind (default from [server], else 127.0.0.1)")
    parser.add_argument("--port", type=int, help="TCP port (default from [server], else 8080)")
    parser.add_argument("--workers", type=int, help="check worker threads (default 4)")
    parser.add_argument(
        "--track", action="append", default=[], metavar="REPO", help="also follow REPO (repeatable)"
    )
    parser.add_argument(
        "--role",
        choices=ROLES,
        default="all",
        help=(
            "all: workers here, the HTTP app in its own process (default); "
            "web: the HTTP app only, no checks; worker: checks only, no port"
        ),
    )


def run(args: argparse.Namespace, settings: Settings) -> int:
    """Run until SIGTERM (exit 0); exit 1 when a serving process dies, 2 when it cannot start.

    Tracks the configured repos first (commits) unless the role is ``web``.
    """
    from storage import StorageError
    from tracker.daemon import Daemon
    from tracker.errors import RepoIdError, TrackerError
    from tracker.hub.repo_id import validate_repo_id
    from tracker.roles import CannotListen, Role, ServeFailed, serve
    from tracker.settings import RepoConfig

    config = settings.daemon
    try:
        extra = tuple(RepoConfig(validate_repo_id(repo)) for repo in args.track)
    except RepoIdError as exc:
        raise UsageError(str(exc)) from None
    if args.port is not None and not 0 <= args.port <= 65535:
        raise UsageError(f"--port {args.port}: must be between 0 and 65535")
    if args.workers is not None and args.workers < 1:
        raise UsageError(f"--workers {args.workers}: must be at least 1")
    config = replace(
        config,
        repos=config.repos
        + tuple(r for r in extra if r.repo_id not in {c.repo_id for c in config.repos}),
        host=args.host or config.host,
        port=config.port if args.port is None else args.port,
        workers=args.workers or config.workers,
    )
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    for chatty in ("httpx2", "apscheduler"):
        logging.getLogger(chatty).setLevel(logging.WARNING)
    try:
        daemon = Daemon.open(settings, config)
        if args.role != Role.WEB:
            daemon.track_configured()
    except (StorageError, TrackerError) as exc:
        raise UsageError(str(exc)) from None
    try:
        serve(daemon, Role(args.role))
    except CannotListen as exc:
        raise UsageError(str(exc)) from None
    except ServeFailed as exc:
        print(f"neurarch-trace: {exc}", file=sys.stderr, flush=True)
        return 1
    return 0
