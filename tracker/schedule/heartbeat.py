"""A lease kept alive while a revision is prepared, for as long as its time budget allows.

A lease renewed only when a revision commits is lost by any revision that takes
longer to prepare than the lease (thousands of small files at a few Hub requests
a second): another worker claims the repo, starts over, loses it too, and the
revision is never recorded. A heartbeat renews the lease every third of its
length while the work goes on. Renewal
is bounded: it stops at ``until`` (the revision's budget plus one lease), so a
prepare that hangs past its budget lets the lease expire and another worker
take the repo, rather than holding it forever.

Each worker has one ``Heartbeat``: its thread is started on first use and then
waits between revisions, so a revision costs no thread start and join.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from functools import partial

from storage import Database, StorageError
from tracker.schedule.leases import Claim, LeaseLost, renew

log = logging.getLogger("neurarch.worker")


@dataclass
class Beat:
    """One stretch of renewals: a claim renewed until ``until`` (``time.monotonic()``)."""

    claim: Claim
    until: float
    beats: int = 0
    """Renewals made."""
    lost: bool = False
    """A renewal found the lease taken over: the commit's fence will find it too."""
    stopped: bool = False
    """No more renewals: past ``until``, or lost."""


class Heartbeat:
    """Renews the claim in hand, on a thread of its own, inside ``renewing`` blocks."""

    def __init__(
        self,
        database: Database,
        *,
        lease_s: float,
        clock: Callable[[], datetime],
        name: str = "heartbeat",
    ) -> None:
        self.database = database
        self.name = name
        self.lease_s = lease_s
        self.clock = clock
        self._every = max(lease_s / 3, 0.05)
        self._wake = threading.Condition()
        self._beat: Beat | None = None
        self._renewing = False
        self._closed = False
        self._thread: threading.Thread | None = None

    @contextmanager
    def renewing(self, claim: Claim, *, until: float) -> Iterator[Beat]:
        """Renew ``claim`` every third of a lease until the block ends or ``until``; when
        the block ends no renewal is in flight, so the caller's commit runs alone."""
        beat = Beat(claim, until)
        with self._wake:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
                self._thread.start()
            self._beat = beat
            self._wake.notify_all()
        try:
            yield beat
        finally:
            with self._wake:
                self._beat = None
                self._wake.notify_all()
                self._wake.wait_for(lambda: not self._renewing)

    def close(self) -> None:
        """Stop the thread (a worker that stops)."""
        with self._wake:
            self._closed = True
            self._wake.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join()

    def _run(self) -> None:
        while (beat := self._next_due()) is not None:
            try:
                self._renew(beat)
            finally:
                with self._wake:
                    self._renewing = False
                    self._wake.notify_all()

    def _next_due(self) -> Beat | None:
        """The beat whose renewal is due, waiting for it; None once closed."""
        with self._wake:
            while not self._closed:
                beat = self._beat
                if beat is None or beat.stopped:
                    self._wake.wait()
                    continue
                if self._wake.wait_for(partial(self._ended, beat), self._every):
                    continue  # the block ended (or a new one began) before the beat was due
                if time.monotonic() > beat.until:
                    log.warning(
                        json.dumps({"event": "heartbeat_stopped", "repo": beat.claim.repo_id})
                    )
                    beat.stopped = True
                    continue
                self._renewing = True
                return beat
            return None

    def _ended(self, beat: Beat) -> bool:
        return self._beat is not beat or self._closed

    def _renew(self, beat: Beat) -> None:
        try:
            with self.database.session() as session:
                renew(session, beat.claim, now=self.clock(), lease_s=self.lease_s)
            beat.beats += 1
        except LeaseLost:
            beat.lost = True
            beat.stopped = True
        except StorageError as exc:
            # The database is away for a moment: the next beat tries again.
            log.warning(json.dumps({"event": "heartbeat_failed", "error": str(exc)}))


__all__ = ["Beat", "Heartbeat"]
