"""``serve --role web|worker|all`` as an operator runs it: real processes, real ports, the emulator.

The web role serves pages and /healthz from the database and never checks a
repo; the worker role checks and binds nothing; ``all`` (the default) is the
two in separate OS processes, stopped together by SIGTERM, and a death of
either half is never silent.
"""

from __future__ import annotations

import os
import signal
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from storage import Database, PollState, open_database, poll_states
from tests.daemon.conftest import track_all
from tests.daemon.harness import (
    DaemonProcess,
    caught_up,
    free_port,
    publication_script,
    publish,
    wait_for,
    write_config,
)
from tracker.hubsim import HubEmulator, estimator_tensor_shapes

REPOS = [f"relia/model-{index:03d}" for index in range(3)]


@pytest.fixture
def hub() -> Iterator[HubEmulator]:
    emulator = HubEmulator(None, tensor_shapes=estimator_tensor_shapes, seed=7)
    emulator.start()
    publish(emulator, publication_script(len(REPOS), 2))
    try:
        yield emulator
    finally:
        emulator.stop()


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    """The SQLite file every process of a test shares, migrated before any starts."""
    opened = open_database(f"sqlite:///{tmp_path / 'roles.db'}")
    opened.migrate()
    try:
        yield opened
    finally:
        opened.close()


def start(tmp_path: Path, hub: HubEmulator, database: Database, *args: str) -> DaemonProcess:
    port = free_port()
    config = write_config(
        tmp_path / "daemon.toml",
        database_url=str(database.engine.url),
        endpoint=hub.endpoint,
        repos=REPOS,
        port=port,
    )
    return DaemonProcess(config, tmp_path / "daemon.log", args=args).start()


def port_of(process: DaemonProcess) -> int:
    text = process.config.read_text(encoding="utf-8")
    return int(text.split("port = ", 1)[1].split()[0])


def children(pid: int) -> list[int]:
    """The child processes of ``pid`` that run Python (Linux /proc; the resource tracker too)."""
    listed = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return [int(child) for child in listed]


def web_child_of(pid: int) -> int:
    for child in children(pid):
        command = Path(f"/proc/{child}/cmdline").read_bytes()
        if b"spawn_main" in command:
            return child
    raise AssertionError(f"process {pid} has no spawned web process")


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # A zombie (exited, not yet reaped) counts as gone.
    return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"


def refused(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) != 0


def test_web_role_answers_pages_and_healthz_and_never_checks_or_leases(
    tmp_path: Path, hub: HubEmulator, db: Database
) -> None:
    track_all(db, REPOS)  # due now: a process that checked anything would take them
    hub.stats.reset()
    web = start(tmp_path, hub, db, "--role", "web")
    try:
        web.wait_ready()
        base = f"http://127.0.0.1:{port_of(web)}"
        health = httpx.get(f"{base}/healthz").json()
        page = httpx.get(f"{base}/")
        feed = httpx.get(f"{base}/feeds/all.atom")
        time.sleep(2.0)  # several ticks of the config's 0.3 s: enough for a worker to claim
        states = {s.repo_id: s for s in poll_states_of(db)}
        assert web.terminate() == 0
    finally:
        if web.alive():
            web.kill()
    assert health["role"] == "web" and health["status"] == "ok"
    assert (health["tracked"], health["backfill"], health["backfill_pending"]) == (3, "running", 3)
    assert "workers_alive" not in health
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    assert feed.status_code == 200
    assert hub.stats.requests() == 0
    assert {r: (s.lease_owner, s.last_seen_sha) for r, s in states.items()} == {
        r: (None, None) for r in REPOS
    }


def poll_states_of(database: Database) -> list[PollState]:
    with database.read_session() as session:
        return list(poll_states(session))


def test_worker_role_records_every_revision_and_binds_no_port(
    tmp_path: Path, hub: HubEmulator, db: Database
) -> None:
    worker = start(tmp_path, hub, db, "--role", "worker")
    try:
        wait_for(lambda: caught_up(db, hub, REPOS), 120, "the worker's backfill", [worker])
        assert refused(port_of(worker))
        assert worker.terminate() == 0
    finally:
        if worker.alive():
            worker.kill()
    log = worker.log.read_text()
    assert "worker running" in log and "serving on" not in log
    recorded = [e for e in worker.events() if e["event"] == "revision_recorded"]
    assert len(recorded) == sum(len(hub.history(repo)) for repo in REPOS)


def test_all_role_serves_from_a_second_process_and_sigterm_stops_both(
    tmp_path: Path, hub: HubEmulator, db: Database
) -> None:
    daemon = start(tmp_path, hub, db)
    try:
        daemon.wait_ready()
        assert daemon.process is not None
        web = web_child_of(daemon.process.pid)
        base = f"http://127.0.0.1:{port_of(daemon)}"
        wait_for(lambda: caught_up(db, hub, REPOS), 120, "the backfill", [daemon])
        health = httpx.get(f"{base}/healthz").json()
        metrics = httpx.get(f"{base}/metrics").text
        assert daemon.terminate() == 0
        wait_for(lambda: gone(web), 10, "the web process to exit")
    finally:
        if daemon.alive():
            daemon.kill()
    # The app answered from the web-role process, and it read the backfill from the database.
    assert (health["role"], health["backfill"], health["tracked"]) == ("web", "done", 3)
    revisions = sum(len(hub.history(repo)) for repo in REPOS)
    # The workers' counters reach /metrics over the bridge from the other process.
    assert f"neurarch_revisions_recorded_total {float(revisions)}" in metrics
    assert refused(port_of(daemon))


def test_a_killed_web_process_stops_the_daemon_with_a_message_and_status_1(
    tmp_path: Path, hub: HubEmulator, db: Database
) -> None:
    daemon = start(tmp_path, hub, db)
    try:
        daemon.wait_ready()
        assert daemon.process is not None
        web = web_child_of(daemon.process.pid)
        os.kill(web, signal.SIGKILL)
        code = daemon.process.wait(timeout=60)
    finally:
        if daemon.alive():
            daemon.kill()
    assert code == 1
    assert f"the web process (pid {web}) exited with status -9" in daemon.log.read_text()


def test_the_web_process_exits_when_its_worker_process_is_killed(
    tmp_path: Path, hub: HubEmulator, db: Database
) -> None:
    daemon = start(tmp_path, hub, db)
    try:
        daemon.wait_ready()
        assert daemon.process is not None
        web = web_child_of(daemon.process.pid)
        daemon.kill()
        wait_for(lambda: gone(web), 10, "the orphaned web process to exit")
    finally:
        if daemon.alive():
            daemon.kill()
    assert "the worker process is gone; stopping" in daemon.log.read_text()
    assert refused(port_of(daemon))
