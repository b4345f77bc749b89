"""Work a request asks for, done in killable worker processes so the web process only waits.

The event loop answers every connection, ``/healthz`` included; CPU spent on
it, or on a thread holding the interpreter lock, delays them all. So what a
caller's input decides the cost of (``POST /api/v1/plan``) runs here, in
processes of its own, under limits the OS enforces:

* ``RLIMIT_AS`` caps a worker's address space for its life, and before each
  call a soft ``RLIMIT_CPU`` of the CPU it has used plus the call's budget
  kills a runaway call by ``SIGXCPU`` even if nobody is watching;
* the waiting thread gives up at the wall-clock deadline and sends
  ``SIGKILL`` (C code never looks at signal handlers); the next call starts a
  fresh worker;
* workers run at a lower CPU priority (``NICENESS``), so the kernel serves
  the web process first;
* at most ``workers`` calls run at once and at most ``queue`` more wait;
  past that a call is refused at once (``PoolBusy``) rather than queued
  without end.

Workers start by the ``forkserver`` method, so they inherit nothing of the web
process (database connections, sockets, threads), and are reused (a start-up
costs the imports; a call costs what its function costs). This is
the pattern of the tracker's isolation pool, kept here because feeds never
imports the tracker. Functions and arguments cross by pickle: module-level
functions, plain data.

    ComputeError             no value came back
    ├── PoolBusy             every worker busy and the queue full: nothing was run
    ├── OverBudget           the call passed its CPU or wall budget, or died; ``reason`` says
    └── ComputeFailed        the function raised; ``kind`` names the exception
"""

from __future__ import annotations

import math
import multiprocessing
import os
import resource
import signal
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any, TypeVar, cast

import anyio.to_thread
from anyio import CapacityLimiter

from feeds.errors import FeedsError

T = TypeVar("T")

START_SECONDS = 30.0
"""How long a new worker may take to import its modules and say it is ready."""
MAX_CALLS = 200
"""Calls after which a worker is replaced, so what a call leaves behind stays bounded."""
NICENESS = 10
"""How much lower a worker's CPU priority is than the web process's: on a machine with few
cores the kernel runs the event loop (a health probe, a page) before more computing."""


class ComputeError(FeedsError):
    """A call in the compute pool did not return a value."""


class PoolBusy(ComputeError):
    """Every worker is busy and the queue is full; the call was not run."""


class OverBudget(ComputeError):
    """The call passed its CPU, memory or wall budget (its worker is gone); ``reason`` says which."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class ComputeFailed(ComputeError):
    """The function raised in the worker; ``kind`` is the exception's type name."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message


@dataclass(frozen=True)
class Budget:
    """What one call may use: CPU seconds and wall seconds; a worker's address space."""

    cpu_seconds: int = 2
    wall_seconds: float = 10.0
    memory_bytes: int = 1024**3


def _worker_main(conn: Connection, memory_bytes: int, preload: tuple[str, ...]) -> None:
    """A worker's life: limits, imports, then one call per message until EOF or None."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the web process's to handle
    os.nice(NICENESS)
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    for module in preload:
        __import__(module)
    conn.send("ready")
    while True:
        try:
            request = conn.recv()
        except EOFError:  # the web process is gone
            return
        if request is None:
            return
        function, args, cpu_seconds = request
        _limit_cpu(cpu_seconds)
        try:
            reply: tuple[Any, ...] = ("ok", function(*args))
        except BaseException as exc:  # whatever the caller's input provoked goes back as text
            reply = ("raised", type(exc).__name__, str(exc))
        conn.send(reply)


def _limit_cpu(seconds: int) -> None:
    """Soft RLIMIT_CPU at the CPU used so far plus ``seconds``."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    soft = math.ceil(usage.ru_utime + usage.ru_stime) + seconds
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))


