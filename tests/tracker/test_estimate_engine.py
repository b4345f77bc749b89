"""The revision's estimate carries vLLM's start-up verdict, computed once when it is processed.

The demo's Llama-2-7B at 4,096 tokens is estimated as processing estimates it
(``tracker.revision.estimate.estimate`` over the revision's parsed files): the stored
plan's ``serving.engine`` is vLLM at its defaults on the workload's card, at
the model's own context. An engine model that refuses the config leaves the
plan without a verdict instead of losing the revision's estimate.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

import estimator
from estimator.engines import ENGINES
from estimator.errors import WorkloadError
from storage.records import Revision
from tests.storage.builders import snapshot
from tracker.demo import HISTORIES
from tracker.diff.revision import RevisionContent
from tracker.revision.estimate import estimate

CONFIG = HISTORIES / "neurarch-demo/llama2-7b/2c19299788366b0adb608e08386b56071abf010a/config.json"


def content() -> RevisionContent:
    texts = {"config.json": CONFIG.read_bytes()}
    revision = Revision("org/llama", "a" * 40, (), datetime(2024, 1, 1, tzinfo=UTC), "c")
    return RevisionContent(snapshot(revision, texts), texts)


def test_the_stored_plan_carries_vllms_verdict_on_the_workloads_card() -> None:
    plan, change = estimate(content())
    assert change is None and plan is not None
    document = plan.to_json()
    verdict = plan.engine
    assert verdict is not None
    assert (verdict.name, verdict.card, verdict.tensor_parallel) == ("vllm", "A10G", 1)
    assert plan.workload.card == "A10G"
    assert (verdict.max_model_len, verdict.starts, verdict.error) == (4096, True, None)
    assert dict(verdict.settings)["gpu_memory_utilization"] == 0.9
    assert verdict.kv_cache_tokens == document["serving"]["engine"]["kv_cache_tokens"] == 14896


def test_an_engine_refusal_keeps_the_plan_without_a_verdict(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refuses(*_: object) -> estimator.EngineVerdict:
        raise WorkloadError("engine: refused")

    monkeypatch.setitem(ENGINES, "vllm", refuses)
    plan, change = estimate(content())
    assert change is None and plan is not None and "serving" not in plan.to_json()
    assert plan.engine is None
