"""Isolated workers: killed on deadline, limited by the OS, replaced, shared by threads, cleaned up."""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tracker.untrusted.isolation import (
    DeadlineExceeded,
    IsolatedPool,
    Limits,
    PoolClosed,
    RemoteError,
    WorkerDied,
)

MiB = 1024 * 1024


def worker_pid() -> int:
    return os.getpid()


def c_bound_power() -> int:
    """Seconds of work inside one C call: no Python-level check can interrupt it."""
    power: int = 9 ** (10**8)
    return power.bit_length()


def allocate(size: int) -> int:
    return len(bytearray(size))


def fail(message: str) -> None:
    raise ValueError(message)


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def open_files() -> list[str]:
    fds = Path("/proc/self/fd")
    targets = []
    for fd in fds.iterdir():
        try:
            targets.append(os.readlink(fd))
        except OSError:
            continue
    return targets


def alive(pid: int) -> bool:
    """The process exists and is not a zombie waiting to be reaped."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] not in {"Z", "X"}
    except OSError:
        return False


LOADED_MACHINE_WALL = 20.0
"""Deadline of calls that must succeed: a loaded 2-core machine can take seconds to allocate."""


@pytest.fixture
def pool() -> Iterator[IsolatedPool]:
    with IsolatedPool(Limits(wall_seconds=1.0, cpu_seconds=10), max_workers=2) as isolated:
        yield isolated


def test_a_call_stuck_in_c_is_killed_at_its_deadline_and_the_pool_recovers(
    pool: IsolatedPool,
) -> None:
    first = pool.call(worker_pid)
    started = time.monotonic()
    with pytest.raises(DeadlineExceeded, match=r"killed after 1s"):
        pool.call(c_bound_power)
    assert time.monotonic() - started < 2.0
    assert not alive(first)
    replacement = pool.call(worker_pid)
    assert replacement != first and pool.killed == 1


def test_cpu_limit_kills_a_runaway_call_even_with_a_generous_deadline() -> None:
    with IsolatedPool(Limits(wall_seconds=30.0, cpu_seconds=1), max_workers=1) as pool:
        started = time.monotonic()
        with pytest.raises(WorkerDied, match="CPU time limit reached"):
            pool.call(c_bound_power)
        assert time.monotonic() - started < 10  # well before the 30 s deadline
        assert pool.killed == 0 and isinstance(pool.call(worker_pid), int)


def test_address_space_limit_turns_a_huge_allocation_into_memory_error(
    pool: IsolatedPool,
) -> None:
    with pytest.raises(RemoteError) as caught:
        pool.call(allocate, 2 * 1024 * MiB, wall_seconds=LOADED_MACHINE_WALL)
    assert caught.value.kind == "MemoryError"
    assert pool.call(allocate, 100 * MiB, wall_seconds=LOADED_MACHINE_WALL) == 100 * MiB


def test_an_exception_comes_back_typed_with_its_message(pool: IsolatedPool) -> None:
    with pytest.raises(RemoteError, match="ValueError: no such thing") as caught:
        pool.call(fail, "no such thing")
    assert (caught.value.kind, caught.value.message) == ("ValueError", "no such thing")


def test_a_worker_that_dies_mid_call_is_reported_and_replaced(pool: IsolatedPool) -> None:
    with pytest.raises(WorkerDied, match="out of memory"):  # SIGKILL, as the OOM killer sends
        pool.call(die)
    assert isinstance(pool.call(worker_pid), int)


def test_a_worker_killed_while_idle_is_replaced_without_failing_the_call(
    pool: IsolatedPool,
) -> None:
    first = pool.call(worker_pid)
    os.kill(first, signal.SIGKILL)
    time.sleep(0.1)
    assert pool.call(worker_pid) != first


def test_threads_share_the_workers_and_a_kill_does_not_disturb_the_others(
    pool: IsolatedPool,
) -> None:
    results: list[int] = []
    errors: list[BaseException] = []

    def calls() -> None:
        for _ in range(10):
            results.append(pool.call(allocate, 1000, wall_seconds=LOADED_MACHINE_WALL))

    def hostile() -> None:
        try:
            pool.call(c_bound_power)
        except DeadlineExceeded as exc:
            errors.append(exc)

    threads = [threading.Thread(target=calls) for _ in range(6)]
    threads.append(threading.Thread(target=hostile))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [1000] * 60
    assert len(errors) == 1 and pool.started <= 4


def test_workers_inherit_none_of_the_daemons_sockets(pool: IsolatedPool) -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        inode = os.readlink(f"/proc/self/fd/{server.fileno()}")
        assert inode.startswith("socket:")
        assert inode not in pool.call(open_files)


def test_close_stops_every_worker_and_refuses_new_calls() -> None:
    pool = IsolatedPool(Limits(wall_seconds=5.0), max_workers=2)
    barrier = threading.Barrier(2)

    def call() -> None:
        barrier.wait()
        pool.call(worker_pid)

    threads = [threading.Thread(target=call) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    pids = pool.worker_pids()
    assert pids
    pool.close()
    deadline = time.monotonic() + 3
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(alive(pid) for pid in pids)
    with pytest.raises(PoolClosed):
        pool.call(worker_pid)


def test_the_calling_process_stays_responsive_while_a_worker_computes_in_c(
    pool: IsolatedPool,
) -> None:
    pool.call(worker_pid)
    outcomes: list[str] = []

    def compute() -> None:
        try:
            pool.call(c_bound_power)
        except DeadlineExceeded as exc:
            outcomes.append(exc.reason)

    hostile = threading.Thread(target=compute)
    hostile.start()
    worst = 0.0
    while hostile.is_alive():
        started = time.monotonic()
        time.sleep(0.01)
        worst = max(worst, time.monotonic() - started)
    hostile.join()
    assert outcomes == ["killed after 1s"]
    # In this process the same power would hold the GIL for its whole run (seconds);
    # the margin is for a loaded machine, where a 10 ms sleep may take 100 ms.
    assert worst < 0.5
