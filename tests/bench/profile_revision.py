"""Where one revision's instance CPU goes: one check worker profiled in steady state.

Run: ``.venv/bin/python tests/bench/profile_revision.py [--workload synthetic|corpus]
[--revisions 300] [--warmup 60] [--top 40] [--sample [--under 'process.py:*(commit)']]
[--dump profile.pstats]``.

The worker runs in a subprocess exactly as ``tests/bench/bench_revision_cost.py`` runs it
(the daemon's ``Worker`` and publishers, SQLite, the Hub emulator served from this
process so its CPU is not the instance's). Profiling starts after ``--warmup`` revisions
(imports and caches amortised) and stops after ``--revisions`` more; the functions are
printed by cumulative and by own CPU time in milliseconds per revision (the process's CPU,
every thread's: waiting on the Hub or the database is not counted; the isolated parser
pool's children are not seen). Before the tables, the window's CPU per revision is split
by thread (the worker's, its heartbeat) and by live child process (the isolated parser
pool), from ``/proc``: what the profiled main thread does not show.

Two profilers, because each misleads alone: cProfile (the default) counts every call but
triples the cost of code made of many small calls (SQLAlchemy, httpx, cattrs), so it
ranks them too high; ``--sample`` interrupts the process every millisecond of its CPU
(``SIGPROF``) and charges the main thread's stack, which keeps the proportions but
gives no call counts. ``--under`` (with ``--sample``) also prints where the CPU inside one
function goes: the samples whose stack holds it, by the calls below it, three deep.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from fnmatch import fnmatch
from pathlib import Path
from types import FrameType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_revision_cost import (
    ROOT,
    checking_worker,
    descendants,
    hub_for,
    instance_environment,
    proc_cpu_s,
)


def instance(args: argparse.Namespace) -> int:
    """Record the workload with one worker, profiling the window; print the tables."""
    worker, metrics, database, _ = checking_worker(args, "profile/0")

    def recorded() -> int:
        return int(metrics.registry.get_sample_value("neurarch_revisions_recorded_total") or 0)

    profile = cProfile.Profile(time.process_time) if not args.sample else None
    sampler = Sampler(under=args.under) if args.sample else None
    start: int | None = None
    while worker.run_once():
        done = recorded()
        if start is None and done >= args.warmup:
            start = done
            if profile is not None:
                profile.enable()
            if sampler is not None:
                sampler.start()
            places = where_cpu_goes()
        if start is not None and done - start >= args.revisions:
            break
    if profile is not None:
        profile.disable()
    if sampler is not None:
        sampler.stop()
    if start is None:
        raise SystemExit(f"only {recorded()} revisions recorded, fewer than --warmup")
    revisions = recorded() - start
    print(f"{revisions} revisions profiled; ms per revision")
    print_places(places, where_cpu_goes(), revisions)
    if profile is not None:
        if args.dump:
            profile.dump_stats(args.dump)
        for order in ("cumulative", "tottime"):
            print_top(profile, order, revisions, args.top)
    if sampler is not None:
        sampler.print_top(revisions, args.top)
    database.close()
    return 0


def where_cpu_goes() -> dict[str, float]:
    """CPU seconds so far of each thread of this process (by its Python name) and of each
    live descendant process (by pid and command): where the instance's CPU is spent outside
    the profiled main thread."""
    import threading

    names = {thread.native_id: thread.name for thread in threading.enumerate()}
    places: dict[str, float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for task in Path("/proc/self/task").iterdir():
        try:
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        name = names.get(int(task.name), f"thread {task.name}")
        places[f"thread {name}"] = sum(int(f) for f in fields[11:13]) / tick
    for pid in descendants(os.getpid()):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")[:60]
            places[f"process {pid} {command.decode(errors='replace')}"] = proc_cpu_s(pid)
        except OSError:
            continue
    return places


def print_places(before: dict[str, float], after: dict[str, float], revisions: int) -> None:
    """Each thread's and descendant's CPU ms per revision over the window, largest first."""
    spent = {name: after[name] - before.get(name, 0.0) for name in after}
    print(f"\nby thread and process ({1000 * sum(spent.values()) / revisions:.2f} ms in all):")
    for name, seconds in sorted(spent.items(), key=lambda item: -item[1]):
        if seconds > 0:
            print(f"{1000 * seconds / revisions:8.3f}  {name}")


def print_top(profile: cProfile.Profile, order: str, revisions: int, top: int) -> None:
    """The ``top`` functions by ``order``, their times divided by ``revisions``."""
    stats = pstats.Stats(profile, stream=io.StringIO())
    rows: list[tuple[float, float, int, str]] = []
    table: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    for (path, line, name), (_, calls, own, cumulative, _) in table.items():
        where = f"{Path(path).name}:{line}({name})" if line else name
        rows.append((cumulative, own, calls, where))
    rows.sort(key=lambda r: r[0] if order == "cumulative" else r[1], reverse=True)
    print(f"\nby {order}:\n{'cum ms':>8} {'own ms':>8} {'calls':>8}  function")
    for cumulative, own, calls, where in rows[:top]:
        print(
            f"{1000 * cumulative / revisions:8.3f} {1000 * own / revisions:8.3f} "
            f"{calls / revisions:8.1f}  {where}"
        )


class Sampler:
    """About every ``interval_s`` of the process's CPU, the main thread's stack, counted per function:
    once in ``inclusive`` for each function on the stack, and in ``own`` for the innermost."""

    def __init__(self, interval_s: float = 0.001, under: str | None = None) -> None:
        self.interval_s = interval_s
        self.under = under
        self.inclusive: Counter[str] = Counter()
        self.own: Counter[str] = Counter()
        self.below: Counter[tuple[str, ...]] = Counter()
        self.samples = 0
        self.cpu_s = 0.0

    def start(self) -> None:
        self.cpu_s = -time.process_time()
        signal.signal(signal.SIGPROF, self._sample)
        signal.setitimer(signal.ITIMER_PROF, self.interval_s, self.interval_s)

    def stop(self) -> None:
        signal.setitimer(signal.ITIMER_PROF, 0, 0)
        signal.signal(signal.SIGPROF, signal.SIG_DFL)
        self.cpu_s += time.process_time()

    def _sample(self, _: int, frame: FrameType | None) -> None:
        self.samples += 1
        seen: set[str] = set()
        stack: list[str] = []
        while frame is not None:
            code = frame.f_code
            name = f"{Path(code.co_filename).name}:{code.co_firstlineno}({code.co_name})"
            if not stack:
                self.own[name] += 1
            stack.append(name)
            if name not in seen:
                seen.add(name)
                self.inclusive[name] += 1
            frame = frame.f_back
        if self.under is not None:
            self._count_below(stack)

    def _count_below(self, stack: list[str]) -> None:
        """Count the sample once for each of the (up to) three calls below ``under``'s
        outermost frame, each keyed by its path from there."""
        assert self.under is not None
        for depth in range(len(stack) - 1, -1, -1):
            if fnmatch(stack[depth], self.under):
                path = tuple(reversed(stack[max(0, depth - 3) : depth + 1]))
                for length in range(1, len(path) + 1):
                    self.below[path[:length]] += 1
                return

    def print_top(self, revisions: int, top: int) -> None:
        """The ``top`` functions by inclusive and by own samples, as CPU ms per revision: each
        sample stands for an equal share of the window's CPU (the kernel may deliver the
        signal at its tick rather than at ``interval_s``)."""
        per = 1000 * self.cpu_s / max(1, self.samples) / revisions
        print(f"{self.samples} samples, {self.samples * per:.2f} ms per revision in all")
        for title, counter in (("cumulative", self.inclusive), ("own", self.own)):
            print(f"\nsampled, by {title}:\n{'ms':>8}  function")
            for name, count in counter.most_common(top):
                print(f"{count * per:8.3f}  {name}")
        if self.under is not None:
            self._print_below(per)

    def _print_below(self, per: float) -> None:
        """The tree under ``under``: each call's CPU ms per revision, children by cost."""
        print(f"\nsampled, below {self.under}:\n{'ms':>8}  function")

        def show(path: tuple[str, ...]) -> None:
            print(f"{self.below[path] * per:8.3f}  {'  ' * (len(path) - 1)}{path[-1]}")
            children = [p for p in self.below if len(p) == len(path) + 1 and p[:-1] == path]
            for child in sorted(children, key=lambda p: -self.below[p]):
                if self.below[child] * per >= 0.05:
                    show(child)

        for root in sorted((p for p in self.below if len(p) == 1), key=lambda p: -self.below[p]):
            show(root)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", default="synthetic", choices=("synthetic", "corpus"))
    parser.add_argument("--revisions", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=60)
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--sample", action="store_true", help="sample the stack on SIGPROF")
    parser.add_argument("--dump", help="also write cProfile's raw pstats here")
    parser.add_argument(
        "--under", help="with --sample: the calls below this function (fnmatch on file:line(name))"
    )
    parser.add_argument("--instance", action="store_true", help=argparse.SUPPRESS)
    for name in ("url", "endpoint", "repos", "scratch"):
        parser.add_argument(f"--{name}", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.instance:
        return instance(args)
    hub, repos = hub_for(args.workload, args)
    endpoint = hub.start()
    try:
        with tempfile.TemporaryDirectory(prefix="profile-revision-") as temp:
            scratch = Path(temp)
            listing = scratch / "repos.json"
            listing.write_text(json.dumps(repos))
            env = instance_environment(ROOT)
            command = [
                sys.executable,
                str(Path(__file__).resolve()),
                "--instance",
                f"--url=sqlite:///{scratch / 'profile.db'}",
                f"--endpoint={endpoint}",
                f"--repos={listing}",
                f"--scratch={scratch}",
                f"--revisions={args.revisions}",
                f"--warmup={args.warmup}",
                f"--top={args.top}",
                *(["--sample"] if args.sample else []),
                *([f"--under={args.under}"] if args.under else []),
                *([f"--dump={Path(args.dump).resolve()}"] if args.dump else []),
            ]
            return subprocess.run(command, cwd=ROOT, env=env).returncode
    finally:
        hub.stop()


if __name__ == "__main__":
    raise SystemExit(main())
