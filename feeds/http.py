"""Conditional GET: ETag and Last-Modified on every published document, 304 when unchanged.

Feed readers poll; answering them with 304 keeps a feed poll as cheap as a
health check. The ETag is a digest of the exact body, so two renders of the
same stored data always agree.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from datetime import UTC, datetime
from email.utils import format_datetime, parsedate_to_datetime

from fastapi import Request, Response
from fastapi.responses import StreamingResponse


def entity_tag(body: bytes) -> str:
    """The strong ETag of ``body``."""
    return '"' + hashlib.sha256(body).hexdigest()[:32] + '"'


def conditional(
    request: Request,
    body: bytes,
    media_type: str,
    last_modified: datetime | None,
    etag: str | None = None,
) -> Response:
    """``body`` with validators, or an empty 304 if the client's copy is current."""
    etag = etag or entity_tag(body)
    headers = _validators(etag, last_modified)
    if _not_modified(request, etag, last_modified):
        return Response(status_code=304, headers=headers)
    return Response(body, media_type=media_type, headers=headers)


def streamed(
    request: Request,
    chunks: Iterator[bytes],
    media_type: str,
    last_modified: datetime | None,
    etag: str,
) -> Response:
    """``conditional`` for a body too large to build: ``chunks`` streamed, or a 304 unread.

    ``etag`` must change whenever the body would, without reading it (the
    dumps derive it from the advisory log's version).
    """
    headers = _validators(etag, last_modified)
    if _not_modified(request, etag, last_modified):
        return Response(status_code=304, headers=headers)
    return StreamingResponse(chunks, media_type=media_type, headers=headers)


def _validators(etag: str, last_modified: datetime | None) -> dict[str, str]:
    headers = {"ETag": etag, "Cache-Control": "no-cache"}
    if last_modified is not None:
        headers["Last-Modified"] = format_datetime(last_modified.astimezone(UTC), usegmt=True)
    return headers


def _not_modified(request: Request, etag: str, last_modified: datetime | None) -> bool:
    match = request.headers.get("if-none-match")
    if match is not None:
        tags = {tag.strip().removeprefix("W/") for tag in match.split(",")}
        return etag in tags or "*" in tags
    since = request.headers.get("if-modified-since")
    if since is None or last_modified is None:
        return False
    try:
        moment = parsedate_to_datetime(since)
    except (TypeError, ValueError):
        return False
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return last_modified.replace(microsecond=0) <= moment


__all__ = ["conditional", "entity_tag", "streamed"]
