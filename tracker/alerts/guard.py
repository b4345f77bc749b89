"""Connect-time egress checks: every socket a delivery opens must reach an allowed address.

Checking a URL's host before sending is not enough. The name may resolve to a
public address when checked and to 127.0.0.1 when the client connects (DNS
rebinding); a receiver may redirect; apprise makes its own requests through
``requests`` with its own calls. So while a delivery is being sent, an audit
hook (PEP 578, the ``socket.connect`` event, raised by CPython for every
``connect`` and ``connect_ex`` before the system call) looks at the peer
address the socket is about to reach and refuses it unless ``Egress`` allows
it. The hook is installed once per process (audit hooks cannot be removed)
and does nothing outside a ``guarded`` block; the block's ``Guard`` lives in
a context variable, so it follows the delivery into the worker threads
apprise submits its calls to (apprise 2.3, ``apprise.py``
``submit_with_context``, runs each call in ``contextvars.copy_context()``)
and nowhere else.

A refused connect raises ``ConnectRefused`` (a PermissionError, so the HTTP
client treats it as the failed connect it is); the guard keeps the first
refusal, so the sender can report it even when a library swallows the error.
"""

from __future__ import annotations

import socket
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Final, NoReturn

from tracker.alerts.addresses import ConnectRefused, parse_address
from tracker.alerts.egress import ALLOW_HINT, Cleared, Egress

EVENT: Final = "socket.connect"
_CURRENT: ContextVar[Guard | None] = ContextVar("neurarch_egress_guard", default=None)
_INSTALL = threading.Lock()
_installed = False

__all__ = ["Guard", "guarded"]


class Guard:
    """One delivery's connect-time check: the policy, names the allow-list pinned, refusals."""

    def __init__(self, egress: Egress, cleared: tuple[Cleared, ...] = ()) -> None:
        self.egress = egress
        # An allow-listed host name is trusted by name; the addresses it resolved to
        # when it was cleared are the ones its sockets may reach.
        self.pinned = {
            (address, destination.port)
            for destination in cleared
            if destination.allowed_by is not None
            for address in destination.addresses
        }
        self.refused: ConnectRefused | None = None

    def check(self, family: int, address: Any) -> None:
        """Raise ConnectRefused unless an IPv4/IPv6 socket may connect to ``address``.

        Other families (a Unix socket a log handler reconnects) are not
        network egress and pass.
        """
        if family not in (socket.AF_INET, socket.AF_INET6):
            return
        host, port = str(address[0]), int(address[1])
        try:
            peer = parse_address(host)
        except ValueError:
            # connect(("name", port)) resolves inside the call, after this check could
            # look; the HTTP clients always connect to numeric addresses.
            self._refuse(f"connection to {host!r} refused: not a numeric address", host)
        if (peer, port) in self.pinned:
            return
        reason = self.egress.connect_refusal(peer, port)
        if reason is not None:
            self._refuse(
                f"connection to {peer.compressed} port {port} refused: {reason}; alerts go "
                f"only to public addresses unless {ALLOW_HINT} lists it",
                host,
                peer.compressed,
            )

    def _refuse(self, message: str, host: str, address: str | None = None) -> NoReturn:
        refused = ConnectRefused(message, host=host, address=address)
        if self.refused is None:
            self.refused = refused
        raise refused


@contextmanager
def guarded(egress: Egress, *cleared: Cleared) -> Iterator[Guard]:
    """Check every socket connected in this block (and in contexts copied from it)."""
    _install()
    guard = Guard(egress, cleared)
    token = _CURRENT.set(guard)
    try:
        yield guard
    finally:
        _CURRENT.reset(token)


def _install() -> None:
    global _installed
    with _INSTALL:
        if not _installed:
            sys.addaudithook(_audit)
            _installed = True


def _audit(event: str, args: tuple[Any, ...]) -> None:
    """The process-wide hook: cheap for every other event, a check inside a guarded block."""
    if event != EVENT:
        return
    guard = _CURRENT.get()
    if guard is None:
        return
    sock, address = args
    guard.check(sock.family, address)
