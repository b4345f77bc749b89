"""The daemon under faults, crashes, several instances and repo events: real processes
(``neurarch-trace serve``), real sockets, the emulator as the Hub.

Each run is compared with a fault-free run of the same publication script
(explicit dates and contents, so both emulators hold the same shas): the
stored revisions, their changes, advisories and repo status must be equal,
with every revision recorded once. Default sizes keep the suite short; set
NEURARCH_RELIABILITY_FULL=1 for the full sizes (500 revisions over 50
repos, 20 kills), which are also marked slow.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from storage import Database, open_database
from tests.daemon.conftest import run_until_idle, track_all
from tests.daemon.harness import (
    DaemonProcess,
    capture,
    caught_up,
    free_port,
    publication_script,
    publish,
    wait_for,
    write_config,
)
from tracker.hubsim import Fault, HubEmulator, estimator_tensor_shapes

FULL = os.environ.get("NEURARCH_RELIABILITY_FULL") == "1"
REPOS, REVISIONS, KILLS = (50, 10, 20) if FULL else (6, 4, 5)
WAIT_S = 900 if FULL else 240


def size(test: Any) -> Any:
    """At the issue's sizes the suite is long: mark it slow then."""
    return pytest.mark.slow(test) if FULL else test


def migrated(url: str) -> Database:
    """The database a test reads, migrated before any daemon starts on it."""
    database = open_database(url)
    database.migrate()
    return database


def emulator() -> HubEmulator:
    return HubEmulator(None, tensor_shapes=estimator_tensor_shapes, seed=7)


