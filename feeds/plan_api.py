"""POST /api/v1/plan: paste a config.json, get the estimator's Plan JSON.

The one place the app computes anything, and only for a config the caller
sends; tracked models are never re-estimated per request. The body is
capped before it is parsed, and every refusal names the problem.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import JSONResponse

import estimator
from estimator.errors import EstimateError
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


def router(state: AppState) -> APIRouter:
    api = APIRouter(tags=["estimator"])

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
        responses={400: {"description": "not a JSON object"}, 413: {}, 422: {}},
    )
    async def plan(request: Request) -> JSONResponse:
        """The Plan for a pasted config.json (a JSON object)."""
        limit = state.settings.max_plan_body_bytes
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise HTTPException(413, f"config.json body is over {limit} bytes")
        raw = b""
        async for chunk in request.stream():
            raw += chunk
            if len(raw) > limit:
                raise HTTPException(413, f"config.json body is over {limit} bytes")
        config = _parse(raw)
        try:
            result = estimator.plan(config)
        except EstimateError as exc:
            raise HTTPException(422, f"config.json cannot be estimated: {exc}") from None
        return JSONResponse(result.to_json())

    return api


def _parse(raw: bytes) -> dict[str, Any]:
    try:
        config = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise HTTPException(400, "config.json body is not UTF-8") from None
    except json.JSONDecodeError as exc:
        raise HTTPException(
            400, f"config.json is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    if not isinstance(config, dict):
        raise HTTPException(400, f"config.json must be a JSON object, not {type(config).__name__}")
    return config


__all__ = ["router"]
