"""Evaluating untrusted upstream content in a killable process with OS limits.

A chat template or a tokenizer.json comes from anyone who can publish a repo.
jinja2's sandbox and our policy refuse what they can see coming, but some
work happens in C (an integer power, a padded format) where no Python-level
check can interrupt it. So the evaluation itself runs in a worker process:

* the worker sets ``RLIMIT_AS`` (address space) once and, before each call,
  a soft ``RLIMIT_CPU`` of the CPU it has used plus the call's budget, so a
  runaway call dies by ``SIGXCPU`` even if nobody is watching (the parent
  died, or is stuck);
* the calling thread waits on the worker's pipe with a wall-clock deadline
  and then sends ``SIGKILL`` (not a request to stop: C code never looks at
  its signal handlers), and a fresh worker replaces the dead one on the next
  call;
* workers are started by the ``forkserver`` method, so they inherit nothing
  of the daemon (open database connections, the web server's sockets, its
  threads) and, since nobody else holds their pipe, they exit when the
  parent does.

Workers are reused: a start-up costs the imports, a call only its function.
Each call owns one worker for its duration, so threads may call at once.
Functions and arguments cross by pickle: module-level functions, plain data.

    IsolationError             an isolated call did not return a value
    ├── LimitExceeded          the call hit a limit; ``reason`` says which
    │   ├── DeadlineExceeded   it ran past its wall-clock deadline and was killed
    │   └── WorkerDied         the worker died (CPU or memory limit, a crash)
    ├── RemoteError            the function raised; ``kind`` names the exception
    ├── WorkerUnavailable      no worker could be started (a fault of ours, not the input's)
    └── PoolClosed             the pool was closed (the process is shutting down)
"""

from __future__ import annotations

import atexit
import contextlib
import math
import multiprocessing
import os
import resource
import signal
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any, TypeVar, cast

from tracker.errors import TrackerError

T = TypeVar("T")

GiB = 1024**3
START_SECONDS = 30.0
"""How long a new worker may take to import its modules and report ready."""
MAX_CALLS = 500
"""Calls after which a worker is replaced, so slow leaks in parsers stay bounded."""
# The tokenizers library parallelises with rayon; one thread per worker keeps the
# address space small and predictable (each thread brings a malloc arena).
WORKER_ENVIRONMENT = {"TOKENIZERS_PARALLELISM": "false", "RAYON_NUM_THREADS": "1"}


class IsolationError(TrackerError):
    """An isolated call did not return a value."""


class LimitExceeded(IsolationError):
    """The call hit a limit and its worker is gone; ``reason`` is one line for a user."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class DeadlineExceeded(LimitExceeded):
    """The call ran past its wall-clock deadline; its worker was killed."""


class WorkerDied(LimitExceeded):
    """The worker died during the call (CPU or memory limit, or a crash in native code)."""


class RemoteError(IsolationError):
    """The isolated function raised; ``kind`` is the exception's type name."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message


class WorkerUnavailable(IsolationError):
    """No worker process could be started; nothing was evaluated."""


class PoolClosed(IsolationError):
    """The pool no longer takes calls."""


@dataclass(frozen=True)
class Limits:
    """What one worker may use: address space for its life, CPU and wall time per call."""

    memory_bytes: int = 1 * GiB
    cpu_seconds: int = 10
    wall_seconds: float = 5.0


def _worker_main(conn: Connection, memory_bytes: int, preload: tuple[str, ...]) -> None:
    """A worker's whole life: set limits, import, then answer calls until EOF or None."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    os.environ.update(WORKER_ENVIRONMENT)
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    for module in preload:
        __import__(module)
    conn.send(("ready", os.getpid()))
    while True:
        try:
            request = conn.recv()
        except EOFError:  # the parent is gone
            return
        if request is None:
            return
        function, args, cpu_seconds = request
        _limit_cpu(cpu_seconds)
        try:
            reply: tuple[Any, ...] = ("ok", function(*args))
        except BaseException as exc:  # everything the untrusted input provoked goes back
            reply = ("raised", type(exc).__name__, str(exc))
        try:
            conn.send(reply)
        except Exception as exc:  # an unpicklable result is the function's bug
            conn.send(("raised", type(exc).__name__, f"result could not be sent back: {exc}"))


def _limit_cpu(seconds: int) -> None:
    """Soft RLIMIT_CPU at the CPU used so far plus ``seconds`` (the hard limit stays);
    set only when that differs from the soft limit in force (short calls of one budget
    mostly find it set already)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    soft = math.ceil(usage.ru_utime + usage.ru_stime) + seconds
    current, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    if soft != current:
        resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))


