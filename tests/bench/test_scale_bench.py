"""The scale bench at 2,000 synthetic repos: three instances share one PostgreSQL, exactly once.

Deselected by default (``bench`` marker); CI runs it with ``-m bench``. The figures it
prints are the bench's own (tests/bench/bench_scale.py); this asserts the promises.
"""

from __future__ import annotations

import argparse
from types import ModuleType

import pytest

from tests.fixtures.bench_scripts import load_bench

pytestmark = pytest.mark.bench

SIZE = 2000
WINDOW_S = 90.0


def bench_module() -> ModuleType:
    return load_bench("bench_scale")


def test_three_instances_record_every_revision_once_and_idle_costs_one_page() -> None:
    bench = bench_module()
    args = argparse.Namespace(workers=4, seconds=WINDOW_S, seed=0)
    (run,) = bench.measure(SIZE, [3], 0.0, args)
    assert run.revisions > 0
    assert run.duplicates == 0
    assert run.logged == run.final_rows  # every recorded row logged by exactly one instance
    assert all(count > 0 for count in run.per_instance), run.per_instance
    assert run.idle_requests <= 10
    assert run.push_found
    assert max(run.peak_rss_mb) < 1024
