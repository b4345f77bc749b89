"""Engine fit alerts on a real database: a model that outgrows the card, fixed lengths, no flips.

The revisions are recorded as processing records them (``History`` of the
fit alert tests: blobs, revision, stored plan and alerts in one transaction).
The figures are the estimator's vLLM start-up on the demo Llama-2-7B config
at 4,096 tokens on an L4: 32 layers start (the KV cache holds 14,896 tokens);
64 layers' weights (24.61 GiB) do not load on one (0 tokens) but start at
tensor parallel 2 (15,408 tokens); 48 layers hold 1,696 tokens on one L4.
On two L4s (tensor parallel 2) 32 layers hold 55,520 tokens and 120 layers do not load; on
four they start (18,336 tokens). A context of 2,048 tokens makes vLLM refuse max_model_len
4,096 outright.
"""

from __future__ import annotations

from typing import Any

from storage import Database
from tests.tracker.test_alert_evaluate import (
    LONGER,
    REPO,
    ROPE,
    UPLOAD,
    History,
    config_with,
    demo_config,
    only,
    subscribe,
)

VLLM_AT_4K: dict[str, Any] = {
    "method": "serve",
    "batch": 1,
    "seq_len": 4096,
    "engine": "vllm",
    "cards": ["L4"],
    "alert_on": ["fit"],
}


def test_weights_that_outgrow_the_card_say_no_length_starts_and_name_the_gpus(
    database: Database,
) -> None:
    subscribe(database, **VLLM_AT_4K)
    history = History(database)
    history.commit(UPLOAD, {"config.json": config_with(LONGER, num_hidden_layers=32)})
    alert = only(history.commit(LONGER, {"config.json": config_with(LONGER, num_hidden_layers=64)}))

    assert alert.payload["summary"] == (
        "vLLM on L4 no longer starts at max_model_len 4,096 (the KV cache holds 0 tokens); "
        "no max_model_len starts on L4; use 2 GPUs (was: starts at max_model_len 4,096, the KV "
        f"cache holding 14,896 tokens) ({REPO}@2c19299)"
    )
    (flip,) = alert.payload["fit"]
    assert flip["after"]["error"].startswith("torch.OutOfMemoryError: CUDA out of memory")
    assert (flip["after"]["max_model_len_that_starts"], flip["after"]["wider_gpus"]) == (0, 2)


def test_a_job_on_two_gpus_is_offered_four(database: Database) -> None:
    subscribe(database, **{**VLLM_AT_4K, "gpus": 2})
    history = History(database)
    history.commit(UPLOAD, {"config.json": config_with(LONGER, num_hidden_layers=32)})
    alert = only(
        history.commit(LONGER, {"config.json": config_with(LONGER, num_hidden_layers=120)})
    )
    assert alert.payload["summary"] == (
        "vLLM on L4 no longer starts at max_model_len 4,096 (the KV cache holds 0 tokens); "
        "no max_model_len starts on L4; use 4 GPUs (was: starts at max_model_len 4,096, the KV "
        f"cache holding 55,520 tokens) ({REPO}@2c19299)"
    )
    (flip,) = alert.payload["fit"]
    assert flip["after"]["wider_gpus"] == 4


def test_a_fixed_length_is_not_moved_by_the_context_and_48_layers_name_the_length_that_starts(
    database: Database,
) -> None:
    subscribe(database, **VLLM_AT_4K)
    history = History(database)
    history.commit(LONGER, {"config.json": demo_config(LONGER)})
    assert history.commit(ROPE, {"config.json": demo_config(ROPE)}) == []  # 4,096 still starts
    alert = only(history.commit(UPLOAD, {"config.json": config_with(LONGER, num_hidden_layers=48)}))
    assert alert.payload["summary"].startswith(
        "vLLM on L4 no longer starts at max_model_len 4,096 (the KV cache holds 1,696 tokens); "
        "pass --max-model-len 1696 or use 2 GPUs (was: starts at max_model_len 4,096"
    )


def test_a_context_reaching_the_jobs_length_starts_vllm_again(database: Database) -> None:
    """At 2,048 tokens of context vLLM refuses max_model_len 4,096 before profiling (0 tokens)."""
    subscribe(database, **VLLM_AT_4K)
    history = History(database)
    history.commit(UPLOAD, {"config.json": demo_config(UPLOAD)})
    alert = only(history.commit(LONGER, {"config.json": demo_config(LONGER)}))

    assert alert.payload["summary"] == (
        "vLLM on L4 starts again at max_model_len 4,096 (the KV cache holds 14,896 tokens) "
        "(was: does not start at max_model_len 4,096, the KV cache holding 0 tokens) "
        f"({REPO}@2c19299)"
    )
    (flip,) = alert.payload["fit"]
    assert flip["before"]["error"].startswith(
        "User-specified max_model_len (4096) is greater than the derived max_model_len"
    )
    assert flip["before"]["max_model_len_that_starts"] == 2048
    assert flip["after"]["wider_gpus"] is None
