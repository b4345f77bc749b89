"""The offline demo: a local Hub replaying shipped histories, the daemon, and the pages, on 127.0.0.1.

The Hub emulator serves tracker/demo/histories (or ``--corpus DIR``, e.g. a
recorded corpus) on a free loopback port; the daemon is pointed at it, tracks
and backfills every repo it serves, and the HTTP app is served on
127.0.0.1:PORT. The demo writes to its own SQLite file, ``demo.db`` in the
data directory, recreated on each run, so it never touches the database
``serve`` uses. /healthz reports ``"backfill": "done"`` when every repo is in.
The subscriptions of tracker/demo/subscriptions.toml are stored before the
backfill starts, so the alerts it raises show on their pages and feeds.
As ``serve`` does by default, the demo runs the check workers (and the
emulator) in this process and the HTTP app in a second one.
"""

from __future__ import annotations

import argparse
import logging
import shlex
import sys
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from tracker.demo import HISTORIES
from tracker.errors import UsageError
from tracker.settings import HubSettings, Settings

if TYPE_CHECKING:
    from storage import Database

NAME = "demo"
HELP = "replay demo histories through a local Hub, backfill them and serve the pages"
DEMO_DATABASE = "demo.db"
DEMO_SUBSCRIPTIONS = Path(__file__).resolve().parent.parent / "demo" / "subscriptions.toml"
"""The demo's subscriptions, shipped as package data beside the histories."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The HTTP port and an optional corpus; the demo's Hub and database are its own."""
    parser.add_argument("--port", type=int, default=8080, help="HTTP port (default 8080; 0: any)")
    parser.add_argument(
        "--corpus", type=Path, help="replay this corpus directory instead of the shipped histories"
    )


def demo_settings(settings: Settings, endpoint: str) -> Settings:
    """The demo's own database and Hub, whatever the configuration says."""
    data_dir = settings.storage.data_dir
    path = data_dir / DEMO_DATABASE
    for leftover in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        leftover.unlink(missing_ok=True)
    data_dir.mkdir(parents=True, exist_ok=True)
    return replace(
        settings,
        storage=replace(settings.storage, database_url=f"sqlite:///{path}"),
        hub=HubSettings(endpoint=endpoint, token=None),
    )


def store_demo_subscriptions(database: Database, path: Path = DEMO_SUBSCRIPTIONS) -> list[str]:
    """Store the shipped demo subscriptions; their names, in file order."""
    from tracker.alerts.registry import sync_configured
    from tracker.config_file import ConfigFileError, load_daemon_config

    try:
        specs = load_daemon_config(path).subscriptions
    except ConfigFileError as exc:
        raise UsageError(str(exc)) from None
    with database.session() as session:
        sync_configured(session, specs, now=datetime.now(UTC))
    return [spec.name for spec in specs]


def run(args: argparse.Namespace, settings: Settings) -> int:
    """Serve until stopped (exit 0); exit 1 if a serving process dies, 2 if the port is taken.

    Recreates ``demo.db`` in the data directory and binds loopback ports only.
    """
    from tracker.commands.backfill_progress import backfill_bar, watch_backfill
    from tracker.daemon import Daemon
    from tracker.hub.repo_id import validate_repo_id
    from tracker.hubsim import HubEmulator, HubSimError, estimator_tensor_shapes
    from tracker.roles import CannotListen, Role, ServeFailed, serve
    from tracker.settings import DaemonConfig, RepoConfig

    revisions_sample = "neurarch_revisions_recorded_total"  # tracker.schedule.metrics

    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port {args.port}: must be between 0 and 65535")
    corpus = args.corpus or HISTORIES
    try:
        emulator = HubEmulator(corpus, tensor_shapes=estimator_tensor_shapes)
    except HubSimError as exc:
        raise UsageError(f"--corpus {corpus}: {exc}") from None
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    endpoint = emulator.start("127.0.0.1", 0)
    try:
        local = demo_settings(settings, endpoint)
        repos = tuple(RepoConfig(validate_repo_id(name)) for name in emulator.repo_ids())
        config = DaemonConfig(
            repos=repos,
            host="127.0.0.1",
            port=args.port,
            requests_per_second=200.0,
            api_token=settings.daemon.api_token,
            alerts=settings.daemon.alerts,
        )
        daemon = Daemon.open(local, config)
        daemon.track_configured()
        names = store_demo_subscriptions(daemon.database)

        def announce(line: str) -> None:
            base = line.split("serving on ", 1)[-1].split()[0]
            print(f"Hub emulator: {endpoint} ({len(repos)} repos from {corpus})")
            print(f"database:     {local.storage.database_url}")
            if repos:  # the demo's database is its own: the reading commands must be told so
                url = shlex.quote(local.storage.database_url)
                print(
                    f"read:         NEURARCH_DATABASE_URL={url} neurarch-trace history "
                    f"{repos[0].repo_id}   (or diff REPO OLD NEW)"
                )
            print(
                f"open:         {base}/   (backfill progress: {base}/healthz, "
                f"metrics: {base}/metrics)"
            )
            for repo in repos:
                print(f"              {base}/models/{repo.repo_id}")
            for name in names:
                print(
                    f"subscription: {base}/subscriptions/{name}   (alerts: .../{name}/alerts.atom)"
                )
            print("Ctrl-C to stop", flush=True)
            watch_backfill(
                daemon.health,
                lambda: daemon.metrics.registry.get_sample_value(revisions_sample) or 0.0,
                daemon.stop_event,
                backfill_bar(sys.stderr, repos_total=len(repos)),
                len(repos),
            )

        serve(daemon, Role.ALL, announce)
    except CannotListen as exc:
        raise UsageError(str(exc)) from None
    except ServeFailed as exc:
        print(f"neurarch-trace: {exc}", file=sys.stderr, flush=True)
        return 1
    finally:
        emulator.stop()
    return 0
