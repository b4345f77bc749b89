"""Requests per second and p99 latency of /v1/query and a feed, beside a bare endpoint.

Run: ``.venv/bin/python tests/bench/bench_feeds.py [--seconds 5] [--clients 8]``.

The demo histories are backfilled into a SQLite file and published, then one
uvicorn process serves the real app (with one extra router holding a bare
``GET /bench/bare`` that returns ``{}``) on a free 127.0.0.1 port. A bounded
load generator (``--clients`` threads, each with its own keep-alive httpx
client, for ``--seconds`` per endpoint) measures each endpoint in the same
run. Goal: /v1/query and the feed at >= 50% of the bare endpoint's rate.
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT))

import httpx  # noqa: E402
import uvicorn  # noqa: E402
from fastapi import APIRouter  # noqa: E402

from feeds import PublishSettings, create_app  # noqa: E402
from storage import open_database  # noqa: E402
from tests.daemon.harness import free_port  # noqa: E402
from tests.feeds.populate import populate  # noqa: E402

MAX_REQUESTS_PER_CLIENT = 20_000
QUERY = {"package": {"purl": "pkg:huggingface/neurarch-demo/llama2-7b"}}


def bare_router() -> APIRouter:
    router = APIRouter()

    @router.get("/bench/bare")
    def bare() -> dict[str, str]:
        return {}

    return router


def serve(url: str, port: int) -> None:
    database = open_database(url)
    app = create_app(
        database,
        settings=PublishSettings(base_url=f"http://127.0.0.1:{port}"),
        routers=[bare_router()],
    )
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


def wait_up(base: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base}/bench/bare").status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.1)
    raise SystemExit("server did not start")


def load(base: str, method: str, path: str, seconds: float, clients: int) -> tuple[float, float]:
    """(requests per second, p99 latency in ms) of ``clients`` concurrent loops."""
    latencies: list[list[float]] = [[] for _ in range(clients)]
    stop = time.monotonic() + seconds

    def worker(index: int) -> None:
        with httpx.Client(base_url=base, timeout=30) as client:
            for _ in range(MAX_REQUESTS_PER_CLIENT):
                started = time.perf_counter()
                response = client.post(path, json=QUERY) if method == "POST" else client.get(path)
                latencies[index].append(time.perf_counter() - started)
                if response.status_code != 200:
                    raise SystemExit(f"{path}: HTTP {response.status_code}")
                if time.monotonic() > stop:
                    return

    began = time.monotonic()
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - began
    every = sorted(x for per in latencies for x in per)
    p99 = statistics.quantiles(every, n=100)[98] if len(every) > 1 else every[0]
    return len(every) / elapsed, p99 * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--clients", type=int, default=8)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'bench.db'}"
        database = open_database(url)
        database.migrate()
        advisories = populate(database)
        database.close()
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        server = multiprocessing.get_context("spawn").Process(target=serve, args=(url, port))
        server.start()
        try:
            wait_up(base)
            print(f"{len(advisories)} advisories; {args.clients} clients, {args.seconds:g} s each")
            rows = [
                ("bare GET /bench/bare", "GET", "/bench/bare"),
                ("POST /v1/query", "POST", "/v1/query"),
                ("GET /feeds/all.atom", "GET", "/feeds/all.atom"),
                ("GET model feed.rss", "GET", "/models/neurarch-demo/llama2-7b/feed.rss"),
            ]
            bare_rate = 0.0
            for label, method, path in rows:
                load(base, method, path, 0.5, args.clients)
                rate, p99 = load(base, method, path, args.seconds, args.clients)
                bare_rate = bare_rate or rate
                print(
                    f"{label:28s} {rate:8.0f} req/s  p99 {p99:7.1f} ms  "
                    f"{rate / bare_rate:6.0%} of bare (goal >= 50%)"
                )
        finally:
            server.terminate()
            server.join(10)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
