"""The OSV API in OSV.dev's own paths and shapes, and the dumps for incremental sync.

Responses are proto3-style JSON: empty lists and fields are omitted, so a
query with no hits is ``{}`` (pip-audit and the Go client rely on it).
Errors are gRPC statuses: ``{"code": 3, "message": "invalid query"}`` on 400,
``{"code": 5, ...}`` on 404. A query matches our advisories by package (the
GIT ecosystem with the repo URL as name, or the purl
``pkg:huggingface/ORG/NAME``), by commit (the sha an advisory was introduced
at, its ``versions`` entry), or both.
"""

from __future__ import annotations

import io
import json
import zipfile
from typing import Annotated, Any

from fastapi import APIRouter, Body, Request, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from feeds.errors import OsvError
from feeds.http import conditional
from feeds.osv import HUB, osv_document, timestamp
from feeds.state import AppState
from storage.publishing import (
    AdvisoryPage,
    InvalidCursor,
    advisories_for,
    advisory_by_id,
    modified_index,
)

PURL_PREFIX = "pkg:huggingface/"


class Package(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str | None = None
    ecosystem: str | None = None
    purl: str | None = None


class Query(BaseModel):
    model_config = ConfigDict(extra="forbid")
    package: Package | None = None
    version: str | None = None
    commit: str | None = None
    page_token: str | None = None


class BatchQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")
    queries: list[Query] = Field(default_factory=list)


def error_response(error: OsvError) -> JSONResponse:
    return JSONResponse({"code": error.code, "message": error.message}, status_code=error.status)


def router(state: AppState) -> APIRouter:
    """The /v1 and /osv routes over ``state``'s database."""
    api = APIRouter(tags=["osv"])

    @api.post("/v1/query")
    def query(body: Annotated[Query, Body()]) -> Response:
        """Advisories matching one query, a page at a time (resend with ``page_token``)."""
        return _json(_run(state, body, full=True, size=state.settings.query_page_size))

    @api.post("/v1/querybatch")
    def querybatch(body: Annotated[BatchQuery, Body()]) -> JSONResponse:
        """Up to 1000 queries; each result lists only id and modified, in query order."""
        if len(body.queries) > state.settings.max_batch_queries:
            raise OsvError("too many queries")
        results = []
        for index, item in enumerate(body.queries):
            try:
                results.append(
                    json.loads(_run(state, item, full=False, size=state.settings.batch_page_size))
                )
            except OsvError as exc:
                raise OsvError(f"error in query at index {index}: {exc.message}") from None
        return JSONResponse({"results": results} if results else {})

    @api.get("/v1/vulns/{vuln_id}")
    def vuln(vuln_id: str) -> JSONResponse:
        """One advisory by its (case-sensitive) id."""
        if len(vuln_id) > 128:
            raise OsvError("ID is too long")
        with state.database.read_session() as session:
            advisory = advisory_by_id(session, vuln_id)
        if advisory is None:
            raise OsvError("Vulnerability not found", code=5, status=404)
        return JSONResponse(osv_document(advisory))

    @api.get("/osv/all.zip", response_class=Response)
    def all_zip(request: Request) -> Response:
        """Every advisory, withdrawn ones included, one ``<id>.json`` per record."""
        with state.database.read_session() as session:
            found = advisories_for(session, limit=None).advisories
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            for advisory in sorted(found, key=lambda a: a.id):
                info = zipfile.ZipInfo(f"{advisory.id}.json", _zip_time(advisory.modified))
                info.compress_type = zipfile.ZIP_DEFLATED
                archive.writestr(info, json.dumps(osv_document(advisory), indent=2))
        newest = max((a.modified for a in found), default=None)
        return conditional(request, buffer.getvalue(), "application/zip", newest)

    @api.get("/osv/modified_id.csv", response_class=Response)
    def modified_csv(request: Request) -> Response:
        """``<iso modified>,<id>`` per advisory, newest first: stop at a timestamp you have."""
        with state.database.read_session() as session:
            index = modified_index(session)
        body = "".join(f"{timestamp(moment)},{advisory_id}\n" for moment, advisory_id in index)
        newest = index[0][0] if index else None
        return conditional(request, body.encode(), "text/csv; charset=utf-8", newest)

    return api


def _json(encoded: bytes) -> Response:
    return Response(encoded, media_type="application/json")


def _run(state: AppState, query: Query, *, full: bool, size: int) -> bytes:
    """The encoded result of one query, rendered once per advisory-log version."""
    repo_id, version = _package(query)
    if query.commit is not None and version is not None:
        raise OsvError("invalid query")
    commit = query.commit if query.commit is not None else version
    if repo_id is None and commit is None:
        raise OsvError("invalid query")
    if repo_id == "":
        return b"{}"
    key = (query.model_dump_json(), full, size)

    def answer() -> bytes:
        try:
            with state.database.read_session() as session:
                page = advisories_for(
                    session, repo_id=repo_id, commit=commit, cursor=query.page_token, limit=size
                )
        except InvalidCursor:
            raise OsvError("invalid cursor") from None
        return json.dumps(_result(page, full), separators=(",", ":")).encode()

    encoded: bytes = state.cache.get(key, state.log.current(), answer)
    return encoded


def _result(page: AdvisoryPage, full: bool) -> dict[str, Any]:
    vulns = [
        osv_document(a) if full else {"id": a.id, "modified": timestamp(a.modified)}
        for a in page.advisories
    ]
    result: dict[str, Any] = {}
    if vulns:
        result["vulns"] = vulns
    if page.next_cursor:
        result["next_page_token"] = page.next_cursor
    return result


def _package(query: Query) -> tuple[str | None, str | None]:
    """(repo id or None for no package or "" for a package that is not ours, purl version)."""
    package = query.package
    if package is None:
        return None, query.version
    if package.purl is not None:
        if package.name is not None:
            raise OsvError("name specified in a PURL query")
        if package.ecosystem is not None:
            raise OsvError("ecosystem specified in a PURL query")
        return _from_purl(package.purl, query.version)
    if not package.name or not package.ecosystem:
        raise OsvError("invalid query")
    if package.ecosystem != "GIT" or not package.name.startswith(f"{HUB}/"):
        return "", query.version
    return package.name.removeprefix(f"{HUB}/"), query.version


def _from_purl(purl: str, version: str | None) -> tuple[str, str | None]:
    if not purl.startswith("pkg:"):
        raise OsvError("invalid purl")
    if not purl.startswith(PURL_PREFIX):
        return "", version
    name, _, at = purl.removeprefix(PURL_PREFIX).partition("@")
    if at and version is not None:
        raise OsvError("version specified in params and PURL query")
    if name.count("/") != 1 or not all(name.split("/")):
        raise OsvError("invalid purl")
    return name, at or version


def _zip_time(moment: Any) -> tuple[int, int, int, int, int, int]:
    return (
        max(moment.year, 1980),
        moment.month,
        moment.day,
        moment.hour,
        moment.minute,
        moment.second,
    )


__all__ = ["OsvError", "error_response", "router"]
