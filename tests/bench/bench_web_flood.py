"""/healthz while anonymous clients flood the plan API and a model page; the web process's RSS.

Run: ``.venv/bin/python tests/bench/bench_web_flood.py [--seconds 30] [--plan-clients 4]
[--page-clients 16] [--badge-clients 0]``.

A fresh SQLite file is filled the way the daemon fills it (the demo histories
through the Hub emulator, tests/feeds/populate.py), then ``neurarch-trace serve
--role web`` serves it on a loopback port, with the launch settings a user gets.
For ``--seconds`` of load:

- ``--plan-clients`` threads each post, in a loop, a 275-byte config.json with
  ``num_hidden_layers: 10000`` to ``POST /api/v1/plan`` (about 0.4 s of CPU and a
  4.9 MB Plan when computed inline), as anonymous callers;
- ``--page-clients`` threads each ask for the model page in a loop;
- ``--badge-clients`` threads each ask for the model's badge in a loop;
- one prober asks ``/healthz`` every 250 ms (10 s timeout), as a load balancer.

It prints the probes' p50/p99/max and how many took over 1 s (goal: none),
the answers each flood got by status, and the peak RSS (VmHWM) of the web
process and of the largest process below it (plan workers). Everything stays
on 127.0.0.1; every thread stops at the deadline.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT))

import httpx  # noqa: E402

from tests.bench.bench_load import wait_http  # noqa: E402
from tests.daemon.harness import free_port  # noqa: E402

MODEL = "neurarch-demo/llama2-7b"
HEAVY_CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 11008,
    "num_hidden_layers": 10000,
    "num_attention_heads": 32,
    "num_key_value_heads": 32,
    "vocab_size": 32000,
    "max_position_embeddings": 4096,
    "torch_dtype": "float16",
}
PROBE_EVERY_S = 0.25


def build_site(url: str) -> None:
    from storage import open_database
    from tests.feeds.populate import populate

    database = open_database(url)
    database.migrate()
    populate(database)
    database.close()


def peak_rss(pid: int) -> int:
    """VmHWM of ``pid`` in bytes (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def descendants(pid: int) -> list[int]:
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children", encoding="ascii") as handle:
                children = [int(c) for c in handle.read().split()]
        except OSError:
            continue
        for child in children:
            found += [child, *descendants(child)]
    return found


class Flood:
    """Threads that repeat one request until ``stop`` is set, counting answers by status."""

    def __init__(self, base: str, stop: threading.Event) -> None:
        self.base = base
        self.stop = stop
        self.answers: collections.Counter[str] = collections.Counter()
        self.lock = threading.Lock()
        self.threads: list[threading.Thread] = []

    def start(self, label: str, clients: int, send: str) -> None:
        body = json.dumps(HEAVY_CONFIG).encode()

        def loop() -> None:
            with httpx.Client(base_url=self.base, timeout=60) as client:
                while not self.stop.is_set():
                    try:
                        if send == "plan":
                            response = client.post(
                                "/api/v1/plan",
                                content=body,
                                headers={"content-type": "application/json"},
                            )
                        else:
                            response = client.get(send)
                        outcome = str(response.status_code)
                        if response.status_code == 429:
                            wait = float(response.headers.get("retry-after", "1"))
                            self.stop.wait(min(wait, 5.0))
                    except httpx.HTTPError as exc:
                        outcome = type(exc).__name__
                    with self.lock:
                        self.answers[f"{label} {outcome}"] += 1

        for _ in range(clients):
            thread = threading.Thread(target=loop, daemon=True)
            thread.start()
            self.threads.append(thread)

    def join(self) -> None:
        for thread in self.threads:
            thread.join(60)


def probe(base: str, stop: threading.Event, latencies: list[float], failures: list[str]) -> None:
    with httpx.Client(base_url=base, timeout=10) as client:
        while not stop.is_set():
            started = time.perf_counter()
            try:
                response = client.get("/healthz")
                if response.status_code != 200:
                    failures.append(f"HTTP {response.status_code}")
            except httpx.HTTPError as exc:
                failures.append(type(exc).__name__)
            latencies.append(time.perf_counter() - started)
            stop.wait(PROBE_EVERY_S)


def run(args: argparse.Namespace) -> int:
    scratch = Path(tempfile.mkdtemp(prefix="bench-web-flood-"))
    try:
        url = f"sqlite:///{scratch / 'site.db'}"
        built = time.monotonic()
        build_site(url)
        print(f"site built in {time.monotonic() - built:.0f}s; {os.cpu_count()} CPUs")
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        config = scratch / "daemon.toml"
        config.write_text(
            f'[storage]\ndatabase_url = "{url}"\n\n[server]\nhost = "127.0.0.1"\nport = {port}\n',
            encoding="utf-8",
        )
        env = {**os.environ, "HF_HUB_DISABLE_TELEMETRY": "1"}
        env.pop("NEURARCH_DATABASE_URL", None)
        log = (scratch / "web.log").open("wb")
        web = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tracker.cli",
                "--config",
                str(config),
                "serve",
                "--role",
                "web",
            ],
            cwd=REPO_ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            wait_http(f"{base}/healthz")
            httpx.get(f"{base}/models/{MODEL}", timeout=30).raise_for_status()
            return measure(base, web.pid, args)
        finally:
            web.send_signal(signal.SIGTERM)
            try:
                web.wait(timeout=60)
            except subprocess.TimeoutExpired:
                web.kill()
                web.wait()
            log.close()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def measure(base: str, pid: int, args: argparse.Namespace) -> int:
    stop = threading.Event()
    flood = Flood(base, stop)
    flood.start("plan", args.plan_clients, "plan")
    flood.start("page", args.page_clients, f"/models/{MODEL}")
    flood.start("badge", args.badge_clients, f"/models/{MODEL}/badge.json")
    latencies: list[float] = []
    failures: list[str] = []
    prober = threading.Thread(target=probe, args=(base, stop, latencies, failures))
    prober.start()
    below_peak = 0
    deadline = time.monotonic() + args.seconds
    while time.monotonic() < deadline:
        below_peak = max([below_peak, *(peak_rss(p) for p in descendants(pid))])
        time.sleep(0.5)
    web_peak = peak_rss(pid)
    stop.set()
    prober.join(30)
    flood.join()
    ms = sorted(x * 1000 for x in latencies)
    cuts = statistics.quantiles(ms, n=100, method="inclusive") if len(ms) > 1 else [ms[0]] * 99
    slow = sum(1 for x in ms if x > 1000)
    print(
        f"load {args.seconds:.0f}s: {args.plan_clients} plan clients "
        f"(num_hidden_layers {HEAVY_CONFIG['num_hidden_layers']}), "
        f"{args.page_clients} page clients, {args.badge_clients} badge clients"
    )
    print(
        f"/healthz: {len(ms)} probes, p50 {cuts[49]:.0f} ms, p99 {cuts[98]:.0f} ms, "
        f"max {ms[-1]:.0f} ms, {slow} over 1 s, {len(failures)} failed {sorted(set(failures))}"
    )
    for key, count in sorted(flood.answers.items()):
        print(f"  {key}: {count}")
    print(
        f"peak RSS: web process {web_peak / 2**20:.0f} MiB, "
        f"largest process below it {below_peak / 2**20:.0f} MiB"
    )
    print(f"goal: every probe under 1 s -> {'met' if slow == 0 and not failures else 'NOT met'}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--plan-clients", type=int, default=4)
    parser.add_argument("--page-clients", type=int, default=16)
    parser.add_argument("--badge-clients", type=int, default=0)
    return run(parser.parse_args())


if __name__ == "__main__":
    raise SystemExit(main())
