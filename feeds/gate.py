"""At most a few requests worked on at once, so a flood cannot starve the health probe.

Page, feed and OSV handlers render on threads that share one interpreter
lock with the event loop, so enough concurrent page renders make ``/healthz``
probes miss their deadline. ``RenderGate`` lets at most
``limit`` requests into the app until their response starts (a slow reader of
a long download does not hold a slot); the others wait as coroutines, which
cost no thread and no lock. Past ``max_waiting`` waiters it answers 503 with
``Retry-After`` at once. Exempt paths (the probe, metrics, and the plan API,
which waits on its own worker pool) pass straight through.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

RETRY_AFTER_SECONDS = 1


class RenderGate:
    """ASGI middleware bounding how many requests the app renders at once."""

    def __init__(
        self, app: ASGIApp, *, limit: int, max_waiting: int, exempt: Iterable[str]
    ) -> None:
        self.app = app
        self.slots = asyncio.Semaphore(limit)
        self.max_waiting = max_waiting
        self.waiting = 0
        self.exempt = frozenset(exempt)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Render within a slot; 503 with Retry-After when every slot and waiting place is taken."""
        if scope["type"] != "http" or scope["path"] in self.exempt:
            await self.app(scope, receive, send)
            return
        if self.slots.locked() and self.waiting >= self.max_waiting:
            busy = JSONResponse(
                {"detail": "the server is busy; try again shortly"},
                status_code=503,
                headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
            )
            await busy(scope, receive, send)
            return
        self.waiting += 1
        try:
            await self.slots.acquire()
        finally:
            self.waiting -= 1
        held = True

        def release() -> None:
            nonlocal held
            if held:
                held = False
                self.slots.release()

        async def send_releasing(message: Message) -> None:
            if message["type"] == "http.response.start":
                release()
            await send(message)

        try:
            await self.app(scope, receive, send_releasing)
        finally:
            release()


__all__ = ["RenderGate"]