@dataclass
class _Worker:
    process: BaseProcess
    conn: Connection
    calls: int = 0
    gone: bool = False
    idle_since: float = 0.0

    @property
    def pid(self) -> int:
        return cast(int, self.process.pid)

    def kill(self) -> None:
        """SIGKILL, reap, release; a worker already disposed of is left as it is."""
        if self.gone:
            return
        self.gone = True
        if self.process.is_alive():
            os.kill(self.pid, signal.SIGKILL)
        self.process.join()
        self.conn.close()
        self.process.close()

    def stop(self) -> None:
        """Ask an idle worker to leave; kill it if it does not within a second."""
        with contextlib.suppress(OSError):
            self.conn.send(None)
        self.process.join(1.0)
        self.kill()

    def death(self) -> str:
        """Why the worker died, for a user: the signal or exit status."""
        self.process.join(1.0)
        code = self.process.exitcode
        if code is None:
            return "worker stopped answering"
        if code < 0:
            name = signal.Signals(-code).name
            return _SIGNAL_REASONS.get(name, f"worker killed by {name}")
        return f"worker exited with status {code}"


_SIGNAL_REASONS = {
    "SIGXCPU": "CPU time limit reached",
    "SIGKILL": "worker killed (out of memory?)",
    "SIGSEGV": "worker crashed (SIGSEGV)",
    "SIGABRT": "worker aborted (a native allocation failed?)",
}


