"""What isolation costs a chat template render, and how fast hostile templates are stopped.

Run: ``python tests/bench/bench_isolated_render.py [--rounds 50]``.

1. Overhead: one corpus template's probes rendered ROUNDS times through the
   isolated worker (``render_probes``) and ROUNDS times in this process
   (``render_prompts`` called directly); the medians and their difference.
   A trivial template shows the fixed cost of one round trip.
2. Hostile templates (tests/tracker/test_sandbox_limits.py): wall time of
   each, through the worker, and the growth of this process's RSS over all.
3. A call stuck in C: time until the worker is killed, and until a fresh one
   answers.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.tracker.test_isolation import c_bound_power, worker_pid  # noqa: E402
from tests.tracker.test_sandbox_limits import HOSTILE, rss_bytes  # noqa: E402
from tracker.diff.sandbox import render_prompts  # noqa: E402
from tracker.diff.template_probes import probes, render_probes  # noqa: E402
from tracker.untrusted.isolation import DeadlineExceeded, IsolatedPool, Limits  # noqa: E402

CORPUS = ROOT.parent / "shared" / "hub-corpus"
TEMPLATE = (
    CORPUS / "openai/gpt-oss-20b/03fd454aae9be5799e9531726db7f6d0673675cb/chat_template.jinja"
)


def median_ms(action: Callable[[], object], rounds: int) -> float:
    timings = []
    for _ in range(rounds):
        started = time.perf_counter()
        action()
        timings.append(time.perf_counter() - started)
    return statistics.median(timings) * 1000


def overhead(rounds: int) -> None:
    now = datetime(2026, 1, 15, tzinfo=UTC)
    for name, template in (
        ("trivial", "{{ messages[0].content }}"),
        ("gpt-oss", TEMPLATE.read_text()),
    ):
        variables = [
            {"messages": list(p.messages), "add_generation_prompt": p.add_generation_prompt}
            | ({"tools": list(p.tools)} if p.tools is not None else {})
            for p in probes()
        ]
        render_probes(template, {})  # warm: the pool is started, imports done
        isolated = median_ms(partial(render_probes, template, {}), rounds)
        local = median_ms(partial(render_prompts, template, now, variables), rounds)
        print(
            f"{name:8s} {len(variables):2d} probes: isolated {isolated:6.2f} ms, "
            f"in-process {local:6.2f} ms, overhead {isolated - local:5.2f} ms (median of {rounds})"
        )


def hostile() -> None:
    render_probes("{{ messages[0].content }}", {})
    before = rss_bytes()
    worst = 0.0
    for name, (template, _) in HOSTILE.items():
        started = time.perf_counter()
        rendered = render_probes(template, {})
        elapsed = time.perf_counter() - started
        worst = max(worst, elapsed)
        first = next(iter(rendered.values())).error or ""
        print(f"{elapsed * 1000:7.1f} ms  {name:40s} {first[:90]}")
    growth = (rss_bytes() - before) / 1024 / 1024
    print(
        f"{len(HOSTILE)} hostile templates; slowest {worst:.2f} s; this process's RSS +{growth:.1f} MB"
    )


def kill() -> None:
    with IsolatedPool(Limits(wall_seconds=1.0), max_workers=1) as pool:
        pool.call(worker_pid)
        started = time.perf_counter()
        try:
            pool.call(c_bound_power)
        except DeadlineExceeded:
            killed = time.perf_counter() - started
        started = time.perf_counter()
        pool.call(worker_pid)
        print(
            f"stuck in C: killed after {killed:.3f} s (deadline 1 s); "
            f"fresh worker answered in {(time.perf_counter() - started) * 1000:.0f} ms"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=50)
    args = parser.parse_args()
    overhead(args.rounds)
    hostile()
    kill()


if __name__ == "__main__":
    main()
