"""The whole corpus backfilled by ``serve`` clean, at 25% injected faults, and cut by kill -9.

Run: ``python tests/bench/bench_faults.py [--rate 0.25] [--seed 11] [--kills 20]``.

1. Clean: the Hub emulator over the recorded corpus (../shared/hub-corpus), every
   repo tracked by one ``neurarch-trace serve`` process (8 check workers, SQLite),
   timed from the daemon's start until every repo's stored head is the Hub's.
2. Faulty: the same, with the emulator's transient mix failing ``--rate`` of all
   requests (500, 503, 429 with Retry-After: 1, resets, bodies cut to half their
   Content-Length, 1-3 s delays; seeded). The canonical dump of what was stored
   (tests/fixtures/stored_state.py: revisions, changes, plan JSON, advisories) must
   equal the clean one; printed beside it: seconds, the ratio (goal <= 3x), requests.
   The same mix without its 429s runs too: each 429 pauses every worker for its
   Retry-After (tracker.hub.ratelimit), a wait the Hub imposes and no retry policy can
   shorten, so that run shows what the retries themselves cost.
3. Crashes: a faulty backfill killed with SIGKILL ``--kills`` times at random moments
   after it made progress, restarted each time. After every kill the stored state must
   be a part of the clean one (each stored revision exactly as the clean run stored it),
   and after the last restart it must equal it.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from storage import Database, open_database, poll_states, revisions  # noqa: E402
from tests.daemon.harness import DaemonProcess, caught_up, free_port, wait_for  # noqa: E402
from tests.fixtures.stored_state import (  # noqa: E402
    canonical_state,
    differences,
    revision_count,
)
from tracker.hubsim import HubEmulator, TransientMix, estimator_tensor_shapes  # noqa: E402
from tracker.hubsim.faults import MIX_KINDS, MixKind  # noqa: E402

CORPUS = ROOT.parent / "shared" / "hub-corpus"
WAIT_S = 1800
WORKERS = 8
"""Check workers of each serve: enough that 1-3 s answers overlap, as waits on I/O should."""


@dataclass
class Run:
    seconds: float
    requests: int
    statuses: dict[int, int]
    failed_checks: int
    state: dict[str, Any]
    injected: dict[str, int]


def emulator(
    rate: float, seed: int, kinds: tuple[MixKind, ...] = MIX_KINDS
) -> tuple[HubEmulator, TransientMix | None]:
    hub = HubEmulator(CORPUS, tensor_shapes=estimator_tensor_shapes)
    mix = hub.faults.transient_mix(rate, seed=seed, kinds=kinds) if rate else None
    hub.start()
    return hub, mix


def write_config(path: Path, database_url: str, endpoint: str, repos: list[str]) -> Path:
    """One check per repo (a long interval), quick retry of a failed check, no rate cap."""
    repo_lines = "\n".join(f'[[repos]]\nid = "{repo}"\n' for repo in repos)
    path.write_text(
        f"""
[storage]
database_url = "{database_url}"

[hub]
endpoint = "{endpoint}"

[daemon]
interval = "1h"
max_backoff = "2s"
tick = 0.3
discovery = "1h"
workers = {WORKERS}
requests_per_second = 500
hub_timeout = "10s"

[server]
host = "127.0.0.1"
port = {free_port()}

{repo_lines}
""",
        encoding="utf-8",
    )
    return path


def migrated(url: str) -> Database:
    database = open_database(url)
    database.migrate()
    return database


def failed_checks(database: Database) -> int:
    with database.read_session() as session:
        return sum(1 for state in poll_states(session) if state.failures)


def stored(database: Database) -> int:
    """Revisions recorded so far (cheap enough to poll)."""
    with database.read_session() as session:
        return sum(len(revisions(session, state.repo_id)) for state in poll_states(session))


def backfill(
    scratch: Path, label: str, rate: float, seed: int, kinds: tuple[MixKind, ...] = MIX_KINDS
) -> Run:
    hub, mix = emulator(rate, seed, kinds)
    url = f"sqlite:///{scratch / f'{label}.db'}"
    database = migrated(url)
    repos = hub.repo_ids()
    config = write_config(scratch / f"{label}.toml", url, hub.endpoint, repos)
    daemon = DaemonProcess(config, scratch / f"{label}.log")
    try:
        began = time.monotonic()
        daemon.start()
        wait_for(lambda: caught_up(database, hub, repos), WAIT_S, f"the {label} backfill", [daemon])
        seconds = time.monotonic() - began
        daemon.terminate()
        return Run(
            seconds=seconds,
            requests=hub.stats.requests(),
            statuses=dict(sorted(hub.stats.by_status().items())),
            failed_checks=failed_checks(database),
            state=canonical_state(database),
            injected=dict(mix.counts()) if mix else {},
        )
    finally:
        if daemon.alive():
            daemon.kill()
        database.close()
        hub.stop()


def part_of(state: dict[str, Any], clean: dict[str, Any]) -> bool:
    """Every revision and advisory stored so far is exactly the clean run's."""
    for repo_id, repo in state.items():
        theirs = clean.get(repo_id, {})
        by_sha = {r["sha"]: r for r in theirs.get("revisions", [])}
        if any(by_sha.get(r["sha"]) != r for r in repo["revisions"]):
            return False
        if any(a not in theirs.get("advisories", []) for a in repo["advisories"]):
            return False
    return True