@dataclass
class _Worker:
    process: BaseProcess
    conn: Connection
    calls: int = 0

    def kill(self) -> None:
        if self.process.is_alive():
            os.kill(cast(int, self.process.pid), signal.SIGKILL)
        self.process.join()
        self.conn.close()

    def death(self) -> str:
        """Why the worker died, in words for the caller."""
        self.process.join(1.0)
        code = self.process.exitcode
        if code == -signal.SIGXCPU:
            return "CPU budget spent"
        if code is not None and code < 0:
            return f"worker killed by {signal.Signals(-code).name} (memory budget?)"
        return f"worker exited with status {code}"


class ComputePool:
    """Up to ``workers`` worker processes, each running one call at a time under ``budget``."""

    def __init__(
        self,
        budget: Budget = Budget(),
        workers: int = 2,
        queue: int = 8,
        preload: Sequence[str] = (),
    ) -> None:
        self.budget = budget
        self.preload = tuple(preload)
        self._capacity = workers + queue
        self._limiter = CapacityLimiter(workers)
        self._context = multiprocessing.get_context("forkserver")
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []
        self._admitted = 0
        self._closed = False

    async def run(self, function: Callable[..., T], *args: Any) -> T:
        """``function(*args)`` in a worker, awaited without holding the event loop."""
        with self._lock:
            if self._closed or self._admitted >= self._capacity:
                raise PoolBusy("every worker is busy; try again shortly")
            self._admitted += 1
        try:
            return await anyio.to_thread.run_sync(self.call, function, *args, limiter=self._limiter)
        finally:
            with self._lock:
                self._admitted -= 1

    def call(self, function: Callable[..., T], *args: Any) -> T:
        """``function(*args)`` in a worker, on the calling thread (which only waits)."""
        worker = self._checkout()
        try:
            worker.conn.send((function, args, self.budget.cpu_seconds))
            if not worker.conn.poll(self.budget.wall_seconds):
                raise OverBudget(f"wall budget of {self.budget.wall_seconds:g} s spent")
            try:
                reply = cast(tuple[Any, ...], worker.conn.recv())
            except (EOFError, OSError):
                raise OverBudget(worker.death()) from None
        except BaseException:
            worker.kill()  # in an unknown state, or gone: never reused
            raise
        self._checkin(worker)
        if reply[0] == "ok":
            return cast(T, reply[1])
        raise ComputeFailed(reply[1], reply[2])

    def _checkout(self) -> _Worker:
        with self._lock:
            while self._idle:
                worker = self._idle.pop()
                if worker.process.is_alive():
                    return worker
                worker.kill()
        return self._start()

    def _checkin(self, worker: _Worker) -> None:
        worker.calls += 1
        with self._lock:
            if worker.calls < MAX_CALLS and not self._closed:
                self._idle.append(worker)
                return
        worker.conn.send(None)
        worker.process.join(1.0)
        worker.kill()

    def _start(self) -> _Worker:
        parent, child = self._context.Pipe()
        process = self._context.Process(
            target=_worker_main,
            args=(child, self.budget.memory_bytes, self.preload),
            name="neurarch-compute",
            daemon=True,
        )
        process.start()
        child.close()
        worker = _Worker(process, parent)
        try:
            if not parent.poll(START_SECONDS):
                raise OverBudget(f"no worker started within {START_SECONDS:g} s")
            parent.recv()
        except (EOFError, OSError):
            worker.kill()
            raise OverBudget(f"no worker started: {worker.death()}") from None
        except OverBudget:
            worker.kill()
            raise
        return worker

    def worker_pids(self) -> list[int]:
        """The idle workers' process ids."""
        with self._lock:
            return [cast(int, w.process.pid) for w in self._idle]

    def close(self) -> None:
        """Stop the idle workers; a busy one stops when its call returns."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.kill()


__all__ = [
    "Budget",
    "ComputeError",
    "ComputeFailed",
    "ComputePool",
    "OverBudget",
    "PoolBusy",
]
