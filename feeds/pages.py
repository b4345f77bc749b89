"""Server-rendered pages: the index, the model page and its Markdown twin, advisories, badges.

Templates live in feeds/templates/ and render with autoescape on for HTML,
so a config value, card field or commit title such as ``<script>`` shows as
text. Markdown twins are served as text/markdown; an advisory's Markdown
details are rendered to HTML by markdown-it-py with raw HTML turned off, so
markup in them shows as text. Every figure is worded by ``feeds.figures`` at
the stored plan's stated workload; pictures come from ``feeds.chart``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlencode

from fastapi import APIRouter, HTTPException, Request, Response
from fastapi.responses import HTMLResponse, JSONResponse
from jinja2 import Environment, FileSystemLoader, select_autoescape
from markdown_it import MarkdownIt
from markupsafe import Markup

from feeds import figures, view
from feeds.chart import batch_svg, breakdown_svg, history_chart, history_svg
from feeds.http import conditional
from feeds.model_paths import path_repo_id
from feeds.osv import osv_document, timestamp
from feeds.state import AppState
from storage import RepoNotFound
from storage.publishing import (
    ModelPageData,
    ModelSummary,
    advisory_by_id,
    last_modified,
    model_summaries,
)
from storage.records import Advisory

TEMPLATES = Path(__file__).resolve().parent / "templates"
INDEX_PAGE_SIZE: Final = 100
"""Models per index page: a page costs the same at any number of tracked repos."""
MAX_AFTER_CHARS: Final = 256


def environment() -> Environment:
    """The page templates' Jinja environment; autoescaping on for HTML, off for Markdown."""
    env = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=select_autoescape(["html", "html.jinja"], default=False),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals.update(view=view, fig=figures, timestamp=timestamp)
    env.filters["md"] = markdown_text
    return env


MARKDOWN: Final = MarkdownIt("commonmark", {"html": False}).enable("table")
"""Advisory details as HTML: raw HTML in the Markdown is not passed through but escaped."""


def markdown_html(text: str) -> Markup:
    """Markdown rendered with CommonMark + GFM tables; any HTML in it shows as text."""
    return Markup(MARKDOWN.render(text))


MARKDOWN_ESCAPES: Final = str.maketrans(
    {"&": "&amp;", "<": "&lt;", "\\": "\\\\", "`": "\\`", "[": "\\[", "]": "\\]"}
)


def markdown_text(text: object) -> str:
    """Stored text made safe to paste into a Markdown line, still readable as plain text.

    One line; ``&`` and ``<`` as entities, so no raw HTML, autolink or entity
    survives a renderer that passes HTML through; backslash-escaped brackets,
    backticks and backslashes, so no link, image or code span can be formed.
    ``>`` stays as it is (``1 -> 2``): without a ``<`` it opens no tag, and a
    line that would start with it (a quote) or with ``#`` is escaped.
    """
    line = " ".join(str(text).split()).translate(MARKDOWN_ESCAPES)
    return "\\" + line if line.startswith((">", "#")) else line


