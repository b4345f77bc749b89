"""Every request body bounded before a handler sees it, and JSON parsed without recursion errors.

``BodyLimits`` is a pure ASGI middleware wrapped around the whole app:

* a ``Content-Length`` over the route's cap is answered 413 at once, before
  one byte of the body is read;
* a body without one (chunked) is counted as it streams and answered 413 the
  moment the cap is passed; the rest is never read and the connection is
  closed, so memory stays bounded by the cap, not by what a client sends;
* a body still incomplete ``body_seconds`` after the app first asks for it
  is answered 408 and the connection closed, so a client trickling bytes
  holds nothing for long (uvicorn bounds the headers, ``feeds.serving``);
* a body within the cap whose JSON nests deeper than ``max_depth`` is answered
  400 before any handler (or FastAPI's own body parsing) runs ``json.loads``,
  whose C scanner recurses once per level and fails with RecursionError far
  below what fits in a megabyte.

Bodies within the limits are replayed to the app unchanged. Handlers that
parse bodies themselves use ``parse_json``, which applies the same depth
check and also refuses ``NaN``/``Infinity`` (not JSON, and PostgreSQL's JSONB
rejects them). Errors::

    RequestRefused        an HTTP status and a one-line message
    ├── BodyTooLarge      413: over the byte cap
    ├── BodyTooSlow       408: not all sent within the body deadline
    ├── JsonTooDeep       400: nested deeper than the depth cap
    └── JsonInvalid       400: not UTF-8/UTF-16/UTF-32 JSON, or NaN/Infinity
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Mapping
from itertools import accumulate
from typing import Any, Final

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from feeds.errors import FeedsError

DEFAULT_MAX_BODY_BYTES: Final = 1024 * 1024
DEFAULT_MAX_JSON_DEPTH: Final = 64
DEFAULT_BODY_SECONDS: Final = 30.0

# A JSON string from its opening quote to its closing one, escapes included;
# an unterminated string runs to the end. The unrolled form
# ("[^"\\]*(?:\\.[^"\\]*)*") is unambiguous, so matching is linear.
_STRING: Final = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?', re.DOTALL)
_NOT_BRACKET: Final = bytes(b for b in range(256) if b not in b"[]{}")
_STEP: Final = tuple(1 if b in b"[{" else -1 if b in b"]}" else 0 for b in range(256))


class RequestRefused(FeedsError):
    """A request body the app will not process, with the status to answer."""

    status = 400

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class BodyTooLarge(RequestRefused):
    """The body is over its route's byte cap, ``limit``."""

    status = 413

    def __init__(self, limit: int) -> None:
        super().__init__(f"request body is over {limit} bytes")
        self.limit = limit


class BodyTooSlow(RequestRefused):
    """The body did not arrive whole within ``seconds``."""

    status = 408

    def __init__(self, seconds: float) -> None:
        super().__init__(f"request body not received within {seconds:g} s")
        self.seconds = seconds


class JsonTooDeep(RequestRefused):
    """The body's JSON nests deeper than the depth cap."""


class JsonInvalid(RequestRefused):
    """The body is not JSON the app can store as it was sent."""


def json_depth(body: bytes) -> int:
    """The deepest nesting of ``[``/``{`` outside strings in ``body``; linear, no recursion.

    Decoded as ``json.loads`` decodes bytes (UTF-8, -16 or -32 by its own
    detection), so a UTF-16 body cannot hide brackets from the count. For a
    valid prefix of JSON this equals the parser's depth at every point, and
    the parser stops at the first invalid byte, so it never goes deeper.
    """
    encoding = json.detect_encoding(body)
    try:
        text = body.decode(encoding, "surrogatepass")
    except UnicodeDecodeError:
        text = body.decode(encoding, "replace")  # json.loads refuses it before parsing
    # Outside strings valid JSON is ASCII; what is left encodes back with
    # every bracket as its own byte (UTF-8 never reuses ASCII bytes).
    outside = _STRING.sub("", text).encode("utf-8", "surrogatepass")
    brackets = outside.translate(None, _NOT_BRACKET)
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0)


def check_depth(body: bytes, max_depth: int = DEFAULT_MAX_JSON_DEPTH) -> None:
    """Raise JsonTooDeep if ``body`` nests deeper than ``max_depth``."""
    # Every bracket is a 0x5B or 0x7B byte in UTF-8, -16 and -32 alike, so
    # few such bytes prove a shallow body without scanning it.
    if body.count(b"[") + body.count(b"{") <= max_depth:
        return
    depth = json_depth(body)
    if depth > max_depth:
        raise JsonTooDeep(f"JSON body nests {depth} levels deep; at most {max_depth} are accepted")