def repo_ids() -> list[str]:
    return sorted({p.repo_id for p in publication_script(REPOS, 1)})


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The fault-free run: everything published first, one in-process worker."""
    from datetime import UTC, datetime

    from tracker.daemon import publisher
    from tracker.hub.api import connect
    from tracker.hub.client import Hub
    from tracker.hub.discovery import HeadProbe
    from tracker.schedule.metrics import DaemonMetrics
    from tracker.schedule.worker import Worker, WorkerPolicy
    from tracker.settings import HubSettings

    hub = emulator()
    hub.start()
    publish(hub, publication_script(REPOS, REVISIONS))
    database = open_database(f"sqlite:///{tmp_path_factory.mktemp('baseline') / 'base.db'}")
    database.migrate()
    try:
        track_all(database, repo_ids())
        worker = Worker(
            database,
            Hub(connect(HubSettings(hub.endpoint))),
            HeadProbe(connect(HubSettings(hub.endpoint))),
            owner="baseline",
            policy=WorkerPolicy(),
            metrics=DaemonMetrics(),
            clock=lambda: datetime.now(UTC),
            publish=publisher(lambda: datetime.now(UTC)),
        )
        run_until_idle(worker)
        state = capture(database)
    finally:
        database.close()
        hub.stop()
    assert sum(len(repo["revisions"]) for repo in state.values()) == REPOS * (REVISIONS + 1)
    return state


@pytest.fixture
def hub() -> Iterator[HubEmulator]:
    instance = emulator()
    instance.start()
    try:
        yield instance
    finally:
        instance.stop()


def recorded_per_revision(processes: list[DaemonProcess]) -> Counter[tuple[str, str]]:
    return Counter(
        (event["repo"], event["sha"])
        for process in processes
        for event in process.events()
        if event["event"] == "revision_recorded"
    )


def differences(state: dict[str, Any], baseline: dict[str, Any]) -> list[str]:
    """Where two captured states differ, named by repo and field (empty when equal)."""
    found = []
    for repo_id in sorted(set(state) | set(baseline)):
        ours, theirs = state.get(repo_id, {}), baseline.get(repo_id, {})
        for key in sorted(set(ours) | set(theirs)):
            if ours.get(key) != theirs.get(key):
                found.append(f"{repo_id} {key}: {ours.get(key)!r} != {theirs.get(key)!r}")
    return found


def total_revisions(state: dict[str, Any]) -> int:
    return sum(len(repo["revisions"]) for repo in state.values())


@size
def test_faults_end_in_the_fault_free_state(
    tmp_path: Path, hub: HubEmulator, baseline: dict[str, Any]
) -> None:
    script = publication_script(REPOS, REVISIONS)
    publish(hub, script[:REPOS])  # every repo exists before the daemon starts
    mix = [
        Fault("status", rate=0.05, status=500),
        Fault("status", rate=0.03, status=503),
        Fault("rate_limit", rate=0.04, status=429, retry_after=1),
        Fault("reset", rate=0.03),
        Fault("truncate", rate=0.03, keep_bytes=10),
        Fault("hang", rate=0.02, seconds=3.0),
    ]
    for fault in mix:
        hub.faults.add(fault)
    url = f"sqlite:///{tmp_path / 'faults.db'}"
    config = write_config(
        tmp_path / "daemon.toml",
        database_url=url,
        endpoint=hub.endpoint,
        repos=repo_ids(),
        port=free_port(),
    )
    database = migrated(url)
    daemon = DaemonProcess(config, tmp_path / "daemon.log").start()

    def publish_during_run() -> None:
        for item in script[REPOS:]:
            hub.publish(item.repo_id, item.files, title=item.title, date=item.date, author="relia")
            time.sleep(0.05)

    publisher = threading.Thread(target=publish_during_run)
    publisher.start()
    try:
        publisher.join()
        wait_for(
            lambda: caught_up(database, hub, repo_ids()), WAIT_S, "the daemon to catch up", [daemon]
        )
        daemon.wait_ready()
        assert daemon.terminate() == 0
        state = capture(database)
    finally:
        if daemon.alive():
            daemon.kill()
        database.close()
    injected = sum(f.hits for f in mix)
    served = hub.stats.requests()
    print(
        f"\nfaults: {injected} of {served} requests failed ({injected / served:.0%}); "
        f"{total_revisions(state)} revisions"
    )
    assert injected / served > 0.1
    assert differences(state, baseline) == []
    assert set(recorded_per_revision([daemon]).values()) == {1}


@size
def test_kill_9_during_backfill_ends_in_the_fault_free_state(
    tmp_path: Path, hub: HubEmulator, baseline: dict[str, Any]
) -> None:
    publish(hub, publication_script(REPOS, REVISIONS))
    # A backfill slow enough to be cut several times.
    hub.faults.add(Fault("latency", seconds=0.05 if FULL else 0.25))
    url = f"sqlite:///{tmp_path / 'crash.db'}"
    config = write_config(
        tmp_path / "daemon.toml",
        database_url=url,
        endpoint=hub.endpoint,
        repos=repo_ids(),
        port=free_port(),
        lease="3s",
    )
    rng = random.Random(20)
    database = migrated(url)
    processes: list[DaemonProcess] = []
    cut_at: list[int] = []
    try:
        for _ in range(KILLS):
            process = DaemonProcess(config, tmp_path / f"run-{len(processes)}.log").start()
            processes.append(process)
            # Kill at a random moment after this run made progress, so every
            # kill lands inside the backfill rather than before or after it.
            last = cut_at[-1] if cut_at else 0
            wait_for(
                lambda last=last: total_revisions(capture(database)) > last,  # type: ignore[misc]
                WAIT_S,
                "progress before the kill",
                [process],
            )
            time.sleep(rng.uniform(0.0, 0.2))
            process.kill()
            cut_at.append(total_revisions(capture(database)))
            if cut_at[-1] == total_revisions(baseline):
                break  # the backfill finished before this kill: no point cutting further
        final = DaemonProcess(config, tmp_path / "final.log").start()
        processes.append(final)
        final.wait_ready()
        wait_for(
            lambda: caught_up(database, hub, repo_ids()), WAIT_S, "the last run to finish", [final]
        )
        assert final.terminate() == 0
        state = capture(database)
    finally:
        for process in processes:
            if process.alive():
                process.kill()
        database.close()
    print(f"\ncrashes: {len(cut_at)} kill -9, revisions stored at each kill: {cut_at}")
    cuts = [count for count in cut_at if 0 < count < total_revisions(baseline)]
    assert len(cuts) >= min(KILLS, 3), cut_at
    assert differences(state, baseline) == []


@size
@pytest.mark.postgres
def test_three_instances_on_postgresql_process_each_revision_once(
    tmp_path: Path, hub: HubEmulator, baseline: dict[str, Any], postgres_schema_url: str
) -> None:
    script = publication_script(REPOS, REVISIONS)
    publish(hub, script[: len(script) // 2])
    database = migrated(postgres_schema_url)
    processes = [
        DaemonProcess(
            write_config(
                tmp_path / f"daemon-{n}.toml",
                database_url=postgres_schema_url,
                endpoint=hub.endpoint,
                repos=repo_ids(),
                port=free_port(),
                workers=2,
            ),
            tmp_path / f"daemon-{n}.log",
        ).start()
        for n in range(3)
    ]
    try:
        publish(hub, script[len(script) // 2 :])
        wait_for(lambda: caught_up(database, hub, repo_ids()), WAIT_S, "three instances", processes)
        for process in processes:
            process.wait_ready()
        assert [p.terminate() for p in processes] == [0, 0, 0]
        state = capture(database)
    finally:
        for process in processes:
            if process.alive():
                process.kill()
        database.close()
    per_revision = recorded_per_revision(processes)
    per_instance = [
        sum(1 for e in p.events() if e["event"] == "revision_recorded") for p in processes
    ]
    print(f"\nthree instances: revisions recorded per instance {per_instance}")
    assert differences(state, baseline) == []
    assert len(per_revision) == total_revisions(baseline)
    assert set(per_revision.values()) == {1}


def test_force_push_deletion_and_gating_during_a_run_are_reported_and_lose_nothing(
    tmp_path: Path, hub: HubEmulator
) -> None:
    publish(hub, publication_script(4, 2))
    repos = sorted({p.repo_id for p in publication_script(4, 1)})
    pushed, deleted, gated, plain = repos
    url = f"sqlite:///{tmp_path / 'events.db'}"
    config = write_config(
        tmp_path / "daemon.toml",
        database_url=url,
        endpoint=hub.endpoint,
        repos=repos,
        port=free_port(),
    )
    database = migrated(url)
    daemon = DaemonProcess(config, tmp_path / "daemon.log").start()
    try:
        wait_for(lambda: caught_up(database, hub, repos), WAIT_S, "the first backfill", [daemon])
        dropped = hub.head(pushed)
        hub.force_push(pushed, drop=1)
        replacement = hub.publish(pushed, {"config.json": b'{"model_type": "llama"}'})
        hub.delete_repo(deleted)
        hub.set_gated(gated, "manual")
        fresh = hub.publish(plain, {"generation_config.json": b'{"eos_token_id": [2, 7]}'})

        def settled() -> bool:
            state = capture(database)
            return (
                (dropped, "step 1", False) in state[pushed]["revisions"]
                and any(sha == replacement for sha, _, _ in state[pushed]["revisions"])
                and state[deleted]["status"] == "gone"
                and state[gated]["status"] == "gated"
                and any(sha == fresh for sha, _, _ in state[plain]["revisions"])
            )

        wait_for(settled, WAIT_S, "the events to be stored", [daemon])
        daemon.wait_ready()
        assert daemon.terminate() == 0
        state = capture(database)
    finally:
        if daemon.alive():
            daemon.kill()
        database.close()
    kinds = Counter(e["event"] for e in daemon.events() if e["event"].startswith("repo_"))
    print(f"\nevents: {dict(kinds)}")
    assert kinds == {"repo_force_push": 1, "repo_gone": 1, "repo_gated": 1}
    assert len(state[deleted]["revisions"]) == 3  # initial commit + 2 steps, kept
    assert len(state[gated]["revisions"]) == 3
    assert not [line for line in daemon.log.read_text().splitlines() if "Traceback" in line]
