"""Shared plans: ``plan ORG/NAME --share`` stores its Plan here and prints the page's URL.

``POST /api/v1/shared-plans`` takes a Plan JSON document (bearer token, as the
subscriptions API), checks that it is a Plan (``estimator.Plan.from_json``)
and stores its canonical bytes in the content-addressed blob store under their
sha256, so sharing one plan twice stores it once and gives one URL.
``GET /plans/{id}`` shows it with the model page's wording at the plan's own
stated workload. Nothing is planned on the server.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from datetime import datetime
from typing import Any, Final

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import HTMLResponse, JSONResponse

from estimator import Plan, PlanJsonError
from feeds.chart import batch_svg, breakdown_svg
from feeds.pages import environment
from feeds.settings import PublishSettings
from feeds.subscriptions_api import bearer_guard
from storage import Database
from storage.blobs import get_blob, put_blob
from storage.errors import BlobNotFound

PATH: Final = "/api/v1/shared-plans"
PAGE: Final = "/plans/"
PLAN_ID: Final = re.compile(r"[0-9a-f]{64}")


def canonical(plan: Plan) -> bytes:
    """The bytes a plan is stored as: its JSON with sorted keys, so one plan has one id."""
    return json.dumps(plan.to_json(), sort_keys=True, separators=(",", ":")).encode()


def router(
    database: Database,
    settings: PublishSettings,
    token: str | None,
    *,
    clock: Callable[[], datetime],
) -> APIRouter:
    """POST stores a plan (bearer ``token``; none: 401 to everyone), GET shows one;
    ``clock`` stamps what is stored."""
    env = environment()
    api = APIRouter()

    @api.post(PATH, status_code=201, tags=["plans"], dependencies=[Depends(bearer_guard(token))])
    async def share(request: Request) -> JSONResponse:
        """Store a Plan document; answers its id and the URL of its page."""
        try:
            document: Any = json.loads(await request.body())
            plan = Plan.from_json(document)
        except (ValueError, PlanJsonError) as exc:
            raise HTTPException(400, f"not a Plan document: {str(exc)[:200]}") from None
        data = canonical(plan)
        key = hashlib.sha256(data).hexdigest()
        with database.session() as session:
            put_blob(session, key, data, at=clock())
        return JSONResponse({"id": key, "url": settings.url(PAGE + key)}, 201)

    @api.get(PAGE + "{plan_id}", response_class=HTMLResponse, include_in_schema=False)
    def page(plan_id: str) -> HTMLResponse:
        if not PLAN_ID.fullmatch(plan_id):
            raise HTTPException(404, f"no shared plan has the id {plan_id[:80]!r}")
        try:
            with database.read_session() as session:
                plan = Plan.from_json(json.loads(get_blob(session, plan_id)))
        except (BlobNotFound, PlanJsonError, ValueError):
            raise HTTPException(404, f"no shared plan has the id {plan_id!r}") from None
        model = dict(plan.model)
        body = env.get_template("paste.html").render(
            settings=settings,
            error=None,
            pasted=None,
            plan=plan,
            repo_id=f"{model.get('architecture') or 'the shared model'}",
            pictures={"batches": batch_svg(plan), "breakdown": breakdown_svg(plan)},
        )
        return HTMLResponse(body)

    return api


__all__ = ["PAGE", "PATH", "canonical", "router"]