class IsolatedPool:
    """Worker processes that run one call each at a time, under ``limits``.

    ``idle_seconds``: a worker left idle that long is stopped (None: kept until
    the pool closes). For calls that come in bursts and whose worker holds a large
    import (torch), the burst reuses one worker and the quiet time after it does not
    keep the import's memory.
    """

    def __init__(
        self,
        limits: Limits = Limits(),
        max_workers: int = 2,
        preload: Sequence[str] = (),
        idle_seconds: float | None = None,
    ) -> None:
        self.limits = limits
        self.preload = tuple(preload)
        self.idle_seconds = idle_seconds
        self._reaper: threading.Timer | None = None
        self._context = multiprocessing.get_context("forkserver")
        self._slots = threading.BoundedSemaphore(max_workers)
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []
        self._closed = False
        self.started = 0
        self.killed = 0

    def call(
        self,
        function: Callable[..., T],
        *args: Any,
        wall_seconds: float | None = None,
        cpu_seconds: int | None = None,
    ) -> T:
        """``function(*args)`` in a worker; raises IsolationError if no value comes back."""
        wall = self.limits.wall_seconds if wall_seconds is None else wall_seconds
        cpu = self.limits.cpu_seconds if cpu_seconds is None else cpu_seconds
        request = (function, args, cpu)
        self._slots.acquire()
        try:
            worker = self._checkout()
            try:
                try:
                    worker.conn.send(request)
                except (BrokenPipeError, ConnectionResetError):
                    # It died while idle (killed from outside): one fresh worker, one more try.
                    worker.kill()
                    worker = self._start()
                    worker.conn.send(request)
                reply = self._wait(worker, wall)
            except BaseException:
                worker.kill()  # in an unknown state (or already gone): never reused
                raise
            self._checkin(worker)
        finally:
            self._slots.release()
        if reply[0] == "ok":
            return cast(T, reply[1])
        raise RemoteError(reply[1], reply[2])

    def _wait(self, worker: _Worker, wall: float) -> tuple[Any, ...]:
        """The worker's reply, or a LimitExceeded after the worker has been disposed of."""
        if not worker.conn.poll(wall):
            worker.kill()
            with self._lock:
                self.killed += 1
            raise DeadlineExceeded(f"killed after {wall:g}s")
        try:
            return cast(tuple[Any, ...], worker.conn.recv())
        except (EOFError, OSError):
            reason = worker.death()
            worker.kill()
            raise WorkerDied(reason) from None

    def _checkout(self) -> _Worker:
        with self._lock:
            if self._closed:
                raise PoolClosed("the isolation pool is closed")
            while self._idle:
                worker = self._idle.pop()
                if worker.process.is_alive():
                    return worker
                worker.kill()
        return self._start()

    def _checkin(self, worker: _Worker) -> None:
        worker.calls += 1
        # A worker whose peak RSS passed half its address space keeps that memory: replace it.
        peak = _peak_rss_bytes(worker)
        retire = worker.calls >= MAX_CALLS or peak > self.limits.memory_bytes // 2
        with self._lock:
            if not (retire or self._closed):
                worker.idle_since = time.monotonic()
                self._idle.append(worker)
                self._schedule_reaper()
                return
        worker.stop()

    def _schedule_reaper(self) -> None:
        """Arm the timer that stops workers idle past ``idle_seconds`` (lock held)."""
        if self.idle_seconds is None or self._reaper is not None:
            return
        self._reaper = threading.Timer(self.idle_seconds, self._reap)
        self._reaper.daemon = True
        self._reaper.start()

    def _reap(self) -> None:
        assert self.idle_seconds is not None
        cutoff = time.monotonic() - self.idle_seconds
        with self._lock:
            self._reaper = None
            stale = [w for w in self._idle if w.idle_since <= cutoff]
            self._idle = [w for w in self._idle if w.idle_since > cutoff]
            if self._idle:
                self._schedule_reaper()
        for worker in stale:
            worker.stop()

    def _start(self) -> _Worker:
        parent, child = self._context.Pipe()
        process = self._context.Process(
            target=_worker_main,
            args=(child, self.limits.memory_bytes, self.preload),
            name="neurarch-isolated",
            daemon=True,
        )
        process.start()
        child.close()
        worker = _Worker(process, parent)
        with self._lock:
            self.started += 1
        if not parent.poll(START_SECONDS):
            worker.kill()
            raise WorkerUnavailable(f"worker did not start within {START_SECONDS:g}s")
        try:
            parent.recv()
        except (EOFError, OSError):
            reason = worker.death()
            worker.kill()
            raise WorkerUnavailable(f"worker failed to start: {reason}") from None
        return worker

    def worker_pids(self) -> list[int]:
        """The idle workers' process ids (for checks that none are left behind)."""
        with self._lock:
            return [w.pid for w in self._idle]

    def close(self) -> None:
        """Stop every idle worker; busy ones stop when their call returns."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
            if self._reaper is not None:
                self._reaper.cancel()
                self._reaper = None
        for worker in idle:
            worker.stop()

    def __enter__(self) -> IsolatedPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _peak_rss_bytes(worker: _Worker) -> int:
    """The worker's peak resident set, from /proc (0 where that is not readable)."""
    try:
        with open(f"/proc/{worker.pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


_pools_lock = threading.Lock()
_pools: dict[str, tuple[int, IsolatedPool]] = {}


def process_pool(name: str, make: Callable[[], IsolatedPool]) -> IsolatedPool:
    """The process's pool called ``name`` (like a thread pool, one per process and job).

    Made by ``make`` on first use and closed at exit. A forked child gets a pool
    of its own rather than its parent's workers.
    """
    with _pools_lock:
        held = _pools.get(name)
        if held is not None and held[0] == os.getpid():
            return held[1]
        pool = make()
        _pools[name] = (os.getpid(), pool)
        atexit.register(pool.close)
        return pool


def default_pool() -> IsolatedPool:
    """The process's pool for upstream content, with the differs' modules preloaded."""
    return process_pool(
        "content",
        lambda: IsolatedPool(
            max_workers=min(4, os.cpu_count() or 1),
            preload=("tracker.diff.sandbox", "tracker.diff.tokenizer"),
        ),
    )


__all__ = [
    "DeadlineExceeded",
    "IsolatedPool",
    "IsolationError",
    "LimitExceeded",
    "Limits",
    "PoolClosed",
    "RemoteError",
    "WorkerDied",
    "WorkerUnavailable",
    "default_pool",
    "process_pool",
]
