"""The feed routes: per model, per org and global, in RSS 2.0 and Atom 1.0, with 304s.

A model's feed answers 404 where its page does (a repo never recorded), not an
empty feed a reader would poll for ever.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query, Request, Response

from feeds.http import conditional, entity_tag
from feeds.model_paths import path_repo_id
from feeds.state import AppState
from feeds.syndication import MEDIA_TYPES, FeedFilter, FeedFilterError, Format, render
from storage import RepoId, RepoNotFound, get_repo
from storage.publishing import advisories_for

ArtifactParam = Annotated[str | None, Query(description="keep advisories that changed it")]
SeverityParam = Annotated[str | None, Query(description="info, low, moderate, high, critical")]
FILTER_ERROR: dict[int | str, dict[str, Any]] = {
    400: {"description": "?artifact= or ?min_severity= names nothing we publish"}
}
NOT_TRACKED: dict[int | str, dict[str, Any]] = {404: {"description": "the repo was never recorded"}}


def router(state: AppState) -> APIRouter:
    """The model, org and global feed routes over ``state``'s advisory log."""
    api = APIRouter(tags=["feeds"])

    def serve(
        request: Request,
        kind: Format,
        title: str,
        page_path: str,
        artifact: str | None,
        min_severity: str | None,
        *,
        repo_id: RepoId | None = None,
        org: str | None = None,
    ) -> Response:
        try:
            wanted = FeedFilter.parse(artifact, min_severity)
        except FeedFilterError as exc:
            raise HTTPException(400, str(exc)) from None

        def rendered() -> tuple[bytes, datetime | None, str]:
            with state.database.read_session() as session:
                if repo_id is not None:
                    try:
                        get_repo(session, repo_id)
                    except RepoNotFound:
                        raise HTTPException(404, f"{repo_id} is not tracked") from None
                found = advisories_for(
                    session,
                    repo_id=repo_id,
                    org=org,
                    artifact=wanted.artifact,
                    min_severity=wanted.min_severity,
                    limit=state.settings.feed_entries,
                ).advisories
            body = render(
                found,
                kind=kind,
                title=title,
                self_path=request.url.path,
                page_path=page_path,
                settings=state.settings,
            )
            return body, max((a.modified for a in found), default=None), entity_tag(body)

        key = ("feed", request.url.path, wanted)
        body, newest, etag = state.renders(key, state.log_version(), rendered)
        return conditional(request, body, MEDIA_TYPES[kind], newest, etag)

    @api.get(
        "/models/{org}/{name}/feed.{kind}",
        response_class=Response,
        responses={**FILTER_ERROR, **NOT_TRACKED},
    )
    def model_feed(
        org: str,
        name: str,
        kind: Format,
        request: Request,
        artifact: ArtifactParam = None,
        min_severity: SeverityParam = None,
    ) -> Response:
        """Advisories of one model."""
        repo_id = path_repo_id(org, name)
        title = f"{repo_id} · {state.settings.title}"
        return serve(
            request, kind, title, f"/models/{repo_id}", artifact, min_severity, repo_id=repo_id
        )

    @api.get("/orgs/{org}/feed.{kind}", response_class=Response, responses=FILTER_ERROR)
    def org_feed(
        org: str,
        kind: Format,
        request: Request,
        artifact: ArtifactParam = None,
        min_severity: SeverityParam = None,
    ) -> Response:
        """Advisories of every tracked model of one org."""
        title = f"{org} · {state.settings.title}"
        return serve(request, kind, title, "/", artifact, min_severity, org=org)

    @api.get("/feeds/all.{kind}", response_class=Response, responses=FILTER_ERROR)
    def all_feed(
        kind: Format,
        request: Request,
        artifact: ArtifactParam = None,
        min_severity: SeverityParam = None,
    ) -> Response:
        """Advisories of every tracked model."""
        return serve(
            request, kind, f"all advisories · {state.settings.title}", "/", artifact, min_severity
        )

    return api


__all__ = ["router"]
