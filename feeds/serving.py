"""How the app is put on a socket: uvicorn with a deadline for request headers.

uvicorn closes a kept-alive connection that stays idle (``timeout_keep_alive``)
but sets no deadline for a request's headers: a fresh connection that sends
nothing, or a request line and headers trickled a byte at a time, is held
open for ever, and enough of them exhaust the process's file descriptors.
``HeaderDeadline`` closes a connection whose request headers are not complete
``header_seconds`` after their first byte (or after the connection opened).
The body has its own deadline in the app (``feeds.limits.BodyLimits``), so
every phase of a request is bounded. A web process serves requests only, so
its interpreter lock changes hands every millisecond (``SWITCH_SECONDS``).
"""

from __future__ import annotations

import asyncio
import sys
from functools import partial
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

HEADER_SECONDS = 10.0
"""How long a request's line and headers may take to arrive (nginx's client_header_timeout
is 60 s; a probe or API client sends them in one packet)."""
KEEP_ALIVE_SECONDS = 5
"""How long an idle kept-alive connection stays open (uvicorn's default, stated here)."""
SWITCH_SECONDS = 0.001
"""How long a thread may hold the interpreter lock while another waits (CPython: 5 ms)."""
MAX_HEADER_BYTES = 16 * 1024
"""The most a request's line and headers may take (h11's incomplete-event cap)."""


class HeaderDeadline(H11Protocol):
    """uvicorn's h11 protocol, closing connections whose request headers arrive too slowly."""

    def __init__(self, *args: Any, header_seconds: float = HEADER_SECONDS, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.header_seconds = header_seconds
        self._header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """Start the header clock as soon as the connection opens."""
        super().connection_made(transport)  # type: ignore[arg-type]
        self._arm()

    def data_received(self, data: bytes) -> None:
        """Keep the clock running while headers arrive; stop it once they are complete."""
        super().data_received(data)
        if self.conn.their_state is h11.IDLE:
            self._arm()  # the next request's headers have started (or are still coming)
        else:
            self._disarm()  # complete: the app's body deadline takes over

    def connection_lost(self, exc: Exception | None) -> None:
        """Stop the clock, so a closed connection leaves no timer behind."""
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        if self._header_timer is None:
            self._header_timer = self.loop.call_later(self.header_seconds, self._expired)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _expired(self) -> None:
        self._header_timer = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.close()


def server_config(
    app: Any,
    *,
    host: str = "127.0.0.1",
    port: int = 8080,
    header_seconds: float = HEADER_SECONDS,
    keep_alive_seconds: int = KEEP_ALIVE_SECONDS,
) -> uvicorn.Config:
    """The uvicorn configuration the app is served with (the daemon's and the tests').

    It also sets this process's interpreter switch interval to ``SWITCH_SECONDS``:
    a thread rendering a page then yields the interpreter lock to the event loop
    (a health probe) within 1 ms instead of CPython's 5 ms, which bounded
    ``/healthz`` under a page flood (bench_web_flood: max 1.9 s -> 0.97 s).
    """
    sys.setswitchinterval(SWITCH_SECONDS)
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        http=partial(HeaderDeadline, header_seconds=header_seconds),  # type: ignore[arg-type]
        timeout_keep_alive=keep_alive_seconds,
        h11_max_incomplete_event_size=MAX_HEADER_BYTES,
        log_level="warning",
        access_log=False,
        lifespan="off",
    )


__all__ = ["HEADER_SECONDS", "KEEP_ALIVE_SECONDS", "HeaderDeadline", "server_config"]
