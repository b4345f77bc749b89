"""What the egress guard costs: the audit hook on every audited event, a guarded connect, a check.

Run: python tests/bench/bench_egress.py. Prints nanoseconds per audited event
outside a delivery (the hook is process-wide once installed), microseconds per
loopback connect with and without the guard, and microseconds per host check.
"""

from __future__ import annotations

import socket
import sys
import threading
import time
from collections.abc import Callable

from tracker.alerts.egress import AllowList, Egress
from tracker.alerts.guard import guarded


def per_call(action: Callable[[], object], repeat: int) -> float:
    """Seconds per call of ``action``, best of three runs."""
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(repeat):
            action()
        best = min(best, (time.perf_counter() - start) / repeat)
    return best


def main() -> None:
    event = sys._getframe  # raises the "sys._getframe" audit event on every call
    before = per_call(event, 500_000)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4096)
    port = listener.getsockname()[1]

    def accept() -> None:
        while True:
            listener.accept()[0].close()

    threading.Thread(target=accept, daemon=True).start()

    def connect() -> None:
        socket.create_connection(("127.0.0.1", port)).close()

    plain = per_call(connect, 1000)
    allowed = Egress(AllowList.parse([f"127.0.0.1:{port}"]))
    with guarded(allowed):  # installs the hook
        checked = per_call(connect, 1000)
    after = per_call(event, 500_000)
    egress = Egress()
    numeric = per_call(lambda: egress.check_url("http://93.184.216.34/x"), 20_000)
    named = per_call(lambda: allowed.check_url(f"http://127.0.0.1:{port}/x"), 20_000)
    print(f"audited event outside a delivery: {before * 1e9:.0f} ns -> {after * 1e9:.0f} ns")
    print(f"loopback connect: {plain * 1e6:.1f} us plain, {checked * 1e6:.1f} us guarded")
    print(f"check of a numeric host: {numeric * 1e6:.1f} us, allow-listed: {named * 1e6:.1f} us")


if __name__ == "__main__":
    main()
