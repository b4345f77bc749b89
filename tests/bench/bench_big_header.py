"""A repo whose model.safetensors has a huge header of tiny tensors, then ordinary revisions.

Run: ``.venv/bin/python tests/bench/bench_big_header.py [--tensors N] [--later K]``
(defaults 400,000 tensors, a 23 MB header, and 3 later revisions; about a minute
before the manifest caps, seconds after). 1,700,000 tensors is the ~96 MB header
of the report (under the reader's 100 MiB limit).

The emulator runs in this process; the worker runs in a child process (a real
``Worker`` over SQLite), so the child's peak RSS is its own. Printed: the
child's peak RSS, the seconds each revision after the big one took (from the
recorded ``processed_at`` of consecutive commits), and the bytes the manifest
costs each revision in the database (inline JSON per row before; a 64-character
key per row and one compressed blob per distinct manifest after) and the file.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sqlite3
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT))

REPO = "bench/big-header"


def child(endpoint: str, url: str) -> None:
    """Track and check the repo until nothing is due (runs in the child process)."""
    from storage import open_database
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
        track(session, REPO, now=datetime.now(UTC))
    worker = Worker(
        database,
        Hub(connect(HubSettings(endpoint)), timeout=120.0),
        HeadProbe(connect(HubSettings(endpoint))),
        owner="bench/0",
        policy=WorkerPolicy(lease_s=600.0),
        metrics=DaemonMetrics(),
        clock=lambda: datetime.now(UTC),
    )
    while worker.run_once():
        pass
    database.close()
    # VmHWM is this process image's own peak (ru_maxrss would count the forking parent too).
    status = Path("/proc/self/status").read_text()
    peak_kb = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM"))
    print(json.dumps({"peak_rss_kb": peak_kb}))


def manifest_bytes(path: Path) -> list[int]:
    """Bytes each snapshot row's manifest costs, oldest first (shared blobs counted once)."""
    with sqlite3.connect(path) as db:
        columns = {row[1] for row in db.execute("PRAGMA table_info(snapshots)")}
        keyed = "manifest_key" in columns
        rows = db.execute(
            "SELECT length(CAST(s.manifest AS BLOB)), "
            + ("s.manifest_key" if keyed else "NULL")
            + " FROM snapshots s JOIN revisions r ON r.id = s.revision_pk ORDER BY r.id"
        ).fetchall()
        seen: set[str] = set()
        out = []
        for inline, key in rows:
            cost = (inline or 0) + (len(key) if key else 0)
            if key and key not in seen:
                seen.add(key)
                cost += db.execute(
                    "SELECT stored_size FROM blobs WHERE content_key = ?", (key,)
                ).fetchone()[0]
            out.append(cost)
        return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tensors", type=int, default=400_000)
    parser.add_argument("--later", type=int, default=3)
    parser.add_argument("--child", nargs=2, metavar=("ENDPOINT", "URL"))
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return 0

    from tests.fixtures.hostile import llama_config, tiny_tensors_safetensors
    from tracker.hubsim import HubEmulator

    hub = HubEmulator(None, seed=1)
    hub.start()
    start = datetime(2025, 1, 1, tzinfo=UTC)
    hub.publish(REPO, {"config.json": llama_config()}, title="initial", date=start)
    weights = tiny_tensors_safetensors(args.tensors)
    header_mb = (len(weights) - 2 * args.tensors) / 1e6
    hub.publish(REPO, {"model.safetensors": weights}, title="big header", date=start)
    del weights
    for index in range(args.later):
        hub.publish(
            REPO,
            {"config.json": llama_config(note=f"later {index}")},
            title=f"later {index}",
            date=start + timedelta(minutes=index + 1),
        )
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.db"
        began = time.monotonic()
        done = subprocess.run(
            [sys.executable, __file__, "--child", hub.endpoint, f"sqlite:///{path}"],
            check=True,
            capture_output=True,
            text=True,
        )
        wall = time.monotonic() - began
        hub.stop()
        rss_mb = json.loads(done.stdout.strip().splitlines()[-1])["peak_rss_kb"] / 1024
        with sqlite3.connect(path) as db:
            stamps = [
                datetime.fromisoformat(row[0])
                for row in db.execute("SELECT processed_at FROM revisions ORDER BY id")
            ]
        steps = [(b - a).total_seconds() for a, b in itertools.pairwise(stamps)]
        later = steps[-args.later :]
        costs = manifest_bytes(path)
        size_mb = path.stat().st_size / 1e6
    print(
        json.dumps(
            {
                "tensors": args.tensors,
                "header_mb": round(header_mb, 1),
                "worker_peak_rss_mb": round(rss_mb),
                "wall_s": round(wall, 1),
                "seconds_per_later_revision": [round(s, 2) for s in later],
                "manifest_bytes_per_revision": costs,
                "database_mb": round(size_mb, 1),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
