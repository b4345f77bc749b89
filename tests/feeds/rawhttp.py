"""A bare HTTP/1.1 client on a socket, for what httpx will not do: lie in Content-Length,
stream a body forever, and read the answer while still sending."""

from __future__ import annotations

import select
import socket
import time
from dataclasses import dataclass

CHUNK = 64 * 1024


@dataclass(frozen=True)
class Answer:
    """What came back: status, the raw response, bytes of body sent before it, seconds taken."""

    status: int
    raw: bytes
    sent: int
    seconds: float

    @property
    def body(self) -> bytes:
        return self.raw.partition(b"\r\n\r\n")[2]


def _head(method: str, path: str, headers: dict[str, str]) -> bytes:
    lines = [
        f"{method} {path} HTTP/1.1",
        "Host: 127.0.0.1",
        *(f"{k}: {v}" for k, v in headers.items()),
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _status(raw: bytes) -> int:
    return int(raw.split(b" ", 2)[1]) if raw.startswith(b"HTTP/1.1 ") else 0


def read_answer(sock: socket.socket, timeout: float) -> bytes:
    """Bytes until the server closes or the response's declared length has arrived."""
    raw = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        readable, _, _ = select.select([sock], [], [], 0.2)
        if not readable:
            continue
        try:
            part = sock.recv(65536)
        except ConnectionResetError:
            break
        if not part:
            break
        raw += part
        head, sep, body = raw.partition(b"\r\n\r\n")
        for line in head.split(b"\r\n"):
            name, _, value = line.partition(b":")
            if sep and name.strip().lower() == b"content-length" and len(body) >= int(value):
                return raw
    return raw


def declare(
    port: int, path: str, headers: dict[str, str], length: int, method: str = "POST"
) -> Answer:
    """Send only the head, claiming ``length`` bytes of body, and wait for the answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        start = time.monotonic()
        sock.sendall(_head(method, path, {**headers, "Content-Length": str(length)}))
        raw = read_answer(sock, timeout=10)
        return Answer(_status(raw), raw, 0, time.monotonic() - start)


def stream(
    port: int,
    path: str,
    headers: dict[str, str],
    prefix: bytes,
    total: int,
    method: str = "POST",
) -> Answer:
    """Send ``prefix`` then up to ``total`` bytes of padding, chunked, stopping at the answer."""
    frame = b"%x\r\n%s\r\n" % (CHUNK, b"x" * CHUNK)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        start = time.monotonic()
        sock.sendall(_head(method, path, {**headers, "Transfer-Encoding": "chunked"}))
        sock.sendall(b"%x\r\n%s\r\n" % (len(prefix), prefix))
        sent = len(prefix)
        try:
            while sent < total:
                readable, writable, _ = select.select([sock], [sock], [], 10)
                if readable:
                    break
                if writable:
                    sock.sendall(frame)
                    sent += CHUNK
            else:
                sock.sendall(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered and closed: read what it said
        raw = read_answer(sock, timeout=10)
        return Answer(_status(raw), raw, sent, time.monotonic() - start)


__all__ = ["Answer", "declare", "stream"]
