"""The plan API's worker pool: the OS ends a call past its CPU budget, the pool past its wall
budget, and a full pool refuses at once rather than queueing without end."""

from __future__ import annotations

import asyncio
import os
import time

import pytest

from feeds.compute import Budget, ComputeFailed, ComputePool, OverBudget, PoolBusy


def spin() -> int:
    """Pure CPU until killed (what a pathological config would cost)."""
    total = 0
    while True:
        total += 1


def nap(seconds: float) -> int:
    time.sleep(seconds)
    return os.getpid()


def fail() -> None:
    raise KeyError("missing")


def test_cpu_budget_is_enforced_by_the_os_and_the_next_call_gets_a_fresh_worker() -> None:
    pool = ComputePool(Budget(cpu_seconds=1, wall_seconds=30), workers=1, queue=0)
    try:
        started = time.monotonic()
        with pytest.raises(OverBudget, match="CPU budget spent"):
            pool.call(spin)
        assert time.monotonic() - started < 20
        assert pool.call(nap, 0) != os.getpid()  # a fresh worker answers
        with pytest.raises(ComputeFailed, match="KeyError"):
            pool.call(fail)
    finally:
        pool.close()


def test_wall_budget_kills_and_a_full_pool_refuses_at_once() -> None:
    pool = ComputePool(Budget(cpu_seconds=5, wall_seconds=0.5), workers=1, queue=0)

    async def both() -> list[object]:
        first = asyncio.create_task(pool.run(nap, 3))
        await asyncio.sleep(0.1)
        second = asyncio.create_task(pool.run(nap, 0))
        return list(await asyncio.gather(first, second, return_exceptions=True))

    try:
        first, second = asyncio.run(both())
        assert isinstance(first, OverBudget) and "wall budget" in first.reason
        assert isinstance(second, PoolBusy)
    finally:
        pool.close()
