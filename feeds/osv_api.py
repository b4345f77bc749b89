"""The OSV API in OSV.dev's own paths and shapes, and the dumps for incremental sync.

Responses are proto3-style JSON: empty lists and fields are omitted, so a
query with no hits is ``{}`` (pip-audit and the Go client rely on it).
Errors are gRPC statuses: ``{"code": 3, "message": "invalid query"}`` on 400,
``{"code": 5, ...}`` on 404. A query matches our advisories by package (the
GIT ecosystem with the repo URL as name, or the purl
``pkg:huggingface/ORG/NAME``), by commit, or both. A query by commit answers,
as OSV.dev does, every record whose range holds the commit: under this
database's meaning (feeds/osv.py) the advisories about that very commit.
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Body, Request, Response
from fastapi.responses import JSONResponse
from packageurl import PackageURL
from pydantic import BaseModel, ConfigDict, Field
from starlette.types import ASGIApp, Receive, Scope, Send

from feeds.errors import OsvError
from feeds.http import entity_tag, streamed
from feeds.osv import HUB, osv_document, timestamp
from feeds.state import AppState
from feeds.zipstream import stream_zip
from storage.advisory_refs import AdvisoryRefPage, RefQuery, advisory_refs_for_many
from storage.dumps import advisories_by_id, modified_batches
from storage.publishing import InvalidCursor, advisories_for, advisory_by_id
from storage.repo_ids import InvalidRepoId, RepoId, repo_id

QUERY_PATHS = frozenset({"/v1/query", "/v1/querybatch"})
JSON_TYPE = (b"content-type", b"application/json")


class ErrorBody(BaseModel):
    """OSV.dev's error shape: a gRPC status code and one line."""

    code: int
    message: str


Answers = dict[int | str, dict[str, Any]]
INVALID: Answers = {400: {"model": ErrorBody, "description": "invalid query (gRPC code 3)"}}
NOT_FOUND: Answers = {404: {"model": ErrorBody, "description": "no such advisory (gRPC code 5)"}}
TOO_LARGE: Answers = {
    413: {"model": ErrorBody, "description": "body over the byte cap (gRPC code 8)"}
}


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
    """The error in OSV.dev's body shape (gRPC code and message) with its HTTP status."""
    return JSONResponse({"code": error.code, "message": error.message}, status_code=error.status)


def router(state: AppState) -> APIRouter:
    """The /v1 and /osv routes over ``state``'s database."""
    api = APIRouter(tags=["osv"])

    @api.post("/v1/query", responses={**INVALID, **TOO_LARGE})
    def query(body: Annotated[Query, Body()]) -> Response:
        """Advisories matching one query, a page at a time (resend with ``page_token``)."""
        return _json(_run(state, body, size=state.settings.query_page_size))

    @api.post("/v1/querybatch", responses={**INVALID, **TOO_LARGE})
    def querybatch(body: Annotated[BatchQuery, Body()]) -> Response:
        """Up to 1000 queries; each result lists only id and modified, in query order."""
        if len(body.queries) > state.settings.max_batch_queries:
            raise OsvError("too many queries")
        targets: list[RefQuery | None] = []
        for index, item in enumerate(body.queries):
            try:
                targets.append(_ref_query(item))
            except OsvError as exc:
                raise OsvError(f"error in query at index {index}: {exc.message}") from None
        wanted = [t for t in targets if t is not None]
        with state.database.read_session() as session, _cursor_errors():
            pages = iter(advisory_refs_for_many(session, wanted, state.settings.batch_page_size))
        results = [b"{}" if t is None else _refs(next(pages)) for t in targets]
        return _json(b'{"results":[' + b",".join(results) + b"]}" if results else b"{}")

    @api.get("/v1/vulns/{vuln_id}", responses={**INVALID, **NOT_FOUND})
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
        """Every advisory, withdrawn ones included, one ``<id>.json`` per record, streamed."""
        version = state.log_version()

        def members() -> Iterator[tuple[str, datetime, bytes]]:
            with state.database.read_session() as session:
                for batch in advisories_by_id(session):
                    for advisory in batch:
                        # compact: indent=2 would take json's pure-Python encoder, ~5x slower
                        document = json.dumps(osv_document(advisory)).encode()
                        yield f"{advisory.id}.json", advisory.modified, document

        return streamed(
            request, stream_zip(members()), "application/zip", version[1], _tag("zip", version)
        )

    @api.get("/osv/modified_id.csv", response_class=Response)
    def modified_csv(request: Request) -> Response:
        """``<iso modified>,<id>`` per advisory, newest first: stop at a timestamp you have."""
        version = state.log_version()

        def lines() -> Iterator[bytes]:
            with state.database.read_session() as session:
                for batch in modified_batches(session):
                    yield "".join(
                        f"{timestamp(m)},{advisory_id}\n" for m, advisory_id in batch
                    ).encode()

        media = "text/csv; charset=utf-8"
        return streamed(request, lines(), media, version[1], _tag("csv", version))

    return api


