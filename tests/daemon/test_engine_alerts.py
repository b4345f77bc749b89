"""Engine fit alerts from a context-extension commit, through the daemon's worker and the Hub emulator.

A Llama config at 8,192 tokens is published to the emulator, then the llama3
rope-scaling commit that takes it to 131,072 (the demo's Llama-2-7B history,
modelled on Llama 3.1), then back. The worker fetches each revision with the
real huggingface_hub client, records it on SQLite or PostgreSQL and queues the
alerts of a subscription serving with ``engine = "vllm"`` in the revision's
transaction. The figures are the estimator's vLLM start-up on Llama-2-7B
(bf16, gpu_memory_utilization 0.9): its KV cache holds 14,896 tokens on an L4
(55,520 at tensor parallel 2, still short of 131,072) and 119,696 on an
A100 80GB (265,088 at tensor parallel 2, enough).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from storage import Database, Delivery, deliveries, get_subscription
from tests.daemon.conftest import run_until_idle, track_all
from tracker.alerts.registry import save_subscription
from tracker.alerts.spec import parse_subscription
from tracker.commands.demo import store_demo_subscriptions
from tracker.daemon import Daemon, publisher
from tracker.demo import HISTORIES
from tracker.hub.api import connect
from tracker.hub.client import Hub
from tracker.hub.discovery import HeadProbe
from tracker.hubsim import HubEmulator, estimator_tensor_shapes
from tracker.schedule.metrics import DaemonMetrics
from tracker.schedule.worker import Worker, WorkerPolicy
from tracker.settings import HubSettings, Settings

EMPTY_HUB = pytest.mark.parametrize("hub_emulator", [{"corpus": None}], indirect=True)

REPO = "engines/llama2-7b"
LLAMA2 = HISTORIES / "neurarch-demo" / "llama2-7b"
UPLOAD = LLAMA2 / "7dba8667ad27534931d66b826bbdc7b31fad885c" / "config.json"
ROPE_128K = LLAMA2 / "59187708e28f74d2a1074eae3e844f9a6d991ebd" / "config.json"
START = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)
SERVE_WITH_VLLM: dict[str, Any] = {
    "name": "vllm-full-context",
    "repos": ["engines/*"],
    "method": "serve",
    "batch": 1,
    "seq_len": "max",
    "engine": "vllm",
    "cards": ["L4", "A100 80GB"],
    "alert_on": ["fit"],
}


def config_8k() -> bytes:
    document = json.loads(UPLOAD.read_text())
    return json.dumps({**document, "max_position_embeddings": 8192}, indent=2).encode()


class Clock:
    def __init__(self) -> None:
        self.now = datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.now


def worker(database: Database, hub: HubEmulator, tmp_path: Path, clock: Clock) -> Worker:
    settings = Settings.in_dir(tmp_path)
    daemon = Daemon(settings=settings, config=settings.daemon, database=database, clock=clock)
    return Worker(
        database,
        Hub(connect(HubSettings(hub.endpoint)), max_retries=2, timeout=5.0),
        HeadProbe(connect(HubSettings(hub.endpoint))),
        owner="engines/0",
        policy=WorkerPolicy(interval_s=60.0, max_backoff_s=600.0, lease_s=60.0),
        metrics=DaemonMetrics(),
        clock=clock,
        publish=daemon.with_alerts(publisher(clock)),
    )


def fit_alerts(database: Database, subscription: int) -> dict[str, Delivery]:
    with database.read_session() as session:
        return {
            d.sha or "": d
            for d in deliveries(session, subscription)
            if d.channel == "feed" and d.payload["kind"] == "fit"
        }


@EMPTY_HUB
def test_vllm_subscription_hears_the_128k_commit_stop_it_starting_and_the_revert(
    database: Database, hub_emulator: HubEmulator, tmp_path: Path
) -> None:
    with database.session() as session:
        spec = parse_subscription(SERVE_WITH_VLLM)
        subscription = save_subscription(session, spec, now=START)[0].id
    clock = Clock()
    hub_emulator.publish(REPO, {"config.json": config_8k()}, date=START)
    track_all(database, [REPO], clock.now)
    checks = worker(database, hub_emulator, tmp_path, clock)
    run_until_idle(checks)
    extended = hub_emulator.publish(
        REPO, {"config.json": ROPE_128K.read_bytes()}, date=START + timedelta(1)
    )
    clock.now += timedelta(minutes=2)
    run_until_idle(checks)
    reverted = hub_emulator.publish(REPO, {"config.json": config_8k()}, date=START + timedelta(2))
    clock.now += timedelta(minutes=2)
    run_until_idle(checks)

    alerts = fit_alerts(database, subscription)
    assert set(alerts) == {extended, reverted}  # the upload is the baseline
    stopped = alerts[extended].payload
    assert stopped["summary"] == (
        "vLLM on L4 no longer starts at max_model_len 131,072 (the KV cache holds 14,896 "
        "tokens); pass --max-model-len 14896 (was: starts at max_model_len 8,192, the KV "
        "cache holding 14,896 tokens); vLLM on A100 80GB no longer starts at max_model_len "
        "131,072 (the KV cache holds 119,696 tokens); pass --max-model-len 119696 or use 2 GPUs "
        "(was: starts at max_model_len 8,192, the KV cache holding 119,696 tokens) "
        f"({REPO}@{extended[:7]})"
    )
    l4, a100 = stopped["fit"]
    assert (l4["card"], l4["engine"], a100["card"]) == ("L4", "vllm", "A100 80GB")
    assert l4["before"] == {
        "starts": True,
        "max_model_len": 8192,
        "kv_cache_tokens": 14896,
        "max_model_len_that_starts": 8192,
        "error": None,
        "wider_gpus": None,
    }
    after = l4["after"]
    assert (after["starts"], after["max_model_len"], after["kv_cache_tokens"]) == (
        False,
        131072,
        14896,
    )
    assert after["max_model_len_that_starts"] == 14896 and after["wider_gpus"] is None
    assert "max seq len (131072)" in after["error"]
    assert "estimated maximum model length is 14896" in after["error"]
    assert (a100["after"]["max_model_len_that_starts"], a100["after"]["wider_gpus"]) == (119696, 2)
    again = alerts[reverted].payload
    assert again["summary"] == (
        "vLLM on L4 starts again at max_model_len 8,192 (the KV cache holds 14,896 tokens) "
        "(was: does not start at max_model_len 131,072, the KV cache holding 14,896 tokens); "
        "vLLM on A100 80GB starts again at max_model_len 8,192 (the KV cache holds 119,696 "
        "tokens) (was: does not start at max_model_len 131,072, the KV cache holding 119,696 "
        f"tokens) ({REPO}@{reverted[:7]})"
    )
    assert [flip["after"]["starts"] for flip in again["fit"]] == [True, True]
    assert json.loads(json.dumps(stopped)) == stopped


@EMPTY_HUB
def test_the_memory_rule_no_longer_decides_an_engine_subscription(
    database: Database, hub_emulator: HubEmulator, tmp_path: Path
) -> None:
    """2,048 -> 4,096 tokens stops batch 4 fitting an L4 by peak memory, yet vLLM starts at both."""
    document = {**SERVE_WITH_VLLM, "batch": 4, "cards": ["L4"]}
    with database.session() as session:
        subscription = save_subscription(session, parse_subscription(document), now=START)[0].id
    clock = Clock()
    hub_emulator.publish(REPO, {"config.json": UPLOAD.read_bytes()}, date=START)
    track_all(database, [REPO], clock.now)
    checks = worker(database, hub_emulator, tmp_path, clock)
    run_until_idle(checks)
    longer = json.dumps({**json.loads(UPLOAD.read_text()), "max_position_embeddings": 4096})
    hub_emulator.publish(REPO, {"config.json": longer.encode()}, date=START + timedelta(1))
    clock.now += timedelta(minutes=2)
    run_until_idle(checks)

    assert fit_alerts(database, subscription) == {}


def test_the_demo_vllm_subscription_alerts_on_the_128k_revision_only(
    database: Database, tmp_path: Path
) -> None:
    """The shipped demo: its histories backfilled, its subscriptions stored, as ``demo`` does."""
    hub = HubEmulator(HISTORIES, tensor_shapes=estimator_tensor_shapes)
    hub.start("127.0.0.1", 0)
    try:
        assert store_demo_subscriptions(database) == ["demo-full-context", "demo-vllm"]
        clock = Clock()
        track_all(database, hub.repo_ids(), clock.now)
        run_until_idle(worker(database, hub, tmp_path, clock))
    finally:
        hub.stop()
    with database.read_session() as session:
        vllm = get_subscription(session, "demo-vllm").id
    alerts = fit_alerts(database, vllm)
    rope = "59187708e28f74d2a1074eae3e844f9a6d991ebd"
    assert list(alerts) == [rope]  # 2,048 -> 4,096 starts on both cards: no alert
    assert alerts[rope].repo_id == "neurarch-demo/llama2-7b"
    assert alerts[rope].payload["summary"] == (
        "vLLM on L4 no longer starts at max_model_len 131,072 (the KV cache holds 14,896 "
        "tokens); pass --max-model-len 14896 (was: starts at max_model_len 4,096, the KV "
        "cache holding 14,896 tokens); vLLM on A100 80GB no longer starts at max_model_len "
        "131,072 (the KV cache holds 119,696 tokens); pass --max-model-len 119696 or use 2 GPUs "
        "(was: starts at max_model_len 4,096, the KV cache holding 119,696 tokens) "
        "(neurarch-demo/llama2-7b@5918770)"
    )