def router(state: AppState) -> APIRouter:
    """The HTML pages, the Markdown twins, /index.json and the badges."""
    env = environment()
    api = APIRouter()

    def load(org: str, name: str) -> tuple[ModelPageData, list[Advisory]]:
        repo_id = path_repo_id(org, name)
        try:
            return state.model_page(repo_id)
        except RepoNotFound:
            raise HTTPException(404, f"{repo_id} is not tracked") from None

    def context(data: ModelPageData, found: list[Advisory]) -> dict[str, Any]:
        plan = view.stored_plan(data.summary.plan)
        chart = history_chart(data.history)
        latest = data.summary.latest
        return {
            "settings": state.settings,
            "page": data,
            "repo_id": data.summary.repo.repo_id,
            "plan": plan,
            "sha": None if latest is None else latest.revision.sha,
            "chart": chart,
            "pictures": None
            if plan is None
            else {
                "history": None if chart is None else history_svg(chart),
                "batches": batch_svg(plan),
                "breakdown": breakdown_svg(plan),
            },
            "siblings": figures.siblings(data, plan),
            "advisories": found,
            "accuracy": figures.accuracy_sentence(state.settings.accuracy),
        }

    def index_page(after: str | None) -> tuple[list[ModelSummary], str | None]:
        """One page of the index after repo id ``after``, and the repo id the next one
        starts after (None on the last page)."""
        if after is not None and not 0 < len(after) <= MAX_AFTER_CHARS:
            raise HTTPException(400, f"after must be a repo id of 1 to {MAX_AFTER_CHARS} chars")
        with state.database.read_session() as session:
            found = model_summaries(session, after=after, limit=INDEX_PAGE_SIZE + 1)
        if len(found) <= INDEX_PAGE_SIZE:
            return found, None
        return found[:INDEX_PAGE_SIZE], found[INDEX_PAGE_SIZE - 1].repo.repo_id

    @api.get("/", response_class=HTMLResponse)
    def index(request: Request, after: str | None = None) -> Response:
        """The tracked models by repo id, a page of ``INDEX_PAGE_SIZE`` at a time."""
        models, next_after = index_page(after)
        with state.database.read_session() as session:
            newest = last_modified(session)
        next_url = None if next_after is None else "/?" + urlencode({"after": next_after})
        body = env.get_template("index.html").render(
            settings=state.settings, models=models, next_url=next_url, first=after is None
        )
        return conditional(request, body.encode(), "text/html; charset=utf-8", newest)

    @api.get("/index.json")
    def index_json(after: str | None = None) -> JSONResponse:
        """The index as JSON: repo, status, newest sha, family, parameters, advisory count;
        ``next`` is the URL of the following page, null on the last."""
        models, next_after = index_page(after)
        next_url = (
            None
            if next_after is None
            else state.settings.url("/index.json?" + urlencode({"after": next_after}))
        )
        return JSONResponse({"models": [_model_json(state, m) for m in models], "next": next_url})

    @api.get("/models/{org}/{name}.md", response_class=Response)
    def model_markdown(org: str, name: str, request: Request) -> Response:
        """The model page as Markdown."""
        data, found = load(org, name)
        body = env.get_template("model.md.jinja").render(**context(data, found))
        newest = max((a.modified for a in found), default=None)
        return conditional(request, body.encode(), "text/markdown; charset=utf-8", newest)

    @api.get("/models/{org}/{name}", response_class=HTMLResponse)
    def model(org: str, name: str, request: Request) -> Response:
        """The model page: memory, cards, structure, findings, history, subscribe links."""
        data, found = load(org, name)
        body = env.get_template("model.html").render(**context(data, found))
        newest = max((a.modified for a in found), default=None)
        return conditional(request, body.encode(), "text/html; charset=utf-8", newest)

    @api.get("/models/{org}/{name}/badge.json")
    def badge(org: str, name: str) -> JSONResponse:
        """A shields.io endpoint badge: serving memory at the stated workload, fit or not
        (two stored columns, never the page's data)."""
        repo_id = path_repo_id(org, name)
        try:
            shown = state.badge(repo_id)
        except RepoNotFound:
            raise HTTPException(404, f"{repo_id} is not tracked") from None
        return JSONResponse(figures.badge(view.stored_plan(shown.plan)))

    @api.get("/advisories/{advisory_id}", response_class=HTMLResponse)
    def advisory(advisory_id: str) -> HTMLResponse:
        """One advisory as a page, with its OSV JSON."""
        with state.database.read_session() as session:
            found = advisory_by_id(session, advisory_id)
        if found is None:
            raise HTTPException(404, f"no advisory has the id {advisory_id!r}")
        document = osv_document(found)
        body = env.get_template("advisory.html").render(
            settings=state.settings,
            advisory=found,
            osv=document,
            details=markdown_html(str(document.get("details", ""))),
            osv_json=json.dumps(document, indent=2, ensure_ascii=False),
        )
        return HTMLResponse(body)

    return api


def _model_json(state: AppState, summary: ModelSummary) -> dict[str, Any]:
    plan = view.stored_plan(summary.plan)
    latest = summary.latest
    repo_id = summary.repo.repo_id
    return {
        "repo_id": repo_id,
        "status": str(summary.repo.status),
        "sha": latest.revision.sha if latest else None,
        "date": timestamp(latest.revision.date) if latest else None,
        "family": None if plan is None else dict(plan.model).get("family"),
        "parameters": None if plan is None else dict(plan.parameters).get("total"),
        "advisories": summary.advisories,
        "page": state.settings.url(f"/models/{repo_id}"),
    }


__all__ = ["environment", "router"]
