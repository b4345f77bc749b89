"""``GET /api/v1/cli/{name}``: the documents ``history`` and ``diff`` print, for the local CLI.

A reading command starts faster asking the running daemon (which has storage loaded
and the database open) than importing storage itself. The reads are the tracker's
(the daemon passes them in as ``answer``; feeds never imports the tracker), and so is
their document: this router only checks who asks and sends the body as ``answer``
returns it. Only this machine's CLI is answered: the peer must be a loopback address,
the request must not have come through a proxy (no ``Forwarded`` or
``X-Forwarded-For``), and its ``X-Neurarch-Database`` header must be the digest of the
database this daemon serves, so a command configured for another database reads its own.
A diff of two revisions that are not parent and child is recomputed from stored
snapshots, which is why the route is not for the public.

Answers (the CLI reads storage itself on any but 200 and 422)::

    200  the document
    403  not a direct loopback request
    404  no read of that name, or a parameter it needs is missing
    409  the header names another database (or none)
    422  {"error": line}: what the command refuses, in the line it prints
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from fastapi import APIRouter, Request, Response
from starlette.concurrency import run_in_threadpool

Answer = Callable[[str, Mapping[str, str]], tuple[int, Any]]
"""(read name, query parameters) -> (status, JSON body)."""

PATH = "/api/v1/cli/{name}"
DATABASE_HEADER = "x-neurarch-database"
LOOPBACK = frozenset({"127.0.0.1", "::1"})
PROXY_HEADERS = ("forwarded", "x-forwarded-for")


def create_cli_router(answer: Answer, *, database_digest: str) -> APIRouter:
    """The CLI's read route over ``answer``, for requests naming ``database_digest``."""
    router = APIRouter(tags=["cli"])

    @router.get(PATH, include_in_schema=False)
    async def read(name: str, request: Request) -> Response:
        peer = request.client.host if request.client is not None else None
        if peer not in LOOPBACK or any(h in request.headers for h in PROXY_HEADERS):
            return _json(403, {"error": "only the local command line may ask"})
        if request.headers.get(DATABASE_HEADER) != database_digest:
            return _json(409, {"error": "this daemon serves another database"})
        status, body = await run_in_threadpool(answer, name, dict(request.query_params))
        return _json(status, body)

    return router


def _json(status: int, body: Any) -> Response:
    # json.dumps as the CLI's own --json does (NaN kept, non-ASCII as is), so the document
    # parses back to what the command would have built
    return Response(
        json.dumps(body, ensure_ascii=False), status_code=status, media_type="application/json"
    )


__all__ = ["Answer", "create_cli_router"]
