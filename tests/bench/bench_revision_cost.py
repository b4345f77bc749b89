"""What one revision costs, the code at a git commit beside the working tree, in one run.

Run: ``.venv/bin/python tests/bench/bench_revision_cost.py [--base main] [--revisions 2000]
[--warmup 200] [--databases sqlite,postgresql] [--workloads synthetic,corpus]``.

The base commit is exported (``git archive``) into a scratch directory; each tree then
records the same workload in a subprocess of its own (``PYTHONPATH`` set to that tree),
one after the other, against the same Hub emulator served from this process (so the
emulator's CPU is not an instance's) and a fresh database of the same kind. The
subprocess runs one check worker in its main thread exactly as the daemon builds it
(``tracker.schedule.worker.Worker`` with the daemon's publishers, on the daemon's Hub
client: ``tracker.hub.ratelimit.install``, at a rate that never paces) until the workload is
recorded, and measures a window that starts after ``--warmup`` revisions (imports and
caches amortised: steady state):

- instance CPU per revision: the process's own ``utime+stime`` with its reaped children's,
  plus every live descendant's (the isolated parser pool, the meta-device build worker),
  all from ``/proc``;
- PostgreSQL backend CPU per revision: the same ``/proc`` figures of the backends connected
  to the run's database (``pg_stat_activity``), read at both ends of the window;
- statements, their wall time and transactions per revision, from SQLAlchemy's engine
  events (``before_cursor_execute``, ``begin``) in the instance;
- bytes per revision: the SQLite file and its WAL after a checkpoint, or
  ``pg_database_size``, at both ends of the window;
- Hub requests per revision (``hub``), from the emulator's request log, over the whole run
  (warm-up included) and every revision it recorded.

Workloads: ``synthetic`` (``tracker.hubsim.synthetic.SyntheticStore``, seed 0, enough repos
for ``--warmup`` + ``--revisions``; the window ends at the first repo boundary past them)
and ``corpus`` (every repo of the shared hub corpus's history). After each run the
subprocess writes what it stored per revision (changes, plan, snapshot texts) as
canonical JSON, and the two trees' records must be equal: the comparison is printed.

Measured on a shared 2-core machine (load 3-14 from other work during the runs, so CPU
and statement-time figures move by a fifth or more between runs; each pair ran back to
back in one run), ``--base f7138e5 --revisions 400 --warmup 60``: base is main before
the recording transaction was made lean; tree is after it (one read statement before
the writes, blobs in one batched insert, no repo or subscription lookups the claim and
that read already answer, the parent's snapshot and plan in one query, the check's
status and history in one transaction with the recorded shas, main's order placed at
the check's end). The synthetic PostgreSQL pair is from a second run
(``--workloads synthetic --databases postgresql``, load 3.1): in the four-way run, at
load 14, one check of the tree failed and left its repo unrecorded (407 revisions in
the window, 2 records missing); the run reported no reason then, and now names failed
checks.

```text
workload   database   code    revs    CPU ms     PG ms   stmts   stmt ms     tx     bytes
synthetic  postgresql base     422      47.0      4.98    21.6     12.74   2.43      6406
synthetic  postgresql tree     422      39.4      3.74    13.8     10.64   2.26      6387
synthetic  sqlite     base     422      50.1         -    24.1      6.76   2.43      9231
synthetic  sqlite     tree     422      45.1         -    16.1      6.59   2.26      9201
corpus     postgresql base     381      67.6      7.06    23.1     24.62   2.79     11546
corpus     postgresql tree     381      57.8      4.72    14.7     24.92   2.48     11546
corpus     sqlite     base     381      61.2         -    25.9      7.20   2.79     26425
corpus     sqlite     tree     381      46.0         -    17.2      1.23   2.48     26436
```

Every pair stored the same records on both sides (519 synthetic, 496 corpus: 0
differing). Statements fall by a third in every run (SQLite counts its BEGIN
statements too). Still above the floor: two transactions per revision, the read
session (the parent's snapshot and which content keys the store holds, asked before
the Hub is) and the write; the summary refresh's read and upsert; the Hub client stack.

Then the recording's CPU (``--base onetx --revisions 400 --warmup 60 --workloads
synthetic``, load 0.4 at the start, other work on the machine during it): base is the
lean transaction above; tree runs its statements as Core on the session's connection,
each built once, refreshes the summary of a revision recorded at the head in one
upsert, keeps one heartbeat thread per worker and stores a carried plan as the document
recorded before. Both stored the same 519 records.

```text
workload   database   code    revs    CPU ms     PG ms   stmts   stmt ms     tx     bytes
synthetic  sqlite     base     422      29.7         -    16.1      0.80   2.26      9201
synthetic  sqlite     tree     422      20.5         -    13.7      0.84   2.26      9201
synthetic  postgresql base     422      32.5      3.65    13.8      6.39   2.26      6387
synthetic  postgresql tree     422      23.3      3.58    11.4      5.87   2.26      6387
```

All of it together (``--base f7138e5 --revisions 400 --warmup 60``, load 0.6 at the start,
nothing else running): base is main before this work (the walk's carried state and plan
blobs were in); tree adds the lean recording transaction, its Core statements, the
walk's parent in hand and the Hub file listing read straight from its JSON. Every pair
stored the same records (519 synthetic, 496 corpus).

```text
workload   database   code    revs    CPU ms     PG ms   stmts   stmt ms     tx     bytes
synthetic  sqlite     base     422      43.9         -    24.1      1.20   2.43      9231
synthetic  sqlite     tree     422      20.0         -    13.7      0.82   2.26      9201
synthetic  postgresql base     422      43.8      5.19    21.6      9.58   2.43      6406
synthetic  postgresql tree     422      23.7      3.72    11.4      6.18   2.26      6387
corpus     sqlite     base     381      57.1         -    25.9      1.20   2.79     26425
corpus     sqlite     tree     381      38.2         -    14.6      0.93   2.48     26436
corpus     postgresql base     381      67.8      6.56    23.1     12.56   2.79     11546
corpus     postgresql tree     381      43.0      4.80    12.2      8.78   2.48     11546
```
Those figures came from a machine about twice as slow as the next ones'. Then, on another
machine, quieter (``--base f7138e5 --revisions 400 --warmup 60``, load 0.1 at the start,
1.0 at the end, nothing else running): tree adds a walked revision's read session opened
only when it asks the store, each JSON column encoded once, a manifest whose index files
and shards are the parent's carried as the parent's object, and differs that copy only
what a change holds and keep token tables by parsed value. Every pair stored the same
records (519 synthetic, 496 corpus).

```text
workload   database   code    revs    CPU ms     PG ms   stmts   stmt ms     tx     bytes
synthetic  sqlite     base     422      22.9         -    24.1      0.64   2.43      9231
synthetic  sqlite     tree     422      10.3         -    12.7      0.40   2.22      9201
synthetic  postgresql base     422      29.5      3.51    21.6      6.31   2.43      6406
synthetic  postgresql tree     422      18.1      2.75    10.5      4.22   2.22      6387
corpus     sqlite     base     381      37.1         -    25.9      0.83   2.79     26425
corpus     sqlite     tree     381      22.3         -    13.8      0.64   2.46     26436
corpus     postgresql base     381      49.6      4.80    23.1      8.91   2.79     11546
corpus     postgresql tree     381      20.7      2.49    11.3      3.72   2.46     11546
```
On this machine one tree's CPU figure moves by 2-5 ms between runs at the same load (the
commit before this last step, against the working tree, three runs of the synthetic SQLite
workload: base 11.5, 16.3, 13.3 ms, tree 14.3, 11.6, 12.3 ms), so a step worth a millisecond
or two shows in the profile's components, not here. Still above the issue's goal (instance
<= 5 ms; PostgreSQL <= 2.5 ms is met on the corpus only): a sampled profile
(``tests/bench/profile_revision.py --sample``, synthetic SQLite, load 0.8) puts 9.6 ms of
a revision in the process, 7.7 of it in the worker's own thread (preparing 5.1: the Hub
client about 1.6, the diff 1.1, the estimate 1.1; recording 2.0) and 1.8 in the isolated
parser pool's two processes (template renders and tokenizer parses).

Then, on a third machine (about 1.4 times slower: base 31.2 ms where the last measured 22.9),
quiet (load 0.2 at the start, 1.0 at the end, nothing else running), ``--base f7138e5
--revisions 400 --warmup 60``: tree adds one transaction per walked revision (its small new
texts, ``tracker.revision.snapshot.ASK_ABOVE``, fetched without asking the store, so it
opens no read session; its write's lease fence returns the recording's read, one ``UPDATE
... RETURNING``), isolated template and tokenizer results kept by content, the estimator's
card table computed once per table rather than per card, and Hub headers resolved once
per 30 s. ``hub`` is Hub requests per revision over the whole run: the small texts the
store held and are now fetched again cost 0.11 (synthetic) and 0.20 (corpus) more. Every
pair stored the same records (519 synthetic, 496 corpus).

```text
workload   database   code    revs    CPU ms     PG ms   stmts   stmt ms     tx     bytes    hub
synthetic  sqlite     base     422      31.2         -    24.1      0.86   2.43      9231   2.76
synthetic  sqlite     tree     422      14.4         -     9.9      0.56   1.37      9201   2.87
synthetic  postgresql base     422      41.4      4.57    21.6      8.61   2.43      6406   2.76
synthetic  postgresql tree     422      15.8      2.35     8.5      3.66   1.37      6387   2.87
corpus     sqlite     base     381      48.3         -    25.9      1.02   2.79     26425   4.74
corpus     sqlite     tree     381      24.0         -    11.2      0.61   1.72     26436   4.94
corpus     postgresql base     381      61.7      5.46    23.1     10.41   2.79     11546   4.74
corpus     postgresql tree     381      29.7      3.57     9.4      5.35   1.72     11546   4.94
```
That step alone (``--base b25552d``, the next run, load 0.9 -> 1.1) moved transactions
2.22 -> 1.37 (synthetic) and 2.46 -> 1.72 (corpus) and statements by 1.9-2.8, with CPU
inside the noise (synthetic SQLite 19.0 -> 15.4 ms, the other three within 1.4 ms either
way). The sampled profile shows it better (``profile_revision.py --sample``, synthetic
SQLite, alternating, load 0.6-1.0): 16.3 and 15.1 ms per revision in the process before,
14.4 and 14.9 after; ``prepare`` 9.0/8.5 -> 7.6/7.5 ms, ``estimator.plan`` 1.7 -> 1.1-1.2.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT.parent / "shared" / "hub-corpus"
SERVER = "postgresql://postgres@127.0.0.1:5432"
PSYCOPG = "postgresql+psycopg://postgres@127.0.0.1:5432"
SYNTHETIC_SEED = 0


def proc_cpu_s(pid: int) -> float:
    """utime+stime+cutime+cstime of ``pid``: its own CPU and that of the children it reaped."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def descendants(pid: int) -> list[int]:
    found: list[int] = []
    stack = [pid]
    while stack:
        parent = stack.pop()
        try:
            tasks = list(Path(f"/proc/{parent}/task").iterdir())
        except OSError:
            continue
        for task in tasks:
            try:
                children = [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                continue
            found += children
            stack += children
    return found


def tree_cpu_s() -> float:
    """This process and every live descendant; an exited one is in its parent's cutime."""
    total = proc_cpu_s(os.getpid())
    for child in descendants(os.getpid()):
        try:
            total += proc_cpu_s(child)
        except OSError:
            continue
    return total


# -- the instance (a subprocess running one tree's code) ---------------------------------


class Meter:
    """Statements, their wall time and transactions, counted while ``on``."""

    def __init__(self) -> None:
        from sqlalchemy import event
        from sqlalchemy.engine import Engine

        self.on = False
        self.statements = 0
        self.transactions = 0
        self.statement_s = 0.0
        self._started: list[float] = []
        event.listen(Engine, "before_cursor_execute", self._before)
        event.listen(Engine, "after_cursor_execute", self._after)
        event.listen(Engine, "begin", self._begin)

    def _before(self, *_: Any) -> None:
        self._started.append(time.perf_counter())

    def _after(self, *_: Any) -> None:
        began = self._started.pop()
        if self.on:
            self.statements += 1
            self.statement_s += time.perf_counter() - began

    def _begin(self, *_: Any) -> None:
        if self.on:
            self.transactions += 1


class Store:
    """The database's size and, on PostgreSQL, its backends' CPU, read beside the instance."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.sqlite = url.startswith("sqlite")
        self.name = url.rsplit("/", 1)[1]

    def size(self) -> int:
        if self.sqlite:
            import sqlite3

            path = Path(self.url.split("///", 1)[1])
            with sqlite3.connect(path) as connection:
                connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            wal = path.with_name(path.name + "-wal")
            return path.stat().st_size + (wal.stat().st_size if wal.exists() else 0)
        return int(self._scalar("SELECT pg_database_size(current_database())"))

    def backends_cpu_s(self) -> dict[int, float]:
        if self.sqlite:
            return {}
        import psycopg

        with psycopg.connect(f"{SERVER}/{self.name}", autocommit=True) as connection:
            pids = connection.execute(
                "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
                (self.name,),
            ).fetchall()
        found = {}
        for (pid,) in pids:
            try:
                found[int(pid)] = proc_cpu_s(int(pid))
            except OSError:
                continue
        return found

    def _scalar(self, sql: str) -> Any:
        import psycopg

        with psycopg.connect(f"{SERVER}/{self.name}", autocommit=True) as connection:
            row = connection.execute(sql).fetchone()
            return row[0] if row else None


def checking_worker(args: argparse.Namespace, owner: str) -> tuple[Any, Any, Any, list[str]]:
    """The repos tracked in a fresh database and one check worker over them, built as the
    daemon builds its workers: (worker, metrics, database, repos)."""
    from datetime import UTC, datetime

    from storage import open_database
    from tracker.daemon import revision_publishers, utc_now
    from tracker.hub.api import connect
    from tracker.hub.client import Hub
    from tracker.hub.discovery import HeadProbe
    from tracker.hub.ratelimit import RateLimiter, install
    from tracker.schedule.leases import track
    from tracker.schedule.metrics import DaemonMetrics
    from tracker.schedule.worker import Worker, WorkerPolicy
    from tracker.settings import HubSettings, Settings

    repos = json.loads(Path(args.repos).read_text())
    database = open_database(args.url)
    database.migrate()
    with database.session() as session:
        for repo_id in repos:
            track(session, repo_id, now=datetime.now(UTC))
    metrics = DaemonMetrics()
    # the daemon's Hub client (``Daemon.start_background``): its hooks, timeout and transport;
    # a rate that never paces, so the window measures what a request costs, not the pacing
    install(RateLimiter(1e9), timeout_s=30.0, observers=(metrics.observe_response,))
    settings = Settings.in_dir(Path(args.scratch))
    api = connect(HubSettings(args.endpoint))
    worker = Worker(
        database,
        Hub(api),
        HeadProbe(api),
        owner=owner,
        policy=WorkerPolicy(interval_s=86400.0, lease_s=600.0),
        metrics=metrics,
        clock=utc_now,
        publish=revision_publishers(settings, utc_now),
    )
    return worker, metrics, database, repos


def instance(args: argparse.Namespace) -> int:
    """Track the repos, record them with one worker, print the window's figures as JSON."""
    worker, metrics, database, repos = checking_worker(args, "bench/0")
    meter, store = Meter(), Store(args.url)

    def recorded() -> int:
        return int(metrics.registry.get_sample_value("neurarch_revisions_recorded_total") or 0)

    start: dict[str, Any] | None = None
    while worker.run_once():
        done = recorded()
        if start is None and done >= args.warmup:
            start = {
                "revisions": done,
                "cpu": tree_cpu_s(),
                "backends": store.backends_cpu_s(),
                "size": store.size(),
            }
            meter.on = True
        if start is not None and done - start["revisions"] >= args.revisions:
            break
    meter.on = False
    if start is None:
        raise SystemExit(f"only {recorded()} revisions recorded, fewer than --warmup")
    cpu = tree_cpu_s() - start["cpu"]
    ended = store.backends_cpu_s()
    backend = sum(v - start["backends"].get(pid, 0.0) for pid, v in ended.items())
    revisions = recorded() - start["revisions"]
    figures = {
        "revisions": revisions,
        "instance_ms": 1000 * cpu / revisions,
        "backend_ms": None if store.sqlite else 1000 * backend / revisions,
        "statements": meter.statements / revisions,
        "statement_ms": 1000 * meter.statement_s / revisions,
        "transactions": meter.transactions / revisions,
        "bytes": (store.size() - start["size"]) / revisions,
        "recorded": recorded(),
        "failed_checks": int(
            metrics.registry.get_sample_value("neurarch_checks_total", {"outcome": "failed"}) or 0
        ),
    }
    Path(args.records).write_text(json.dumps(stored(database, repos), sort_keys=True))
    database.close()
    print(json.dumps(figures))
    return 0


def stored(database: Any, repos: list[str]) -> dict[str, Any]:
    """Per recorded revision, what a reader gets (snapshot, changes, plan) and, per repo, its
    advisories' transitions, summaries and severities, each as a digest of canonical JSON."""
    from dataclasses import asdict

    from storage import changes_of, plan_at, revisions, snapshot_at
    from storage.publishing import advisories_for

    def digest(value: Any) -> str:
        text = json.dumps(value, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()

    found: dict[str, Any] = {}
    with database.read_session() as session:
        repo_ids = sorted({a.repo_id for a in advisories_for(session, limit=None).advisories})
        for repo_id in repos:
            for revision in revisions(session, repo_id):
                snapshot = asdict(snapshot_at(session, repo_id, revision.sha))
                changes = [asdict(c) for c in changes_of(session, repo_id, revision.sha)]
                plan = plan_at(session, repo_id, revision.sha)
                found[f"{repo_id}@{revision.sha}"] = digest([snapshot, changes, plan])
        for repo_id in repo_ids:
            page = advisories_for(session, repo_id=repo_id, limit=None).advisories
            found[f"advisories {repo_id}"] = digest(
                sorted((a.old_sha, a.new_sha, a.summary, int(a.severity)) for a in page)
            )
    return found


# -- the driver ----------------------------------------------------------------------------


def export(commit: str, into: Path) -> Path:
    """The tree at ``commit``, extracted with ``git archive`` (no worktree bookkeeping)."""
    into.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", commit], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def fresh_database(kind: str, label: str, scratch: Path) -> str:
    if kind == "sqlite":
        return f"sqlite:///{scratch / (label + '.db')}"
    import psycopg

    with psycopg.connect(f"{SERVER}/postgres", autocommit=True) as connection:
        connection.execute(f"DROP DATABASE IF EXISTS {label}")
        connection.execute(f"CREATE DATABASE {label}")
    return f"{PSYCOPG}/{label}"


def drop_database(url: str) -> None:
    if url.startswith("sqlite"):
        return
    import psycopg

    with psycopg.connect(f"{SERVER}/postgres", autocommit=True) as connection:
        connection.execute(f"DROP DATABASE IF EXISTS {url.rsplit('/', 1)[1]} WITH (FORCE)")


def instance_environment(tree: Path) -> dict[str, str]:
    """The environment an instance subprocess runs ``tree`` in: this Hub, no configured database."""
    env = {
        **os.environ,
        "PYTHONPATH": str(tree),
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "HF_HUB_DISABLE_PROGRESS_BARS": "1",
        "HF_HUB_OFFLINE": "0",
    }
    env.pop("NEURARCH_DATABASE_URL", None)
    return env


def run_tree(
    tree: Path, url: str, endpoint: str, repos: Path, scratch: Path, args: argparse.Namespace
) -> tuple[dict[str, Any], dict[str, str]]:
    records = scratch / f"records-{time.monotonic_ns()}.json"
    env = instance_environment(tree)
    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--instance",
        f"--url={url}",
        f"--endpoint={endpoint}",
        f"--repos={repos}",
        f"--records={records}",
        f"--scratch={scratch}",
        f"--revisions={args.revisions}",
        f"--warmup={args.warmup}",
    ]
    done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{tree}: instance failed\n{done.stderr[-4000:]}")
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    failures = [line for line in done.stderr.splitlines() if "check_failed" in line]
    if failures:
        # A failed check leaves its repo unrecorded, so the records differ: say why.
        print(f"  {tree.name}: {len(failures)} failed checks, last: {failures[-1]}", flush=True)
    return figures, json.loads(records.read_text())


def hub_for(workload: str, args: argparse.Namespace) -> tuple[Any, list[str]]:
    sys.path.insert(0, str(ROOT))
    from tracker.hubsim import HubEmulator, estimator_tensor_shapes
    from tracker.hubsim.synthetic import SyntheticStore

    if workload == "corpus":
        hub = HubEmulator(CORPUS, tensor_shapes=estimator_tensor_shapes)
        return hub, sorted(hub.store.repos)
    size = max(1, (args.warmup + args.revisions) // 8)
    store = SyntheticStore(size, SYNTHETIC_SEED, CORPUS, estimator_tensor_shapes)
    return HubEmulator(None, store=store), [store.generator.repo_id(i) for i in range(size)]


LINE = "{:<10} {:<10} {:<6} {:>5} {:>9} {:>9} {:>7} {:>9} {:>6} {:>9} {:>6}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="main", help="the git commit to compare with")
    parser.add_argument("--tree", help="a git commit to measure instead of the working tree")
    parser.add_argument("--revisions", type=int, default=2000, help="revisions in the window")
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--databases", default="sqlite,postgresql")
    parser.add_argument("--workloads", default="synthetic,corpus")
    parser.add_argument("--instance", action="store_true", help=argparse.SUPPRESS)
    for name in ("url", "endpoint", "repos", "records", "scratch"):
        parser.add_argument(f"--{name}", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.instance:
        return instance(args)
    print(
        f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; base {args.base}, "
        f"tree {args.tree or 'the working tree'}",
        flush=True,
    )
    print(
        LINE.format(
            "workload",
            "database",
            "code",
            "revs",
            "CPU ms",
            "PG ms",
            "stmts",
            "stmt ms",
            "tx",
            "bytes",
            "hub",
        )
    )
    same = True
    with tempfile.TemporaryDirectory(prefix="bench-revcost-") as temp:
        scratch = Path(temp)
        base = export(args.base, scratch / "base")
        tree = ROOT if args.tree is None else export(args.tree, scratch / "tree")
        for workload in args.workloads.split(","):
            hub, repos = hub_for(workload, args)
            endpoint = hub.start()
            listing = scratch / f"{workload}-repos.json"
            listing.write_text(json.dumps(repos))
            try:
                for kind in args.databases.split(","):
                    results = {}
                    for code, code_root in (("base", base), ("tree", tree)):
                        url = fresh_database(
                            kind, f"bench_revcost_{workload}_{code}_{os.getpid()}", scratch
                        )
                        asked = hub.stats.requests()
                        try:
                            results[code] = run_tree(
                                code_root, url, endpoint, listing, scratch, args
                            )
                        finally:
                            drop_database(url)
                        f = results[code][0]
                        hub_requests = (hub.stats.requests() - asked) / f["recorded"]
                        print(
                            LINE.format(
                                workload,
                                kind,
                                code,
                                f["revisions"],
                                f"{f['instance_ms']:.1f}",
                                "-" if f["backend_ms"] is None else f"{f['backend_ms']:.2f}",
                                f"{f['statements']:.1f}",
                                f"{f['statement_ms']:.2f}",
                                f"{f['transactions']:.2f}",
                                f"{f['bytes']:.0f}",
                                f"{hub_requests:.2f}",
                            ),
                            flush=True,
                        )
                    before, after = results["base"][1], results["tree"][1]
                    differing = [k for k in before if after.get(k) != before[k]]
                    same = same and not differing and before.keys() == after.keys()
                    print(
                        f"  stored records: {len(before)} base, {len(after)} tree, "
                        f"{len(differing)} differing"
                        + (f" (first {differing[0]})" if differing else ""),
                        flush=True,
                    )
            finally:
                hub.stop()
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
