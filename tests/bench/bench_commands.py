"""``history`` and ``diff`` per call on the recorded corpus, as a user runs them.

Run: ``.venv/bin/python tests/bench/bench_commands.py [--db PATH] [--calls N]``.

The whole corpus is backfilled once through the Hub emulator into a SQLite file (kept at
``--db`` when given, so later runs skip it), then each command runs as its own process,
exactly as typed at a shell: ``history REPO`` for every repo, ``diff REPO PARENT SHA`` for
recorded parent/child pairs (what ``history`` lists per revision) and ``diff REPO OLDEST
NEWEST`` across each repo's whole history. Every command runs twice: with no daemon
listening (the command reads storage itself) and with ``serve --role web`` running over
the same database on a free port (the command asks it; tracker/reads/local_daemon.py).
Printed per command: p50, p90 and p99 of wall time and p50 of CPU time (user + system of
the child; on a shared, loaded machine wall time also holds the waits for a core). Two
baselines put the figures in context: an empty interpreter, and one that only imports
``storage`` (its records; SQLAlchemy loads on first use of the rest, which the DB-API reader
``storage.light_reads`` spares the commands). Goal: p50 under 300 ms per call.

``--startup [--tree DIR]`` measures what a command costs to start, beside ``python -c pass``:
the median of 5 runs (wall and CPU) of ``plan CONFIG`` on a corpus config.json, and of
``history``/``diff`` reading storage (no daemon) on one backfilled repo, with ``import
sqlalchemy`` and ``import storage`` as baselines, each as a ratio to the empty interpreter;
then the ``-X importtime`` modules ``plan`` spends most on. ``--tree A B`` runs other checkouts
(the code before a change, and after) with this interpreter, one call of each in turn. Bytecode is cached under a temporary
``PYTHONPYCACHEPREFIX``, as an installed package has it (``--no-bytecode``: compiled from
source on every run, as with ``PYTHONDONTWRITEBYTECODE=1``). Goals: ``plan`` under 150 ms,
``history`` and ``diff`` under 300 ms. Last measured (``--tree`` before and after the DB-API
reader, 2 cores at load 1.4, median wall / CPU): ``plan`` 176 / 168 -> 135 / 118 ms,
``history`` 745 / 712 -> 301 / 287 ms, ``diff`` 701 / 689 -> 296 / 281 ms, ``python -c pass``
32-33 ms (tracker/README.md, Start-up).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT))

from tests.storage.builders import recorded_at  # noqa: E402

CORPUS = REPO_ROOT.parent / "shared" / "hub-corpus"


def build_database(path: Path, repos: int | None = None) -> None:
    from storage import open_database
    from tracker.hub.api import connect
    from tracker.hub.client import Hub
    from tracker.hubsim import HubEmulator, estimator_tensor_shapes
    from tracker.revision.backfill import backfill
    from tracker.settings import HubSettings

    emulator = HubEmulator(CORPUS, tensor_shapes=estimator_tensor_shapes)
    url = emulator.start()
    database = open_database(f"sqlite:///{path}")
    database.migrate()
    started = time.monotonic()
    for repo in emulator.repo_ids()[:repos]:
        backfill(database, Hub(connect(HubSettings(url)), max_retries=0), repo, clock=recorded_at)
    database.close()
    emulator.stop()
    print(f"backfilled the corpus into {path} in {time.monotonic() - started:.1f}s")


def pairs(path: Path) -> dict[str, list[tuple[str, str | None]]]:
    """repo -> (sha, recorded parent or None) of every revision on main, oldest first."""
    from storage import RepoNotFound, open_database, revisions
    from tracker.hubsim import load_corpus

    database = open_database(f"sqlite:///{path}")
    out: dict[str, list[tuple[str, str | None]]] = {}
    with database.read_session() as session:
        for repo in sorted(load_corpus(CORPUS)):
            try:
                log = list(reversed(revisions(session, repo)))
            except RepoNotFound:  # a database of part of the corpus (--startup)
                continue
            shas = {r.sha for r in log}
            out[repo] = [(r.sha, next((p for p in r.parents if p in shas), None)) for r in log]
    database.close()
    return out


def timed(
    argv: list[str], env: dict[str, str], outputs: dict[str, bytes], cwd: Path | None = None
) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds and exit status of one child process; its exit status,
    stdout and stderr kept in ``outputs``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, check=False, cwd=cwd)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{argv[3:]} exited {done.returncode}: {done.stderr.decode()[-500:]}")
    outputs[" ".join(argv)] = b"%d\n%s\n%s" % (done.returncode, done.stdout, done.stderr)
    return wall, cpu, done.returncode


def report(name: str, samples: list[tuple[float, float, int]]) -> float:
    walls = sorted(s[0] * 1000 for s in samples)
    cpus = sorted(s[1] * 1000 for s in samples)
    p50 = statistics.median(walls)
    p90, p99 = (walls[round(q * (len(walls) - 1))] for q in (0.9, 0.99))
    print(
        f"{name:<40} calls {len(samples):>4}  wall p50 {p50:6.0f} ms  p90 {p90:6.0f} ms  "
        f"p99 {p99:6.0f} ms  cpu p50 {statistics.median(cpus):6.0f} ms"
    )
    return p50


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def server_config(path: Path, port: int) -> Path:
    """A configuration whose [server] is 127.0.0.1:port (where the commands look for a daemon)."""
    path.write_text(f'[server]\nhost = "127.0.0.1"\nport = {port}\n')
    return path


@contextlib.contextmanager
def daemon(env: dict[str, str], log: Path) -> Iterator[None]:
    """``serve --role web`` over the bench database (``env``'s config), until the block ends."""
    with log.open("wb") as out:
        child = subprocess.Popen(
            [sys.executable, "-m", "tracker.cli", "serve", "--role", "web"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 120
        while "serving on http://" not in log.read_text(errors="replace"):
            if child.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"serve did not start: {log.read_text()[-500:]}")
            time.sleep(0.1)
        yield
    finally:
        child.send_signal(signal.SIGTERM)
        child.wait(30)


def in_process(env: dict[str, str], runs: dict[str, list[list[str]]]) -> None:
    """The same calls through ``tracker.cli.main`` in this process, imports already done:
    what each command costs beyond starting an interpreter and importing its modules."""
    import io

    for name in ("NEURARCH_DATABASE_URL", "NEURARCH_DATA_DIR", "NEURARCH_CONFIG"):
        os.environ[name] = env[name]
    from tracker.cli import main as cli_main

    for name, argvs in runs.items():
        if not name.startswith(("history", "diff")):
            continue
        walls = []
        for argv in argvs:
            started = time.perf_counter()
            with contextlib.redirect_stdout(io.StringIO()):
                cli_main(argv[3:])
            walls.append((time.perf_counter() - started) * 1000)
        print(f"{name + ' (in process)':<40} p50 {statistics.median(walls):6.0f} ms")


STARTUP_RUNS = 5
PLAN_CONFIG = CORPUS / "huggyllama" / "llama-7b" / "c99d49994b96ac2c4d66fb51aa1ae6d79509bdd9"


def startup(trees: list[Path], bytecode: bool) -> int:
    """Median of 5 starts per call beside ``python -c pass``, and plan's costliest imports.

    Several trees (the code before and after a change) are measured in turns, one call
    of each per round, so a change of the machine's load falls on all of them alike.
    """
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "one.db"
        build_database(db, repos=1)
        (repo, log), *_ = pairs(db).items()
        sha, parent = next((s, p) for s, p in log if p is not None)
        cli = [sys.executable, "-m", "tracker.cli"]
        calls = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "python -c 'import sqlalchemy'": [sys.executable, "-c", "import sqlalchemy"],
            "python -c 'import storage'": [sys.executable, "-c", "import storage"],
            "plan CONFIG": [*cli, "plan", str(PLAN_CONFIG / "config.json")],
            "history REPO (no daemon)": [*cli, "history", repo],
            "diff REPO PARENT SHA (no daemon)": [*cli, "diff", repo, parent, sha],
        }
        envs = {tree: startup_env(tree, Path(tmp), db, bytecode) for tree in trees}
        for tree, env in envs.items():  # once unmeasured: fills the bytecode cache
            for argv in calls.values():
                subprocess.run(argv, env=env, capture_output=True, cwd=tree, check=False)
        outputs: dict[str, bytes] = {}
        samples: dict[tuple[Path, str], list[tuple[float, float, int]]] = {}
        for _ in range(STARTUP_RUNS):
            for tree, env in envs.items():
                for name, argv in calls.items():
                    # run in the tree: ``python -m`` puts the working directory first on sys.path
                    sample = timed(argv, env, outputs, cwd=tree)
                    samples.setdefault((tree, name), []).append(sample)
        print(f"{os.cpu_count()} CPUs; load {os.getloadavg()[0]:.1f}; bytecode cached: {bytecode}")
        for tree, env in envs.items():
            print(f"{tree}: median of {STARTUP_RUNS} (min), wall and CPU")
            empty_wall, empty_cpu = medians(samples[(tree, "python -c pass")])
            for name in calls:
                runs = samples[(tree, name)]
                wall, cpu = medians(runs)
                print(
                    f"  {name:<34} wall {wall:5.0f} ms ({min(r[0] for r in runs) * 1000:4.0f})"
                    f" {wall / empty_wall:4.1f}x pass   cpu {cpu:5.0f} ms"
                    f" ({min(r[1] for r in runs) * 1000:4.0f}) {cpu / empty_cpu:4.1f}x pass"
                )
            traced = subprocess.run(
                [sys.executable, "-X", "importtime", *calls["plan CONFIG"][1:]],
                env=env,
                capture_output=True,
                text=True,
                cwd=tree,
                check=True,
            )
            print("  plan CONFIG, top-level imports by cumulative time (-X importtime, one run):")
            for micros, module in top_imports(traced.stderr)[:6]:
                print(f"    {micros / 1000:7.1f} ms  {module}")
    return 0


def startup_env(tree: Path, tmp: Path, db: Path, bytecode: bool) -> dict[str, str]:
    env = {
        **os.environ,
        "NEURARCH_DATABASE_URL": f"sqlite:///{db}",
        "NEURARCH_DATA_DIR": str(tmp),
        "NEURARCH_CONFIG": str(server_config(tmp / "direct.toml", free_port())),
        "PYTHONPATH": str(tree),
    }
    if bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache" / tree.name)
    else:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def medians(runs: list[tuple[float, float, int]]) -> tuple[float, float]:
    """Median wall and CPU milliseconds."""
    return statistics.median(r[0] for r in runs) * 1000, statistics.median(
        r[1] for r in runs
    ) * 1000


def top_imports(stderr: str) -> list[tuple[int, str]]:
    """(cumulative microseconds, module) of each top-level import, costliest first."""
    found = []
    for line in stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            _, cumulative, name = line.split("|")
            if not cumulative.strip().isdigit() or name.startswith("  "):
                continue
            found.append((int(cumulative), name.strip()))
    return sorted(found, reverse=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, help="SQLite file to reuse (built if missing)")
    parser.add_argument("--calls", type=int, default=40, help="calls per command (default 40)")
    parser.add_argument("--startup", action="store_true", help="start-up costs only (see above)")
    parser.add_argument(
        "--tree", type=Path, nargs="+", default=[REPO_ROOT], help="checkouts to run (--startup)"
    )
    parser.add_argument("--no-bytecode", action="store_true", help="compile from source each run")
    args = parser.parse_args()
    if args.startup:
        return startup([tree.resolve() for tree in args.tree], not args.no_bytecode)
    with tempfile.TemporaryDirectory() as tmp:
        db = args.db or Path(tmp) / "corpus.db"
        if not db.exists():
            build_database(db)
        env = {
            **os.environ,
            "NEURARCH_DATABASE_URL": f"sqlite:///{db}",
            "NEURARCH_DATA_DIR": tmp,
            "NEURARCH_CONFIG": str(server_config(Path(tmp) / "direct.toml", free_port())),
            "PYTHONPATH": str(REPO_ROOT),
        }
        served = {
            **env,
            "NEURARCH_CONFIG": str(server_config(Path(tmp) / "served.toml", free_port())),
        }
        cli = [sys.executable, "-m", "tracker.cli"]
        recorded = pairs(db)
        repos = sorted(recorded)
        adjacent = [(r, p, s) for r in repos for s, p in recorded[r] if p is not None]
        spans = [(r, recorded[r][0][0], recorded[r][-1][0]) for r in repos if len(recorded[r]) > 2]
        step = max(1, len(adjacent) // args.calls)
        runs = {
            "python -c pass": [[sys.executable, "-c", "pass"]] * 10,
            "python -c 'import storage'": [[sys.executable, "-c", "import storage"]] * 10,
            "history REPO": [[*cli, "history", r] for r in repos[: args.calls]],
            "diff REPO PARENT SHA": [[*cli, "diff", r, p, s] for r, p, s in adjacent[::step]],
            "diff REPO OLDEST NEWEST": [[*cli, "diff", r, o, n] for r, o, n in spans[: args.calls]],
        }
        print(f"{sys.executable}; {os.cpu_count()} CPUs; load {os.getloadavg()[0]:.1f}")
        direct: dict[str, bytes] = {}
        medians = {
            name: report(name, [timed(a, env, direct) for a in argvs])
            for name, argvs in runs.items()
        }
        commands = {name: argvs for name, argvs in runs.items() if name.startswith(("h", "d"))}
        answered: dict[str, bytes] = {}
        with daemon(served, Path(tmp) / "serve.log"):
            for name, argvs in commands.items():
                label = f"{name} (daemon)"
                medians[label] = report(label, [timed(a, served, answered) for a in argvs])
        same = sum(direct[call] == output for call, output in answered.items())
        print(f"output (exit status, stdout, stderr) the same both ways: {same} of {len(answered)}")
        in_process(env, runs)
    for suffix in ("", " (daemon)"):
        slow = [n for n in ("history REPO", "diff REPO PARENT SHA") if medians[n + suffix] >= 300]
        verdict = "met" if not slow else "not met for " + ", ".join(slow)
        print(f"goal p50 < 300 ms{suffix or ' (no daemon)'}: {verdict}")
    return 0 if same == len(answered) else 1


if __name__ == "__main__":
    sys.exit(main())
