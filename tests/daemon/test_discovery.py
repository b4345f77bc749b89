"""Bulk discovery against the emulator: an idle cycle is one request, and a push is found."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import event

from storage import Database, poll_state
from tests.daemon.conftest import MakeWorker, run_until_idle, track_all
from tracker.daemon import Daemon
from tracker.demo import HISTORIES
from tracker.hub.api import connect
from tracker.hub.discovery import Discovery
from tracker.hubsim import HubEmulator
from tracker.settings import DaemonConfig, HubSettings, Settings, StorageSettings

pytestmark = pytest.mark.parametrize(
    "hub_emulator", [{"corpus": HISTORIES, "page_size": 2}], indirect=True
)


def test_idle_cycle_costs_one_request_and_a_push_makes_only_that_repo_due(
    database: Database, hub_emulator: HubEmulator, make_worker: MakeWorker, tmp_path: Path
) -> None:
    repos = hub_emulator.repo_ids()
    track_all(database, repos)
    run_until_idle(make_worker())
    daemon, discovery = discovering_daemon(database, hub_emulator, tmp_path)
    daemon.discover(discovery)  # first cycle: sets the watermark
    hub_emulator.stats.reset()
    daemon.discover(discovery)
    assert hub_emulator.stats.by_kind() == {"list_models": 1}

    moved = repos[1]
    hub_emulator.publish(moved, {"config.json": b'{"model_type": "llama"}'}, date=datetime.now(UTC))
    before = datetime.now(UTC)
    daemon.discover(discovery)
    with database.read_session() as session:
        due = {
            r: poll_state(session, r).next_check_at <= before + timedelta(seconds=5) for r in repos
        }
    assert due == {r: r == moved for r in repos}


def test_repos_sharing_the_watermarks_second_are_read_once_and_a_new_sha_there_is_found(
    database: Database, hub_emulator: HubEmulator, make_worker: MakeWorker, tmp_path: Path
) -> None:
    """Every repo pushed in one second: later idle cycles ask storage nothing, yet a push
    landing in that same second (after the walk read it) is still found."""
    repos = hub_emulator.repo_ids()
    track_all(database, repos)
    run_until_idle(make_worker())
    second = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
    for repo in repos:
        hub_emulator.publish(repo, {"README.md": f"{repo}\n".encode()}, date=second)
    daemon, discovery = discovering_daemon(database, hub_emulator, tmp_path)
    daemon.discover(discovery)  # sets the watermark at that second
    daemon.discover(discovery)  # reads every repo at the second once, makes them due
    run_until_idle(make_worker())

    statements: list[str] = []

    def count(*args: object) -> None:
        statements.append(str(args[2]))

    event.listen(database.engine, "before_cursor_execute", count)
    try:
        daemon.discover(discovery)
    finally:
        event.remove(database.engine, "before_cursor_execute", count)
    assert statements == []

    moved = repos[0]
    hub_emulator.publish(moved, {"README.md": b"again\n"}, date=second)
    before = datetime.now(UTC)
    daemon.discover(discovery)
    with database.read_session() as session:
        due = {
            r: poll_state(session, r).next_check_at <= before + timedelta(seconds=5) for r in repos
        }
    assert due == {r: r == moved for r in repos}


def discovering_daemon(
    database: Database, hub_emulator: HubEmulator, tmp_path: Path
) -> tuple[Daemon, Discovery]:
    """A daemon over ``database`` and a walker of the emulator's listing, as ``start`` wires them."""
    daemon = Daemon(
        settings=Settings(
            StorageSettings(database_url="unused", data_dir=tmp_path),
            HubSettings(endpoint=hub_emulator.endpoint),
        ),
        config=DaemonConfig(),
        database=database,
    )
    return daemon, Discovery(connect(HubSettings(hub_emulator.endpoint)))
