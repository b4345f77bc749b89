"""The HTTP app: OSV API and dumps, feeds, badges, pages and the plan API over one database.

``create_app`` takes extra routers so the daemon can mount its own endpoints
(webhooks, health, metrics) on the same app without feeds importing the
tracker. OSV paths answer errors in OSV's gRPC-status shape; every other
path answers FastAPI's ``{"detail": ...}``.
"""

from __future__ import annotations

from collections.abc import Sequence

from fastapi import APIRouter, FastAPI, Request
from fastapi.exception_handlers import request_validation_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response

from feeds import feed_routes, osv_api, pages, plan_api, subscription_pages
from feeds.osv_api import OsvError, error_response
from feeds.settings import PublishSettings
from feeds.state import AppState
from storage import Database

OSV_PREFIX = "/v1/"


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
    )
    state = AppState(database, settings)
    for extra in routers:
        app.include_router(extra)
    app.include_router(osv_api.router(state))
    app.include_router(feed_routes.router(state))
    app.include_router(plan_api.router(state))
    app.include_router(pages.router(state))
    app.include_router(subscription_pages.router(state))

    @app.exception_handler(OsvError)
    async def osv_error(_request: Request, exc: OsvError) -> JSONResponse:
        return error_response(exc)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> Response:
        if request.url.path.startswith(OSV_PREFIX):
            return error_response(OsvError("invalid query"))
        return await request_validation_exception_handler(request, exc)

    return app


__all__ = ["create_app"]
