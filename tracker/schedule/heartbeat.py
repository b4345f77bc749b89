"""A lease kept alive while a revision is prepared, for as long as its time budget allows.

A lease renewed only when a revision commits is lost by any revision that takes
longer to prepare than the lease (thousands of small files at a few Hub requests
a second): another worker claims the repo, starts over, loses it too, and the
revision is never recorded. A heartbeat renews the lease every third of its
length while the work goes on. Renewal
is bounded: it stops at ``until`` (the revision's budget plus one lease), so a
prepare that hangs past its budget lets the lease expire and another worker
take the repo, rather than holding it forever.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from datetime import datetime
from types import TracebackType

from storage import Database, StorageError
from tracker.schedule.leases import Claim, LeaseLost, renew

log = logging.getLogger("neurarch.worker")


class Heartbeat:
    """Renews ``claim`` on a thread of its own inside a ``with`` block."""

    def __init__(
        self,
        database: Database,
        claim: Claim,
        *,
        lease_s: float,
        until: float,
        clock: Callable[[], datetime],
    ) -> None:
        self.database = database
        self.claim = claim
        self.lease_s = lease_s
        self.until = until
        self.clock = clock
        self.beats = 0
        self.lost = False
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name=f"heartbeat {claim.repo_id}", daemon=True
        )

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        every = max(self.lease_s / 3, 0.05)
        while not self._stop.wait(every):
            if time.monotonic() > self.until:
                log.warning(json.dumps({"event": "heartbeat_stopped", "repo": self.claim.repo_id}))
                return
            try:
                with self.database.session() as session:
                    renew(session, self.claim, now=self.clock(), lease_s=self.lease_s)
                self.beats += 1
            except LeaseLost:
                # The commit's fence will find it lost too and write nothing.
                self.lost = True
                return
            except StorageError as exc:
                # The database is away for a moment: the next beat tries again.
                log.warning(json.dumps({"event": "heartbeat_failed", "error": str(exc)}))


__all__ = ["Heartbeat"]
