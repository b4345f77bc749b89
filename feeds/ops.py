"""``/healthz`` and ``/metrics``: what an operator and a load balancer ask the daemon.

Both are handed their data from above (a health function and a Prometheus
registry), since what they report (backfill progress, check counters) is
the tracker's, and feeds never imports the tracker.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from fastapi import APIRouter, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

HealthReport = Callable[[], Mapping[str, Any]]
"""Returns the /healthz body; ``status`` other than "ok" answers 503."""


def create_ops_router(*, health: HealthReport, registry: CollectorRegistry) -> APIRouter:
    """``/healthz`` (503 unless the report says "ok", or when it raises) and ``/metrics``."""
    router = APIRouter(tags=["operations"])

    @router.get("/healthz", response_model=None)
    def healthz() -> JSONResponse:
        try:
            body = dict(health())
        except Exception as exc:  # the probe itself must answer, even when storage is down
            body = {"status": "error", "error": f"{type(exc).__name__}: {exc}"}
        return JSONResponse(body, status_code=200 if body.get("status") == "ok" else 503)

    @router.get("/metrics")
    def metrics() -> Response:
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    return router


__all__ = ["HealthReport", "create_ops_router"]
