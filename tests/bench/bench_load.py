"""p50/p99 of /v1/query and /feeds/all.atom idle and during a whole-corpus backfill, per layout.

Run: ``.venv/bin/python tests/bench/bench_load.py [--clients 4] [--requests 150]``.

The Hub emulator (``neurarch-trace hubsim``) serves the recorded corpus
(../shared/hub-corpus) from its own process, at nice 10: it stands in for
the remote Hub, whose CPU is not the daemon's. For each layout a fresh SQLite
file is populated with a few repos (the queried one among them, so both
endpoints answer with real content from the first request), then the daemon
is started on it with every corpus repo configured, which starts the
backfill of the rest:

- ``all``: ``neurarch-trace serve`` (the default ``--role all``): the check
  workers in one process, the HTTP app in another;
- ``single``: the layout before the roles existed, rebuilt here from the
  Daemon's own methods: uvicorn in the main thread and the workers on
  threads of the same process.

A bounded load generator (``--clients`` threads, each with a keep-alive
client, ``--requests`` requests each, loopback only) measures each
endpoint while /healthz says the backfill is running, then again once it
says done (idle). Goal: p99 during the backfill within 2x of idle.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT))

import httpx  # noqa: E402

CORPUS = REPO_ROOT.parent / "shared" / "hub-corpus"
QUERIED = "mistralai/Mistral-7B-Instruct-v0.3"
POPULATED = 6
"""Repos recorded before the daemon starts (the queried one first)."""
QUERY = {"package": {"purl": f"pkg:huggingface/{QUERIED}"}}
ENDPOINTS = (
    ("POST /v1/query", "POST", "/v1/query"),
    ("GET /feeds/all.atom", "GET", "/feeds/all.atom"),
)


@dataclass(frozen=True)
class Figures:
    p50_ms: float
    p99_ms: float
    count: int


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_http(url: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            httpx.get(url, timeout=2)
            return
        except httpx.HTTPError:
            time.sleep(0.2)
    raise SystemExit(f"{url} did not answer within {timeout_s:.0f}s")


def load(base: str, method: str, path: str, clients: int, requests: int) -> Figures:
    """``clients`` threads, ``requests`` each, one keep-alive connection per thread."""
    latencies: list[list[float]] = [[] for _ in range(clients)]

    def worker(index: int) -> None:
        with httpx.Client(base_url=base, timeout=60) as client:
            for _ in range(requests):
                started = time.perf_counter()
                response = client.post(path, json=QUERY) if method == "POST" else client.get(path)
                latencies[index].append(time.perf_counter() - started)
                if response.status_code != 200:
                    raise SystemExit(f"{path}: HTTP {response.status_code}")

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    every = sorted(x * 1000 for per in latencies for x in per)
    cuts = statistics.quantiles(every, n=100)
    return Figures(p50_ms=cuts[49], p99_ms=cuts[98], count=len(every))


def health(base: str) -> dict[str, object]:
    body: dict[str, object] = httpx.get(f"{base}/healthz", timeout=30).json()
    return body


def write_config(path: Path, url: str, endpoint: str, repos: list[str], port: int) -> Path:
    lines = "\n".join(f'[[repos]]\nid = "{repo}"\n' for repo in repos)
    path.write_text(
        f'[storage]\ndatabase_url = "{url}"\n\n[hub]\nendpoint = "{endpoint}"\n\n'
        f'[daemon]\ninterval = "1h"\nrequests_per_second = 200\n\n'
        f'[server]\nhost = "127.0.0.1"\nport = {port}\n\n{lines}',
        encoding="utf-8",
    )
    return path


def populate(url: str, endpoint: str, repos: list[str]) -> None:
    """Record ``repos`` (with advisories) before the daemon starts: content to serve at once."""
    from storage import open_database
    from tracker.daemon import publisher
    from tracker.hub.api import connect
    from tracker.hub.client import Hub
    from tracker.hub.discovery import HeadProbe
    from tracker.schedule.leases import track
    from tracker.schedule.metrics import DaemonMetrics
    from tracker.schedule.worker import Worker, WorkerPolicy
    from tracker.settings import HubSettings

    database = open_database(url)
    database.migrate()
    with database.session() as session:
        for repo_id in repos:
            track(session, repo_id, now=datetime.now(UTC))
    worker = Worker(
        database,
        Hub(connect(HubSettings(endpoint))),
        HeadProbe(connect(HubSettings(endpoint))),
        owner="bench/populate",
        policy=WorkerPolicy(interval_s=3600.0),
        metrics=DaemonMetrics(),
        clock=lambda: datetime.now(UTC),
        publish=publisher(lambda: datetime.now(UTC)),
    )
    while worker.run_once():
        pass
    database.close()


def single_process_daemon(config: Path) -> None:
    """The pre-roles layout: the app served in the main thread, the workers on threads."""
    from tracker.daemon import Daemon, publisher
    from tracker.settings import Settings

    daemon = Daemon.open(Settings.load(config))
    daemon.track_configured()
    app = daemon.build_app()
    daemon.start_background(publisher(lambda: datetime.now(UTC)))
    daemon.serve(app)


def start_daemon(layout: str, config: Path, log: Path) -> subprocess.Popen[bytes]:
    if layout == "all":
        command = [sys.executable, "-m", "tracker.cli", "--config", str(config), "serve"]
    else:
        command = [sys.executable, __file__, "--single-process-daemon", str(config)]
    env = {**os.environ, "HF_HUB_DISABLE_TELEMETRY": "1"}
    env.pop("NEURARCH_DATABASE_URL", None)
    with log.open("ab") as handle:
        return subprocess.Popen(
            command, cwd=REPO_ROOT, env=env, stdout=handle, stderr=subprocess.STDOUT
        )


def measure(
    layout: str, endpoint: str, repos: list[str], args: argparse.Namespace
) -> dict[str, Figures]:
    figures: dict[str, Figures] = {}
    scratch = Path(tempfile.mkdtemp(prefix=f"bench-load-{layout}-"))
    try:
        url = f"sqlite:///{scratch / 'bench.db'}"
        first = [QUERIED, *[r for r in repos if r != QUERIED][: POPULATED - 1]]
        populate(url, endpoint, first)
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        config = write_config(scratch / "daemon.toml", url, endpoint, repos, port)
        began = time.monotonic()
        daemon = start_daemon(layout, config, scratch / "daemon.log")
        try:
            wait_http(f"{base}/healthz")
            for label, method, path in ENDPOINTS:
                before = health(base)["backfill_pending"]
                figures[f"{label} backfill"] = load(base, method, path, args.clients, args.requests)
                after = health(base)
                if after["backfill"] == "done":
                    print(f"  ({layout}: the backfill ended while measuring {label})")
                print(
                    f"  {layout}: {label} measured while {before} -> {after['backfill_pending']} repos pending"
                )
            while health(base)["backfill"] != "done":
                time.sleep(1)
            backfill_s = time.monotonic() - began
            print(
                f"  {layout}: backfill of {len(repos) - POPULATED} repos done in {backfill_s:.0f}s"
            )
            for label, method, path in ENDPOINTS:
                load(base, method, path, args.clients, 20)  # warm the idle caches, as idle means
                figures[f"{label} idle"] = load(base, method, path, args.clients, args.requests)
        finally:
            daemon.send_signal(signal.SIGTERM)
            code = daemon.wait(timeout=120)
            if code != 0:
                print((scratch / "daemon.log").read_text(errors="replace")[-3000:])
                raise SystemExit(f"{layout}: daemon exited {code}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--requests", type=int, default=150, help="per client and endpoint")
    parser.add_argument("--layouts", default="all,single")
    parser.add_argument("--single-process-daemon", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.single_process_daemon:
        single_process_daemon(args.single_process_daemon)
        return 0
    from tracker.hubsim import HubEmulator

    repos = HubEmulator(CORPUS).repo_ids()
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    hubsim = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tracker.cli",
            "hubsim",
            "--corpus",
            str(CORPUS),
            "--port",
            str(port),
        ],
        cwd=REPO_ROOT,
        stdout=subprocess.DEVNULL,
        preexec_fn=lambda: os.nice(10),
    )
    try:
        wait_http(f"{endpoint}/api/models")
        print(
            f"corpus: {len(repos)} repos; {args.clients} clients x {args.requests} requests "
            f"per endpoint and phase; {os.cpu_count()} CPUs"
        )
        results = {
            layout: measure(layout, endpoint, repos, args) for layout in args.layouts.split(",")
        }
    finally:
        hubsim.terminate()
        hubsim.wait(30)
    print(f"\n{'':34s}" + "".join(f"{layout + ' p50/p99 ms':>22s}" for layout in results))
    for label, _, _ in ENDPOINTS:
        for phase in ("idle", "backfill"):
            key = f"{label} {phase}"
            cells = "".join(
                f"{results[layout][key].p50_ms:10.1f} {results[layout][key].p99_ms:10.1f} "
                for layout in results
            )
            print(f"{key:34s}{cells}")
        ratios = "".join(
            f"{results[layout][label + ' backfill'].p99_ms / results[layout][label + ' idle'].p99_ms:21.2f}x"
            for layout in results
        )
        print(f"{label + ' p99 backfill/idle':34s}{ratios}   (goal <= 2x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