class JsonWhateverType:
    """ASGI middleware: OSV's query bodies are JSON whatever ``Content-Type`` says.

    OSV.dev parses the body of ``/v1/query`` and ``/v1/querybatch`` as JSON
    under any content type, and its documentation's own example is
    ``curl -d '{"commit": ...}'``, which sends
    ``application/x-www-form-urlencoded``. FastAPI parses a body as JSON only
    under a JSON type, so this states that type for those two paths.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Give the OSV query paths a JSON content type; pass everything else on untouched."""
        if scope["type"] == "http" and scope["path"] in QUERY_PATHS:
            headers = [(k, v) for k, v in scope["headers"] if k != b"content-type"]
            scope = {**scope, "headers": [*headers, JSON_TYPE]}
        await self.app(scope, receive, send)


def _json(encoded: bytes) -> Response:
    return Response(encoded, media_type="application/json")


def _target(query: Query) -> tuple[RepoId | None, str | None] | None:
    """(repo id, commit) a query asks for, None for a package that is not ours; OsvError if bad.

    A name the Hub would refuse is no repo of ours either: it answers as a package
    that is not ours (the same empty result a lookup of it would give).
    """
    name, version = _package(query)
    if query.commit is not None and version is not None:
        raise OsvError("invalid query")
    commit = query.commit if query.commit is not None else version
    commit = commit.lower() if commit else commit
    if name is None and commit is None:
        raise OsvError("invalid query")
    if name is None:
        return None, commit
    try:
        return repo_id(name), commit
    except InvalidRepoId:
        return None


def _run(state: AppState, query: Query, *, size: int) -> bytes:
    """The encoded full result of one query, rendered once per advisory-log version."""
    target = _target(query)
    if target is None:
        return b"{}"
    repo_id, commit = target

    def answer() -> bytes:
        with state.database.read_session() as session, _cursor_errors():
            page = advisories_for(
                session, repo_id=repo_id, commit=commit, cursor=query.page_token, limit=size
            )
        vulns = [osv_document(a) for a in page.advisories]
        return _encode(vulns, page.next_cursor)

    encoded: bytes = state.renders((query.model_dump_json(), size), state.log_version(), answer)
    return encoded


def _ref_query(query: Query) -> RefQuery | None:
    """What storage reads for one batch query; None for a package that is not ours."""
    target = _target(query)
    return None if target is None else RefQuery(*target, cursor=query.page_token)


def _refs(page: AdvisoryRefPage) -> bytes:
    vulns = [{"id": r.id, "modified": timestamp(r.modified)} for r in page.refs]
    return _encode(vulns, page.next_cursor)


@contextmanager
def _cursor_errors() -> Iterator[None]:
    try:
        yield
    except InvalidCursor:
        raise OsvError("invalid cursor") from None


def _encode(vulns: list[dict[str, Any]], next_cursor: str | None) -> bytes:
    """A proto3-style result: empty fields omitted."""
    result: dict[str, Any] = {}
    if vulns:
        result["vulns"] = vulns
    if next_cursor:
        result["next_page_token"] = next_cursor
    return json.dumps(result, separators=(",", ":")).encode()


def _tag(kind: str, version: Hashable) -> str:
    """The ETag of a dump: a digest of the log version it was streamed at."""
    return entity_tag(f"{kind}|{version!r}".encode())


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


def _from_purl(text: str, version: str | None) -> tuple[str, str | None]:
    """(repo id or "" for another purl type, version) of a purl, parsed by packageurl-python.

    The ``huggingface`` type needs a namespace; its version is a commit sha,
    lowercased as the type defines, so a query in capitals still matches.
    """
    try:
        parsed = PackageURL.from_string(text)
    except ValueError:
        raise OsvError("invalid purl") from None
    if parsed.type != "huggingface":
        return "", version
    if parsed.version and version is not None:
        raise OsvError("version specified in params and PURL query")
    if not parsed.namespace or "/" in parsed.namespace or not parsed.name:
        raise OsvError("invalid purl")
    at = parsed.version or version
    return f"{parsed.namespace}/{parsed.name}", at.lower() if at else at


__all__ = ["JsonWhateverType", "OsvError", "error_response", "router"]
