"""The render gate: at most ``limit`` requests render at once, probes pass, a flood is told 503."""

from __future__ import annotations

import asyncio

from starlette.types import Message, Receive, Scope, Send

from feeds.gate import RenderGate


def test_render_gate_bounds_renders_lets_the_probe_through_and_refuses_past_the_queue() -> None:
    inside, peak, order = 0, 0, []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        nonlocal inside, peak
        if scope["path"] == "/page":
            inside += 1
            peak = max(peak, inside)
            await asyncio.sleep(0.05)
            inside -= 1
        order.append(scope["path"])
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    gate = RenderGate(app, limit=2, max_waiting=3, exempt={"/healthz"})

    async def request(path: str) -> int:
        sent: list[Message] = []

        async def receive() -> Message:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: Message) -> None:
            sent.append(message)

        scope = {"type": "http", "path": path, "method": "GET", "headers": []}
        await gate(scope, receive, send)
        return int(sent[0]["status"])

    async def flood() -> tuple[list[int], int]:
        pages = [asyncio.create_task(request("/page")) for _ in range(8)]
        await asyncio.sleep(0.01)  # the pages are in or waiting
        probe = await request("/healthz")
        return list(await asyncio.gather(*pages)), probe

    statuses, probe = asyncio.run(flood())
    assert peak == 2
    assert sorted(statuses) == [200] * 5 + [503] * 3  # 2 rendering + 3 waiting; the rest refused
    assert probe == 200 and order[0] == "/healthz"  # answered before any page finished