def parse_json(body: bytes, *, max_depth: int = DEFAULT_MAX_JSON_DEPTH) -> Any:
    """``json.loads(body)`` that cannot recurse past ``max_depth`` and refuses NaN/Infinity."""
    check_depth(body, max_depth)
    try:
        return json.loads(body, parse_constant=_refuse_constant)
    except RecursionError:  # pragma: no cover - check_depth bounds the nesting
        raise JsonTooDeep("JSON body nests too deeply") from None
    except UnicodeDecodeError:
        raise JsonInvalid("body is not UTF-8 JSON") from None
    except json.JSONDecodeError as exc:
        raise JsonInvalid(
            f"body is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    except ValueError as exc:  # NaN/Infinity, or an integer past Python's digit limit
        raise JsonInvalid(f"body is not JSON the server accepts: {exc}") from None


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


async def read_body(request: Request, limit: int) -> bytes:
    """The request's body, read no further than ``limit`` bytes (BodyTooLarge past it)."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge(limit)
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise BodyTooLarge(limit)
    return bytes(body)


Respond = Callable[[str, RequestRefused], Response]


def detail_response(_path: str, refused: RequestRefused) -> Response:
    """FastAPI's error shape, ``{"detail": message}``."""
    return JSONResponse({"detail": refused.message}, status_code=refused.status)


class BodyLimits:
    """ASGI middleware: cap every request body (413) and its JSON nesting (400).

    ``max_body_bytes`` applies to every path not in ``route_body_bytes``
    (exact paths). ``respond`` shapes the refusal for a path, so OSV paths can
    answer in OSV's error shape.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        max_json_depth: int = DEFAULT_MAX_JSON_DEPTH,
        route_body_bytes: Mapping[str, int] | None = None,
        respond: Respond = detail_response,
        body_seconds: float = DEFAULT_BODY_SECONDS,
    ) -> None:
        self.app = app
        self.body_seconds = body_seconds
        self.max_body_bytes = max_body_bytes
        self.max_json_depth = max_json_depth
        self.route_body_bytes = dict(route_body_bytes or {})
        self.respond = respond

    def limit_for(self, path: str) -> int:
        """The byte cap of a request to ``path``."""
        return self.route_body_bytes.get(path, self.max_body_bytes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on with its body read; refuse one too large, too slow or too deep."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = str(scope.get("path", ""))
        limit = self.limit_for(path)
        try:
            _check_declared_length(scope, limit)
            try:
                async with asyncio.timeout(self.body_seconds):
                    body = await _read_capped(receive, limit)
            except TimeoutError:
                raise BodyTooSlow(self.body_seconds) from None
            if body is None:
                return  # the client went away; there is no one to answer
            if body:
                check_depth(body, self.max_json_depth)
        except RequestRefused as refused:
            response = self.respond(path, refused)
            if isinstance(refused, BodyTooLarge | BodyTooSlow):
                # The rest of the body is never read, so the connection cannot carry
                # another request: tell the client and let the server close it.
                response.headers["Connection"] = "close"
            await response(scope, receive, send)
            return
        await self.app(scope, _replay(body, receive), send)


def _check_declared_length(scope: Scope, limit: int) -> None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length" and value.isdigit() and int(value) > limit:
            raise BodyTooLarge(limit)


async def _read_capped(receive: Receive, limit: int) -> bytes | None:
    """The whole body if it is within ``limit``; None if the client disconnected first."""
    body = bytearray()
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        body += message.get("body", b"")
        if len(body) > limit:
            raise BodyTooLarge(limit)
        if not message.get("more_body", False):
            return bytes(body)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A receive that hands the app the body read, then the server's own messages."""
    pending = True

    async def replayed() -> Message:
        nonlocal pending
        if pending:
            pending = False
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed


__all__ = [
    "DEFAULT_BODY_SECONDS",
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_MAX_JSON_DEPTH",
    "BodyLimits",
    "BodyTooLarge",
    "BodyTooSlow",
    "JsonInvalid",
    "JsonTooDeep",
    "RequestRefused",
    "check_depth",
    "detail_response",
    "json_depth",
    "parse_json",
    "read_body",
]
