"""A loop that empties the CUDA cache after every step carries no fragmentation between steps."""

from __future__ import annotations

import random

import pytest

from estimator import Workload, plan
from estimator.errors import WorkloadError
from estimator.memory import method_models
from estimator.memory.training import RESERVE_DYNAMIC, RESERVE_STATIC
from tests.estimator.archbuilder import llama_like
from tests.estimator.configgen import llama
from tests.estimator.test_recipes import cli

ARCH = llama_like()


@pytest.mark.parametrize("method", ["full", "lora", "qlora"])
def test_the_reserve_is_the_steps_allocated_peak_plus_the_static_slack(method: str) -> None:
    emptied = Workload(method=method, batch=4, seq_len=64, empty_cache_each_step=True)
    model = method_models(ARCH, emptied, has_bf16=True)[method]
    expected = max(p.fixed() * (1 + RESERVE_STATIC) + p.per_sample() * 4 for p in model.phases)
    assert model.reserved(4) == round(expected)
    cached = method_models(ARCH, Workload(method=method, batch=4, seq_len=64), has_bf16=True)
    carried = max(
        p.fixed() * (1 + RESERVE_STATIC) + p.per_sample() * 4 * (1 + RESERVE_DYNAMIC)
        for p in cached[method].phases
    )
    assert cached[method].reserved(4) == round(carried)
    # The allocated peak is the same: only the allocator's slack differs.
    assert model.allocated(4) == cached[method].allocated(4)


def test_the_plan_states_it_and_the_flag_reaches_the_workload() -> None:
    p = plan(
        llama(random.Random(7)),
        Workload(method="lora", batch=2, seq_len=128, empty_cache_each_step=True),
    )
    assert any("emptied after each step" in a for a in p.assumptions)
    assert cli("--empty-cache-each-step").empty_cache_each_step is True
    assert cli("--no-empty-cache-each-step").empty_cache_each_step is False
    assert cli().empty_cache_each_step is False


def test_a_non_boolean_is_refused() -> None:
    with pytest.raises(WorkloadError, match="empty_cache_each_step must be true or false"):
        Workload(empty_cache_each_step="yes")  # type: ignore[arg-type]
