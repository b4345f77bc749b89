"""A webhook receiver on loopback that checks every signature, as a subscriber's endpoint would.

It can be started and stopped on a fixed port, so a test can keep the
receiver "down" (nothing listening: connection refused) while alerts queue
up, then bring it up on the address the subscription names.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Received:
    """One POST as the receiver saw it."""

    delivery_id: str
    body: dict[str, Any]
    signature_ok: bool


@dataclass
class WebhookReceiver:
    """A signature-checking receiver on 127.0.0.1:``port``; 401 for a bad signature."""

    port: int
    secret: str
    received: list[Received] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hooks/neurarch"

    def verify(self, timestamp: str, signature: str, body: bytes) -> bool:
        expected = hmac.new(
            self.secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256
        ).hexdigest()
        fresh = timestamp.isdigit() and abs(time.time() - int(timestamp)) < 300
        return fresh and hmac.compare_digest(signature, f"sha256={expected}")

    def start(self) -> WebhookReceiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                ok = receiver.verify(
                    self.headers.get("X-Neurarch-Timestamp", ""),
                    self.headers.get("X-Neurarch-Signature", ""),
                    body,
                )
                if ok:
                    with receiver._lock:
                        receiver.received.append(
                            Received(self.headers["X-Neurarch-Delivery"], json.loads(body), ok)
                        )
                self.send_response(204 if ok else 401)
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:
                return

        ThreadingHTTPServer.allow_reuse_address = True
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def ids(self) -> list[str]:
        with self._lock:
            return [r.delivery_id for r in self.received]
