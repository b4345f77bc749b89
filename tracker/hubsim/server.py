"""The HTTP side: a stdlib ThreadingHTTPServer speaking HTTP/1.1 with keep-alive.

Faults are applied here because they are about the wire: a reset is a socket closed
with SO_LINGER 0, a truncated body is fewer bytes than the Content-Length sent, a hang
is a handler that waits and then closes. Range requests get 206 with the exact slice
(or 416 with ``Content-Range: bytes */SIZE``).
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from itertools import count
from urllib.parse import parse_qs

from tracker.hubsim.blobs import Body
from tracker.hubsim.faults import Fault, FaultPlan
from tracker.hubsim.routes import ErrorAnswer, Request, Response, Router, classify
from tracker.hubsim.stats import RequestRecord, Stats

MAX_BODY = 10 * 1024 * 1024
"""The largest request body read (a paths-info list of thousands of paths is ~100 kB)."""


def parse_range(header: str, size: int) -> tuple[int, int] | None:
    """``bytes=a-b`` / ``a-`` / ``-n`` -> [start, end); None when unsatisfiable."""
    spec = header.strip().removeprefix("bytes=").split(",")[0].strip()
    first, _, last = spec.partition("-")
    if not first:
        start, end = max(size - int(last or 0), 0), size
    else:
        start, end = int(first), min(int(last) + 1, size) if last else size
    return (start, end) if start < size and start < end else None


class HubServer(ThreadingHTTPServer):
    """One thread per connection; keeps the router, fault plan, stats and open sockets."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(
        self, address: tuple[str, int], router: Router, faults: FaultPlan, stats: Stats
    ) -> None:
        super().__init__(address, HubHandler)
        self.router = router
        self.faults = faults
        self.stats = stats
        self.stopping = threading.Event()
        self.request_ids = count(1)
        self.open_sockets: set[socket.socket] = set()
        self.sockets_lock = threading.Lock()

    def close_open_connections(self) -> None:
        """Shut down every open keep-alive socket, so ``stop`` does not wait on idle clients."""
        with self.sockets_lock:
            for sock in list(self.open_sockets):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)


class HubHandler(BaseHTTPRequestHandler):
    """Answers one connection's requests through the router, applying faults on the wire."""

    protocol_version = "HTTP/1.1"
    # Headers and body go out as separate writes; with Nagle on, each keep-alive
    # response waits for the client's delayed ACK (~40 ms).
    disable_nagle_algorithm = True
    server: HubServer

    def setup(self) -> None:
        """Register the connection so ``close_open_connections`` can cut it."""
        super().setup()
        with self.server.sockets_lock:
            self.server.open_sockets.add(self.connection)

    def finish(self) -> None:
        """Unregister the connection; a client that already went away is not an error."""
        with self.server.sockets_lock:
            self.server.open_sockets.discard(self.connection)
        with contextlib.suppress(OSError):
            super().finish()

    def _address(self) -> str:
        host, port = self.server.server_address[:2]
        return f"{host!s}:{port}"

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the stats are the log."""

    def do_GET(self) -> None:
        """Route and answer a GET, with any fault drawn for it; file downloads honour Range."""
        self._serve()

    def do_HEAD(self) -> None:
        """Route and answer a HEAD: the GET's headers, no body."""
        self._serve()

    def do_POST(self) -> None:
        """Route and answer a POST (paths-info), its body read up to ``MAX_BODY``."""
        self._serve()

    def _serve(self) -> None:
        path, _, query = self.path.partition("?")
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(min(length, MAX_BODY)) if length else b""
        request = Request(
            method=self.command,
            raw_path=self.path,
            query=parse_qs(query, keep_blank_values=True),
            headers=dict(self.headers.items()),
            base_url=f"http://{self.headers.get('Host') or self._address()}",
            body=body,
        )
        kind, parts = classify(path)
        exact = f"{self.command} {self.path} {self.headers.get('Range') or ''}"
        delay, fault = self.server.faults.draw(kind, path, self.command, exact)
        if delay:
            self.server.stopping.wait(delay)
        if fault is not None and fault.action in ("reset", "hang"):
            self._drop(fault, kind, path)
            return
        response = self._respond(kind, parts, request, fault)
        self._write(response, kind, path, fault)

    def _respond(
        self, kind: str, parts: list[str], request: Request, fault: Fault | None
    ) -> Response:
        if fault is not None and fault.action == "rate_limit":
            bucket = "resolvers" if kind == "resolve" else "api"
            return ErrorAnswer(
                429, None, "You have exceeded our request quota. Retry later.",
                **{"Retry-After": str(fault.retry_after),
                   "RateLimit": f'"{bucket}";r=0;t={fault.retry_after}',
                   "RateLimit-Policy": f'"fixed window";"{bucket}";q=500;w=300'},
            ).response  # fmt: skip
        if fault is not None and fault.action == "status":
            return ErrorAnswer(fault.status, None, f"Injected error {fault.status}").response
        response = self.server.router.handle(kind, parts, request)
        if response.status == 200 and kind in ("resolve", "raw"):
            response = self._ranged(
                response, request.headers.get("Range") or request.headers.get("range")
            )
        return response

    @staticmethod
    def _ranged(response: Response, header: str | None) -> Response:
        if not header:
            return response
        size = response.body.size
        span = parse_range(header, size)
        if span is None:
            headers = {**response.headers, "Content-Range": f"bytes */{size}"}
            return ErrorAnswer(416, None, "Requested Range Not Satisfiable", **headers).response
        start, end = span
        headers = {**response.headers, "Content-Range": f"bytes {start}-{end - 1}/{size}"}
        return Response(206, headers, _Slice(response.body, start, end))

    def _drop(self, fault: Fault, kind: str, path: str) -> None:
        """Status 0 in the log: the client got no answer at all."""
        self.server.stats.record(
            RequestRecord(self.command, path, kind, 0, 0, self.headers.get("Range"))
        )
        if fault.action == "hang":
            self.server.stopping.wait(fault.seconds)
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.close_connection = True

    def _write(self, response: Response, kind: str, path: str, fault: Fault | None) -> None:
        body = response.body
        record = RequestRecord(
            self.command, path, kind, response.status, 0, self.headers.get("Range")
        )
        self.server.stats.record(record)
        self.send_response(response.status)
        request_id = f"Root=1-hubsim-{next(self.server.request_ids):08x}"
        for name, value in {"X-Request-Id": request_id, **response.headers}.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(body.size))
        self.end_headers()
        limit = (
            fault.kept(body.size) if fault is not None and fault.action == "truncate" else body.size
        )
        try:
            if self.command != "HEAD":
                for chunk in body.chunks(0, min(limit, body.size)):
                    self.server.stats.add_bytes(record, len(chunk))
                    self.wfile.write(chunk)
                self.wfile.flush()
        except OSError:
            self.close_connection = True
        if limit < body.size:
            self.close_connection = True


class _Slice:
    """Bytes ``[start, end)`` of another body."""

    def __init__(self, body: Body, start: int, end: int) -> None:
        self._body, self._start, self._end = body, start, end

    @property
    def size(self) -> int:
        return self._end - self._start

    def chunks(self, start: int, end: int):  # type: ignore[no-untyped-def]
        return self._body.chunks(self._start + start, self._start + end)
