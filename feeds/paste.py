"""``/paste``: a config.json or a repo id in, its plan page out, served by the app.

A pasted config.json is planned at the stated workload (``estimator.STATED_WORKLOAD``,
as every tracked revision is) and shown with the model page's own wording
(``feeds.figures``) and pictures; a repo id that is tracked goes to its model
page. The form posts ``application/x-www-form-urlencoded`` (parsed with the
standard library, under the app's body-size limit); nothing pasted is stored.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qs

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

import estimator
from feeds.chart import batch_svg, breakdown_svg
from feeds.errors import PasteError
from feeds.pages import environment
from feeds.state import AppState
from storage import InvalidRepoId, RepoNotFound, repo_id
from storage.publishing import model_page


def router(state: AppState) -> APIRouter:
    """GET shows the form; POST plans a pasted config.json or sends a repo id to its page."""
    env = environment()
    api = APIRouter(include_in_schema=False)

    def form(status: int = 200, error: str | None = None, pasted: str = "") -> HTMLResponse:
        body = env.get_template("paste.html").render(
            settings=state.settings, error=error, pasted=pasted, plan=None
        )
        return HTMLResponse(body, status)

    @api.get("/paste", response_class=HTMLResponse)
    def show() -> HTMLResponse:
        return form()

    @api.post("/paste", response_class=HTMLResponse)
    async def paste(request: Request) -> Response:
        fields = parse_qs((await request.body()).decode("utf-8", "replace"))
        repo = (fields.get("repo") or [""])[0].strip()
        pasted = (fields.get("config") or [""])[0]
        try:
            if repo:
                return RedirectResponse(tracked(state, repo), 303)
            plan = planned(pasted)
        except PasteError as exc:
            return form(400, str(exc), pasted)
        body = env.get_template("paste.html").render(
            settings=state.settings,
            error=None,
            pasted=pasted,
            plan=plan,
            repo_id="the pasted model",
            pictures={"batches": batch_svg(plan), "breakdown": breakdown_svg(plan)},
        )
        return HTMLResponse(body)

    return api


def tracked(state: AppState, text: str) -> str:
    """The page of a tracked repo; a PasteError saying how to plan one that is not."""
    try:
        repo = repo_id(text)
    except InvalidRepoId:
        raise PasteError(f"{text[:100]!r} is not a repo id of the form ORG/NAME") from None
    with state.database.read_session() as session:
        try:
            model_page(session, repo)
        except RepoNotFound:
            raise PasteError(
                f"{repo} is not tracked here: paste its config.json, or run "
                f"`neurarch-trace plan {repo}` on your machine"
            ) from None
    return f"/models/{repo}"


def planned(pasted: str) -> estimator.Plan:
    """The plan of a pasted config.json at the stated workload."""
    if not pasted.strip():
        raise PasteError("paste a config.json or give a repo id")
    try:
        config: Any = json.loads(pasted)
    except json.JSONDecodeError as exc:
        raise PasteError(f"the pasted text is not JSON: {exc.msg} at line {exc.lineno}") from None
    if not isinstance(config, dict):
        raise PasteError("a config.json is a JSON object")
    try:
        return estimator.plan(config, estimator.STATED_WORKLOAD)
    except estimator.EstimateError as exc:
        raise PasteError(str(exc)) from None


__all__ = ["planned", "router", "tracked"]
