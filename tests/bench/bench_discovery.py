"""Requests per idle discovery cycle over 10,000 tracked repos, and backfill throughput.

Run: ``python tests/bench/bench_discovery.py [--repos 10000] [--skip-backfill]``.

1. An emulator holding REPOS model repos, all tracked in a SQLite database
   with their current sha. One idle cycle of bulk discovery (a
   ``list_models(sort="last_modified")`` walk down to the last watermark)
   is counted in requests the emulator served, beside the naive cycle that
   asks every repo for its head (one ``model_info`` each), measured in the
   same run on the same emulator. Then one repo moves, and the next cycle
   must find exactly it.
2. A full backfill of the recorded corpus (../shared/hub-corpus) by one
   in-process worker, in revisions per second.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from storage import open_database, poll_states, revisions  # noqa: E402
from tracker.hub.api import connect  # noqa: E402
from tracker.hub.client import Hub  # noqa: E402
from tracker.hub.discovery import Discovery, HeadProbe  # noqa: E402
from tracker.hubsim import HubEmulator, estimator_tensor_shapes  # noqa: E402
from tracker.schedule.leases import track  # noqa: E402
from tracker.schedule.metrics import DaemonMetrics  # noqa: E402
from tracker.schedule.worker import Worker, WorkerPolicy  # noqa: E402
from tracker.settings import HubSettings  # noqa: E402

CORPUS = ROOT.parent / "shared" / "hub-corpus"
START = datetime(2025, 3, 1, tzinfo=UTC)


def idle_cycle(repos: int) -> None:
    hub = HubEmulator(None)
    names = [f"bench/model-{i:05d}" for i in range(repos)]
    began = time.monotonic()
    for index, name in enumerate(names):
        config = b'{"model_type": "llama"}'
        hub.publish(name, {"config.json": config}, date=START + timedelta(seconds=index))
    hub.start()
    print(f"emulator: {repos} repos published in {time.monotonic() - began:.1f}s")
    known = {name: hub.head(name) for name in names}
    discovery = Discovery(connect(HubSettings(hub.endpoint)))
    first = discovery.walk(None, known)  # sets the watermark (a fresh daemon checks everything)

    hub.stats.reset()
    idle = discovery.walk(first.watermark, known)
    bulk_requests = hub.stats.requests()
    assert not idle.moved, f"an idle cycle found moves: {sorted(idle.moved)[:5]}"

    probe = HeadProbe(connect(HubSettings(hub.endpoint)))
    hub.stats.reset()
    began = time.monotonic()
    with ThreadPoolExecutor(8) as pool:  # eight probes in flight, as a worker pool would
        heads = list(pool.map(lambda name: probe.head(name).sha, names))
    assert heads == [known[name] for name in names]
    naive_requests = hub.stats.requests()
    naive_s = time.monotonic() - began

    moved = names[repos // 2]
    sha = hub.publish(moved, {"config.json": b'{"model_type": "mistral"}'}, date=datetime.now(UTC))
    hub.stats.reset()
    busy = discovery.walk(idle.watermark, known)
    busy_requests = hub.stats.requests()
    hub.stop()
    assert dict(busy.moved) == {moved: sha}, busy.moved
    print(f"idle cycle, bulk discovery:   {bulk_requests} request(s) for {repos} tracked repos")
    print(f"idle cycle, naive per repo:   {naive_requests} requests ({naive_s:.1f}s)")
    print(f"cycle after one push:         {busy_requests} request(s), found exactly {moved}")


def backfill_corpus() -> None:
    hub = HubEmulator(CORPUS, tensor_shapes=estimator_tensor_shapes)
    hub.start()
    with tempfile.TemporaryDirectory() as scratch:
        database = open_database(f"sqlite:///{Path(scratch) / 'bench.db'}")
        database.migrate()
        now = datetime.now(UTC)
        with database.session() as session:
            for repo_id in hub.repo_ids():
                track(session, repo_id, now=now)
        worker = Worker(
            database,
            Hub(connect(HubSettings(hub.endpoint))),
            HeadProbe(connect(HubSettings(hub.endpoint))),
            owner="bench/0",
            policy=WorkerPolicy(),
            metrics=DaemonMetrics(),
            clock=lambda: datetime.now(UTC),
        )
        began = time.monotonic()
        while worker.run_once():
            pass
        seconds = time.monotonic() - began
        with database.read_session() as session:
            stored = sum(len(revisions(session, r.repo_id)) for r in poll_states(session))
            failing = [s.repo_id for s in poll_states(session) if s.failures]
        database.close()
    hub.stop()
    print(
        f"backfill of the corpus: {stored} revisions of {len(hub.repo_ids())} repos in "
        f"{seconds:.1f}s = {stored / seconds:.1f} revisions/s (one worker, SQLite); "
        f"failing repos: {failing or 'none'}; {hub.stats.requests()} requests"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repos", type=int, default=10_000)
    parser.add_argument("--skip-backfill", action="store_true")
    args = parser.parse_args()
    idle_cycle(args.repos)
    if not args.skip_backfill:
        backfill_corpus()


if __name__ == "__main__":
    main()