def crashes(
    scratch: Path, rate: float, seed: int, kills: int, clean: dict[str, Any]
) -> tuple[list[int], int, bool]:
    """(revisions stored at each kill, kills whose state was part of the clean one, final equal)."""
    hub, _ = emulator(rate, seed)
    url = f"sqlite:///{scratch / 'crash.db'}"
    database = migrated(url)
    repos = hub.repo_ids()
    config = write_config(scratch / "crash.toml", url, hub.endpoint, repos)
    rng = random.Random(seed)
    cut_at: list[int] = []
    consistent = 0
    processes: list[DaemonProcess] = []
    try:
        for index in range(kills):
            process = DaemonProcess(config, scratch / f"crash-{index}.log").start()
            processes.append(process)
            before = stored(database)
            wait_for(
                lambda before=before: stored(database) > before,  # type: ignore[misc]
                WAIT_S,
                "progress before the kill",
                [process],
            )
            time.sleep(rng.uniform(0.0, 1.5))
            if caught_up(database, hub, repos):
                break  # the backfill ended before this kill: it would not cut anything
            process.kill()
            state = canonical_state(database)
            cut_at.append(revision_count(state))
            consistent += part_of(state, clean)
        final = DaemonProcess(config, scratch / "crash-final.log").start()
        processes.append(final)
        wait_for(lambda: caught_up(database, hub, repos), WAIT_S, "the last restart", [final])
        final.terminate()
        equal = differences(canonical_state(database), clean) == []
        return cut_at, consistent, equal
    finally:
        for process in processes:
            if process.alive():
                process.kill()
        database.close()
        hub.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=0.25)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--kills", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        scratch = Path(directory)
        clean = backfill(scratch, "clean", 0.0, args.seed)
        print(f"clean:  {clean.seconds:.1f}s, {clean.requests} requests", flush=True)
        faulty = backfill(scratch, "faulty", args.rate, args.seed)
        print(f"faulty: {faulty.seconds:.1f}s, {faulty.requests} requests", flush=True)
        no_429 = tuple(k for k in MIX_KINDS if k != "429")
        unlimited = backfill(scratch, "no-429", args.rate, args.seed, no_429)
        print(f"no 429: {unlimited.seconds:.1f}s, {unlimited.requests} requests", flush=True)
        cut_at, consistent, final_equal = crashes(
            scratch, args.rate, args.seed, args.kills, clean.state
        )
    diff = differences(faulty.state, clean.state)
    diff_429 = differences(unlimited.state, clean.state)
    runs = {"clean": clean, "faulty": faulty, "faulty, no 429": unlimited}
    print(f"\ncorpus: {len(clean.state)} repos, {revision_count(clean.state)} revisions")
    print(f"{'':28}" + "".join(f"{name:>16}" for name in runs))
    rows = {
        "backfill seconds": [f"{r.seconds:.1f}" for r in runs.values()],
        "ratio to clean": [f"{r.seconds / clean.seconds:.2f}x" for r in runs.values()],
        "requests served": [str(r.requests) for r in runs.values()],
        "faults injected": [str(sum(r.injected.values())) for r in runs.values()],
        "revisions stored": [str(revision_count(r.state)) for r in runs.values()],
        "checks that failed": [str(r.failed_checks) for r in runs.values()],
        "state equals clean": ["-", str(not diff), str(not diff_429)],
    }
    for name, cells in rows.items():
        print(f"{name:28}" + "".join(f"{cell:>16}" for cell in cells))
    injected = sum(faulty.injected.values())
    print(
        f"faulty: {injected} faults in {faulty.requests} requests "
        f"({injected / faulty.requests:.1%}): {dict(sorted(faulty.injected.items()))}"
    )
    print(
        f"faulty: {faulty.injected.get('429', 0)} answers 429 with Retry-After: 1, each pausing "
        f"every worker for at least 1 s: {faulty.injected.get('429', 0)} s of the run"
    )
    print(f"faulty statuses: {faulty.statuses}")
    for name, found in (("faulty", diff), ("no 429", diff_429)):
        if found:
            print(f"{name} differs from clean: {found[:5]}")
    print(f"kill -9: revisions stored at each kill {cut_at}")
    print(
        f"kill -9: {consistent}/{len(cut_at)} cut states part of the clean one; "
        f"final state equals clean: {final_equal}"
    )


if __name__ == "__main__":
    main()
