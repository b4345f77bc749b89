"""How ``serve`` lays its work over OS processes: the web role, the worker role, or both.

``web``
    the HTTP app (pages, feeds, OSV API, the webhook receiver, which only
    writes the inbox table, ``/healthz``, ``/metrics``) over the shared
    database. No ticker, no check workers, no leases, no Hub requests.
``worker``
    the ticker (inbox drain, discovery, alert delivery) and the check
    workers. No listener: nothing of it is reached over HTTP.
``all`` (the default)
    the worker role in this process and the web role in a child process
    started with ``multiprocessing``'s spawn method, so CPU-bound checks
    (diffing, estimating, rendering templates) never hold the interpreter
    lock a request is waiting for, and a repo whose check hogs its process
    cannot stall ``/healthz``.

In ``all`` the parent binds the listening socket before anything starts (a
port in use is reported at once, as one line, and port 0 is resolved) and
hands it to the child. Two pipes join the processes:

- the *control* pipe: the child blocks reading it, so when the parent is
  gone (even after ``kill -9``) the child sees end-of-file, says so and
  exits 1 instead of serving a database nobody updates;
- the *bridge* pipe: the child's ``/metrics`` asks the parent for its
  registry (check counters, Hub responses, queue depth), so one scrape still
  shows the whole instance.

The parent forwards SIGTERM/SIGINT to the child, waits for it, stops its
workers and exits 0; if the child dies first, or every worker thread does,
it stops the other half and raises ``ServeFailed``.
"""

from __future__ import annotations

import itertools
import json
import logging
import multiprocessing
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from enum import StrEnum
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from types import FrameType

from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from storage import open_database
from tracker.daemon import Daemon, publisher
from tracker.errors import TrackerError
from tracker.settings import DaemonConfig, Settings

log = logging.getLogger("neurarch.roles")

CHILD_STOP_S = 30.0
"""How long the parent waits for the web child after forwarding SIGTERM, then kills it."""
BRIDGE_TIMEOUT_S = 5.0
"""How long the child's /metrics waits for the parent's registry before answering without it."""
WATCH_S = 0.5
"""How often the parent looks at its child and its worker threads."""
BACKLOG = 2048
"""Pending connections the kernel queues for us (uvicorn's default backlog)."""
WORKER_NICENESS = 10
"""How much lower the worker process's CPU priority is than the web child's, under ``all``:
on a machine with few cores the kernel then runs a waiting request before more check work."""
LOG_FORMAT = "%(asctime)s %(name)s %(levelname)s %(message)s"


class Role(StrEnum):
    """What one ``serve`` process runs."""

    WEB = "web"
    WORKER = "worker"
    ALL = "all"


class ServeFailed(TrackerError):
    """A serving process could not start or died (one half of ``--role all``, every worker)."""


class CannotListen(ServeFailed):
    """The HTTP listener could not be bound (address in use, not ours, unknown host)."""


def bind_listener(host: str, port: int) -> socket.socket:
    """A listening TCP socket on host:port (port 0: any free one), or CannotListen.

    Made from getaddrinfo's (family, type, proto) as asyncio's own
    create_server does: asyncio (CPython 3.11 Lib/asyncio/base_events.py, _set_nodelay)
    turns Nagle off (TCP_NODELAY) only on sockets whose proto is
    IPPROTO_TCP, and a response written in two parts would otherwise wait
    for the client's delayed ACK (40 ms on Linux).
    """
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP
        )[0]
        sock = socket.socket(family, kind, proto)
    except OSError as exc:
        raise CannotListen(f"cannot serve on {host}:{port}: {exc.strerror or exc}") from None
    try:
        # As uvicorn's Config.bind_socket (uvicorn 0.55 uvicorn/config.py): restart without waiting.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(BACKLOG)
    except OSError as exc:
        sock.close()
        raise CannotListen(f"cannot serve on {host}:{port}: {exc.strerror or exc}") from None
    return sock


def listening_url(sock: socket.socket) -> str:
    """The ``http://`` URL of the socket's bound address (IPv6 in brackets), port 0 resolved."""
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def say(line: str) -> None:
    print(line, flush=True)


def serve(daemon: Daemon, role: Role, announce: Callable[[str], None] = say) -> None:
    """Run ``role`` until SIGTERM/SIGINT; ``announce`` gets one line saying where and what."""
    config = daemon.config
    where = f"{daemon.database.dialect}, instance {daemon.instance}"
    if role is Role.WORKER:
        announce(f"neurarch-trace worker running ({where}, {config.workers} workers, no port)")
        run_worker(daemon)
        return
    sock = bind_listener(config.host, config.port)
    url = listening_url(sock)
    if role is Role.WEB:
        announce(f"neurarch-trace serving on {url} (web only, {where})")
        run_web(daemon, sock)
        return
    announce(f"neurarch-trace serving on {url} ({where}, {config.workers} workers)")
    run_all(daemon, sock)


def run_web(daemon: Daemon, sock: socket.socket) -> None:
    """The web role in this process until SIGTERM/SIGINT: no workers, no leases."""
    daemon.role = Role.WEB.value
    daemon.metrics.watch_storage(daemon.database, daemon.clock)
    app = daemon.build_app()
    try:
        daemon.serve_http(app, sock)
    finally:
        sock.close()
        daemon.database.close()


def run_worker(daemon: Daemon) -> None:
    """The worker role in this process until SIGTERM/SIGINT; no listener."""
    daemon.role = Role.WORKER.value
    daemon.start_background(publisher(daemon.clock))
    try:
        with stop_on_signals(daemon):
            while not daemon.stop_event.wait(WATCH_S):
                if daemon.config.workers and not daemon.workers_alive():
                    raise ServeFailed("every check worker stopped; see the log above")
    finally:
        daemon.stop()


