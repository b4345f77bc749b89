"""POST /api/v1/plan: paste a config.json, get the estimator's Plan JSON.

The one place the app computes anything, and only for a config the caller
sends; tracked models are never re-estimated per request. The handler only
routes: each client address is held to ``plan_rate`` (429 past it), the body
is capped before it is read, and parsing, estimating and serialising run in
a compute worker (``feeds.plan_work`` in ``feeds.compute``) within a CPU,
wall-time and response-size budget, so no config can hold the event loop
that answers every other request. Every refusal names the problem.
"""

from __future__ import annotations

import math

from fastapi import APIRouter, HTTPException, Request, Response

from feeds.compute import ComputeFailed, OverBudget, PoolBusy
from feeds.limits import BodyTooLarge, read_body
from feeds.plan_work import plan_answer
from feeds.state import AppState

CONFIG_EXAMPLE = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 2048,
    "intermediate_size": 8192,
    "num_hidden_layers": 16,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "vocab_size": 128256,
    "max_position_embeddings": 131072,
    "tie_word_embeddings": True,
    "torch_dtype": "bfloat16",
}
BUSY_RETRY_SECONDS = 1
# Failures of the worker that the caller's config provoked (it asked for too much).
_BUDGET_KINDS = frozenset({"MemoryError", "RecursionError"})

RESPONSES: dict[int | str, dict[str, str]] = {
    400: {"description": "not UTF-8 JSON, not an object, NaN/Infinity, or an over-long integer"},
    413: {"description": "body over the plan API's byte cap"},
    422: {"description": "the estimator refuses the config, or it passes the CPU/size budget"},
    429: {"description": "this client address called too often; see Retry-After"},
    503: {"description": "every plan worker is busy; see Retry-After"},
}


def router(state: AppState) -> APIRouter:
    """``POST /api/v1/plan``: a pasted config planned in the bounded worker pool, rate-limited."""
    api = APIRouter(tags=["estimator"])
    settings = state.settings

    @api.post(
        "/api/v1/plan",
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {
                    "application/json": {
                        "schema": {"type": "object", "additionalProperties": True},
                        "example": CONFIG_EXAMPLE,
                    }
                },
            }
        },
        responses=RESPONSES,
    )
    async def plan(request: Request) -> Response:
        """The Plan for a pasted config.json (a JSON object)."""
        client = request.client.host if request.client else "unknown"
        wait = state.plan_rate.admit(client)
        if wait is not None:
            raise HTTPException(
                429,
                f"over {settings.plan_rate} plan requests from {client}",
                headers={"Retry-After": str(math.ceil(wait))},
            )
        limit = settings.max_plan_body_bytes
        try:
            raw = await read_body(request, limit)
        except BodyTooLarge:
            raise HTTPException(413, f"config.json body is over {limit} bytes") from None
        try:
            status, payload = await state.compute.run(
                plan_answer, raw, settings.max_plan_response_bytes
            )
        except PoolBusy as exc:
            raise HTTPException(
                503, str(exc), headers={"Retry-After": str(BUSY_RETRY_SECONDS)}
            ) from None
        except OverBudget as exc:
            raise HTTPException(422, _over_budget(exc.reason, state)) from None
        except ComputeFailed as exc:
            if exc.kind not in _BUDGET_KINDS:
                raise
            raise HTTPException(422, _over_budget(exc.kind, state)) from None
        if isinstance(payload, str):
            raise HTTPException(status, payload)
        return Response(payload, media_type="application/json")

    return api


def _over_budget(reason: str, state: AppState) -> str:
    budget = state.compute.budget
    return (
        f"config.json cannot be estimated within the budget ({budget.cpu_seconds} s of CPU, "
        f"{budget.wall_seconds:g} s, {budget.memory_bytes // 2**20} MiB): {reason}"
    )


__all__ = ["CONFIG_EXAMPLE", "router"]
