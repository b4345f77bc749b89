"""What ``POST /api/v1/plan`` computes, run in a compute worker (feeds.compute), never in the app.

Parsing, estimating and serialising all scale with what the caller sends
(a config of a few hundred bytes can declare ten thousand layers and make a
Plan of megabytes), so all three happen here, under the worker's CPU and
memory limits, and the Plan crosses back only if it is within the response
budget. The answer is plain data: ``(200, JSON bytes)`` or ``(status, message)``.
"""

from __future__ import annotations

import json
from typing import Any

import estimator
from estimator.errors import EstimateError

MAX_INT_DIGITS = 64
"""Digits an integer in a config.json may have; far past any real size, far below Python's
4,300-digit parse limit (whose error would otherwise surface as an internal one)."""

Answer = tuple[int, bytes | str]


class _Refused(ValueError):
    """A number json.loads would accept that the app does not."""


def plan_answer(raw: bytes, max_response_bytes: int) -> Answer:
    """The Plan JSON for config.json ``raw``, or the status and one line saying why not."""
    try:
        config = _parse(raw)
    except _Refused as exc:
        return 400, f"config.json is not JSON the server accepts: {exc}"
    except UnicodeDecodeError:
        return 400, "config.json body is not UTF-8"
    except json.JSONDecodeError as exc:
        return (
            400,
            f"config.json is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}",
        )
    if not isinstance(config, dict):
        return 400, f"config.json must be a JSON object, not {type(config).__name__}"
    try:
        document = estimator.plan(config).to_json()
    except EstimateError as exc:
        return 422, f"config.json cannot be estimated: {exc}"
    # As starlette's JSONResponse renders it, so the size checked is the size sent.
    body = json.dumps(document, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    encoded = body.encode("utf-8")
    if len(encoded) > max_response_bytes:
        return 422, (
            f"the Plan for this config.json is {len(encoded):,} bytes, over the "
            f"{max_response_bytes:,}-byte response budget"
        )
    return 200, encoded


def _parse(raw: bytes) -> Any:
    return json.loads(raw.decode("utf-8"), parse_constant=_constant, parse_int=_integer)


def _constant(name: str) -> Any:
    raise _Refused(f"{name} is not a JSON number")


def _integer(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_INT_DIGITS:
        raise _Refused(
            f"an integer of {len(digits.lstrip('-')):,} digits (at most {MAX_INT_DIGITS})"
        )
    return int(digits)


__all__ = ["MAX_INT_DIGITS", "plan_answer"]
