"""The HTTP app: OSV API and dumps, feeds, badges, pages and the plan API over one database.

``create_app`` takes extra routers so the daemon can mount its own endpoints
(webhooks, health, metrics) on the same app without feeds importing the
tracker. OSV paths answer errors in OSV's gRPC-status shape; the webhook
path ``{"error": ...}``; every other path answers FastAPI's ``{"detail": ...}``.
Every request passes ``feeds.limits.BodyLimits`` first: bodies over their
cap are refused with 413, bodies not sent within ``body_read_seconds`` with
408, and JSON nested past the depth cap with 400 before any route (or
FastAPI's body parsing) sees them. Then ``feeds.gate.RenderGate`` lets at most
``max_concurrent_renders`` requests render at once, so ``/healthz`` (exempt)
always finds the interpreter free enough to answer in time.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastapi import APIRouter, FastAPI, Request
from fastapi.exception_handlers import request_validation_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response

from feeds import docs, feed_routes, osv_api, pages, paste, plan_api, subscription_pages, webhooks
from feeds.gate import RenderGate
from feeds.limits import BodyLimits, BodyTooLarge, RequestRefused, detail_response
from feeds.osv_api import JsonWhateverType, OsvError, error_response
from feeds.settings import PublishSettings
from feeds.state import AppState
from storage import Database

OSV_PREFIX = "/v1/"
PLAN_PATH = "/api/v1/plan"
# gRPC status codes (google.rpc.Code) for OSV-shaped refusals.
_INVALID_ARGUMENT, _RESOURCE_EXHAUSTED = 3, 8
UNGATED = ("/healthz", "/metrics", PLAN_PATH)
"""Paths that skip the render gate: the probes, and the plan API (bounded by its own pool)."""
MAX_WAITING_RENDERS = 512
"""Requests that may wait for a render slot; 503 past it."""
NOT_FOUND_PATHS = {
    "/models/{org}/{name}": "the repo was never recorded",
    "/models/{org}/{name}.md": "the repo was never recorded",
    "/models/{org}/{name}/badge.json": "the repo was never recorded",
    "/advisories/{advisory_id}": "no advisory has this id",
    "/subscriptions/{name}": "no subscription has this name",
    "/subscriptions/{name}/alerts.atom": "no subscription has this name",
}
"""Routes of other modules that answer 404, for /openapi.json."""


def create_app(
    database: Database,
    *,
    settings: PublishSettings,
    routers: Sequence[APIRouter] = (),
) -> FastAPI:
    """The app serving everything published from ``database``, plus ``routers``."""
    app = FastAPI(
        title=settings.title,
        summary="OSV advisories, feeds and pages for tracked Hugging Face model repos",
        version="1",
        docs_url=None,  # feeds.docs serves /docs from packaged assets
    )
    state = AppState(database, settings)
    for extra in routers:
        app.include_router(extra)
    app.include_router(osv_api.router(state))
    app.include_router(feed_routes.router(state))
    app.include_router(plan_api.router(state))
    app.include_router(pages.router(state))
    app.include_router(subscription_pages.router(state))
    app.include_router(docs.router(settings.title))
    app.include_router(paste.router(state))

    @app.exception_handler(OsvError)
    async def osv_error(_request: Request, exc: OsvError) -> JSONResponse:
        return error_response(exc)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> Response:
        if request.url.path.startswith(OSV_PREFIX):
            return error_response(OsvError("invalid query"))
        return await request_validation_exception_handler(request, exc)

    document_errors(app)
    # Added last is outermost: bodies are read (within their deadline) before a render slot
    # is taken, so a slow uploader holds no slot.
    app.add_middleware(JsonWhateverType)
    app.add_middleware(
        RenderGate,
        limit=settings.max_concurrent_renders,
        max_waiting=MAX_WAITING_RENDERS,
        exempt=UNGATED,
    )
    app.add_middleware(
        BodyLimits,
        max_body_bytes=settings.max_body_bytes,
        max_json_depth=settings.max_json_depth,
        route_body_bytes=body_caps(settings),
        respond=refusal,
        body_seconds=settings.body_read_seconds,
    )
    return app


def document_errors(app: FastAPI) -> None:
    """Name in /openapi.json the refusals routes give besides their own: 404 for a path that
    names nothing, and 400/413 on every route that takes a body (``BodyLimits``)."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        schema = build()
        for path, operations in schema.get("paths", {}).items():
            for method, operation in operations.items():
                answers = operation.setdefault("responses", {})
                if path in NOT_FOUND_PATHS:
                    answers.setdefault("404", {"description": NOT_FOUND_PATHS[path]})
                if method in {"post", "put", "patch"}:
                    answers.setdefault("400", {"description": "body not JSON, or nested too deep"})
                    answers.setdefault("413", {"description": "body over its byte cap"})
        return schema

    app.openapi = openapi  # type: ignore[method-assign]


def body_caps(settings: PublishSettings) -> dict[str, int]:
    """The paths with their own body cap: the plan API's, then any the settings add."""
    return {PLAN_PATH: settings.max_plan_body_bytes, **dict(settings.route_body_bytes)}


def refusal(path: str, refused: RequestRefused) -> Response:
    """A refused body answered in the error shape of the path it was sent to."""
    if path.startswith(OSV_PREFIX):
        code = _RESOURCE_EXHAUSTED if isinstance(refused, BodyTooLarge) else _INVALID_ARGUMENT
        return error_response(OsvError(refused.message, code=code, status=refused.status))
    if path == PLAN_PATH and isinstance(refused, BodyTooLarge):
        # the plan API's own wording for the same limit (feeds.plan_api)
        message = f"config.json body is over {refused.limit} bytes"
        return JSONResponse({"detail": message}, status_code=refused.status)
    if path == webhooks.PATH:
        return JSONResponse({"error": refused.message}, status_code=refused.status)
    return detail_response(path, refused)


__all__ = ["create_app"]