def run_all(daemon: Daemon, sock: socket.socket) -> None:
    """Workers here, the web role in a spawned child on ``sock``, until a signal or a death."""
    daemon.role = Role.ALL.value
    child, control, bridge = spawn_web(daemon.settings, daemon.config, sock, daemon.instance)
    sock.close()  # the child holds it now: if the child dies, the port must not stay open here
    lower_priority()
    answering = threading.Thread(
        target=answer_metrics, args=(bridge, daemon), name="metrics-bridge", daemon=True
    )
    try:
        daemon.start_background(publisher(daemon.clock))
        answering.start()
        with stop_on_signals(daemon):
            failure = watch(daemon, child)
    finally:
        stop_child(child)
        control.close()
        bridge.close()
        daemon.stop()
    if failure:
        raise ServeFailed(failure)


def lower_priority() -> None:
    """Yield the CPU to the web child (spawned before, so it keeps the normal priority)."""
    try:
        os.nice(WORKER_NICENESS)
    except (AttributeError, OSError) as exc:  # no nice() on this platform, or not permitted
        log.warning(json.dumps({"event": "nice_failed", "error": str(exc)}))


def watch(daemon: Daemon, child: BaseProcess) -> str | None:
    """Wait for a stop signal (None) or for one half to die (what died)."""
    while not daemon.stop_event.wait(WATCH_S):
        if not child.is_alive():
            return (
                f"the web process (pid {child.pid}) exited with status {child.exitcode}; "
                "stopped the workers"
            )
        if daemon.config.workers and not daemon.workers_alive():
            return "every check worker stopped; stopped the web process"
    return None


def spawn_web(
    settings: Settings, config: DaemonConfig, sock: socket.socket, instance: str
) -> tuple[BaseProcess, Connection, Connection]:
    """Start the web child on ``sock``; the child, the control pipe's end and the bridge's."""
    context = multiprocessing.get_context("spawn")
    watch_end, control = context.Pipe(duplex=False)
    bridge, child_bridge = context.Pipe(duplex=True)
    child = context.Process(
        target=web_child,
        args=(settings, config, sock, instance, watch_end, child_bridge),
        name="neurarch-web",
    )
    child.start()
    # Only the child may hold these ends: our copies would hide its death (and ours).
    watch_end.close()
    child_bridge.close()
    return child, control, bridge


def stop_child(child: BaseProcess) -> None:
    """Forward SIGTERM; kill the child if it has not exited within CHILD_STOP_S."""
    if child.is_alive():
        child.terminate()
        child.join(CHILD_STOP_S)
    if child.is_alive():
        log.error(json.dumps({"event": "web_killed", "pid": child.pid}))
        child.kill()
        child.join()


@contextmanager
def stop_on_signals(daemon: Daemon) -> Iterator[None]:
    """SIGTERM and SIGINT set the daemon's stop event while the block runs."""
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}

    def on_signal(signum: int, frame: FrameType | None) -> None:
        daemon.stop_event.set()

    for sig in previous:
        signal.signal(sig, on_signal)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def answer_metrics(bridge: Connection, daemon: Daemon) -> None:
    """Parent side of the bridge: answer each numbered request with this registry's metrics."""
    while True:
        try:
            asked = bridge.recv()
            bridge.send((asked, list(daemon.metrics.registry.collect())))
        except (EOFError, OSError):
            return


class BridgedMetrics(Collector):
    """Child side of the bridge: the parent's metrics, collected at scrape time."""

    def __init__(self, bridge: Connection, timeout_s: float = BRIDGE_TIMEOUT_S) -> None:
        self._bridge = bridge
        self._timeout_s = timeout_s
        self._lock = threading.Lock()
        self._numbers = itertools.count(1)

    def describe(self) -> list[Metric]:
        return []  # registered without a name check: the names are the parent's

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            families = self._ask()
        yield from families

    def _ask(self) -> list[Metric]:
        number = next(self._numbers)
        deadline = time.monotonic() + self._timeout_s
        try:
            self._bridge.send(number)
            while self._bridge.poll(max(deadline - time.monotonic(), 0.0)):
                answered, families = self._bridge.recv()
                if answered == number:  # a late answer to an earlier scrape is dropped
                    return list(families)
        except (EOFError, OSError):
            pass
        return []


def web_child(
    settings: Settings,
    config: DaemonConfig,
    sock: socket.socket,
    instance: str,
    watch_end: Connection,
    bridge: Connection,
) -> None:
    """Entry point of the spawned web process; exits 1 if the worker process goes away."""
    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT)
    registry = CollectorRegistry()
    registry.register(BridgedMetrics(bridge))
    # The parent migrated the schema before spawning us.
    daemon = Daemon(
        settings=settings,
        config=config,
        database=open_database(settings.storage.database_url),
        instance=instance,
        role=Role.WEB.value,
        metrics_registry=registry,
    )
    orphaned = threading.Event()

    def watch_parent() -> None:
        with suppress(EOFError, OSError):
            watch_end.recv()  # nothing is ever sent: this returns when the parent is gone
        if not daemon.stop_event.is_set():
            orphaned.set()
            print("neurarch-trace web: the worker process is gone; stopping", file=sys.stderr)
            daemon.stop_serving()

    app = daemon.build_app()
    watcher = threading.Thread(target=watch_parent, name="watch-parent", daemon=True)
    try:
        daemon.serve_http(app, sock, on_serving=watcher.start)
    finally:
        sock.close()
        daemon.database.close()
    sys.exit(1 if orphaned.is_set() else 0)


__all__ = [
    "CannotListen",
    "Role",
    "ServeFailed",
    "bind_listener",
    "listening_url",
    "run_all",
    "run_web",
    "run_worker",
    "serve",
    "web_child",
]
