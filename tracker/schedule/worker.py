"""Check workers: claim a due repo, find its new revisions, record each exactly once.

A check costs one request when nothing moved (the head probe). When the head
moved, the commit list is read; the repo's status, the history check and the
list of recorded shas are one transaction, and revisions the database lacks are
processed oldest first (recorded ones skipped without a read), each committed in
one transaction with its published rows and a renewal of the lease (the fence: a
worker that lost its lease writes nothing). While a revision is prepared a
heartbeat renews the lease (``tracker.schedule.heartbeat``); what is not fetched
within the revision's budget is left out with a finding, so a huge revision is
recorded partial instead of losing its lease and starting over forever. A
failure stops the repo at the revision that failed, so later revisions are never
diffed against the wrong predecessor, and the repo is retried with backoff.
Main's order is placed in the transaction that ends the check and hands the
lease back, so a worker that lost its lease renumbers nothing. On shutdown a
worker finishes the revision in hand and releases what it has not started.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.orm import Session

from storage import Database, LeaseNotHeld, RepoStatus, StorageError, place_on_main
from storage.records import Revision
from tracker.errors import Gated, HubError, RepoGone
from tracker.hub.client import Hub
from tracker.hub.discovery import HeadInfo, HeadProbe
from tracker.revision.process import Publishers, commit, prepare, remember
from tracker.revision.walk import Walk
from tracker.schedule.events import RepoEvent, history_checked, report, status_changed
from tracker.schedule.heartbeat import Heartbeat
from tracker.schedule.leases import (
    Claim,
    LeaseLost,
    claim_due,
    complete,
    fail,
    lease_fence,
    release,
    renew,
)
from tracker.schedule.metrics import DaemonMetrics
from tracker.schedule.ticker import next_check_after_failure, next_check_after_success

log = logging.getLogger("neurarch.worker")


@dataclass(frozen=True)
class WorkerPolicy:
    """How checks are paced."""

    interval_s: float = 3600.0
    max_backoff_s: float = 6 * 3600.0
    lease_s: float = 300.0
    revision_budget_s: float | None = None
    """How long one revision may take to fetch before what is left is skipped with a finding
    (recorded partial rather than retried forever); None: four leases (20 minutes by default)."""

    @property
    def budget_s(self) -> float:
        """Seconds one revision may spend fetching: ``revision_budget_s``, else four leases."""
        return 4 * self.lease_s if self.revision_budget_s is None else self.revision_budget_s


class Stopping(Exception):
    """Raised between revisions when the worker was asked to stop."""


class Worker:
    """One check loop; the daemon runs several on threads, sharing the database."""

    def __init__(
        self,
        database: Database,
        hub: Hub,
        probe: HeadProbe,
        *,
        owner: str,
        policy: WorkerPolicy,
        metrics: DaemonMetrics,
        clock: Callable[[], datetime],
        publish: Publishers | None = None,
        stop: threading.Event | None = None,
    ) -> None:
        self.database = database
        self.hub = hub
        self.probe = probe
        self.owner = owner
        self.policy = policy
        self.metrics = metrics
        self.clock = clock
        self.publish = publish
        self.stop = stop or threading.Event()
        self.heartbeat = Heartbeat(
            database, lease_s=policy.lease_s, clock=clock, name=f"heartbeat {owner}"
        )

    def run(self, idle_s: float) -> None:
        """Check due repos until ``stop`` is set; wait ``idle_s`` when nothing is due."""
        while not self.stop.is_set():
            try:
                busy = self.run_once()
            except StorageError as exc:
                # The database is away (restart, network): keep the thread, try again.
                log.warning(json.dumps({"event": "storage_unavailable", "error": str(exc)}))
                busy = False
            if not busy:
                self.stop.wait(idle_s)
        self.heartbeat.close()

    def run_once(self) -> bool:
        """Claim and check one due repo; False when none was due."""
        claims = claim_due(
            self.database, self.owner, now=self.clock(), lease_s=self.policy.lease_s, limit=1
        )
        for claim in claims:
            if self.stop.is_set():
                release(self.database, claim)
            else:
                self.check(claim)
        return bool(claims)

    def check(self, claim: Claim) -> None:
        """Check one claimed repo: record its new revisions (each committed), then reschedule it.

        A failed check is stored with backoff, not raised; a stop releases the claim. LeaseLost
        (the lease taken over as the check ends) and StorageError reach the caller.
        """
        started = time.monotonic()
        interval = claim.interval_s or self.policy.interval_s
        try:
            head_sha, main_shas = self._check(claim)
        except Stopping:
            release(self.database, claim)
            self.metrics.checks.labels(outcome="released").inc()
            return
        except LeaseLost as exc:
            log.warning(
                json.dumps({"event": "lease_lost", "repo": claim.repo_id, "detail": str(exc)})
            )
            self.metrics.checks.labels(outcome="lease_lost").inc()
            return
        except HubError as exc:
            self._failed(claim, exc, interval)
            return
        except Exception as exc:
            # The edge of one check: anything unforeseen (a body the client
            # could not parse, a storage hiccup) fails this repo with backoff
            # and leaves the other workers running.
            log.exception("check of %s failed unexpectedly", claim.repo_id)
            self._failed(claim, exc, interval)
            return
        finally:
            self.metrics.check_seconds.observe(time.monotonic() - started)
        now = self.clock()
        with self.database.session() as session:
            if main_shas is not None:
                # Fenced with the lease's end: a worker that lost it renumbers nothing.
                place_on_main(session, claim.repo_id, main_shas)
            complete(
                session,
                claim,
                now=now,
                head_sha=head_sha,
                next_check_at=next_check_after_success(claim.repo_id, now, interval),
            )
        self.metrics.checks.labels(outcome="ok").inc()

    def _check(self, claim: Claim) -> tuple[str | None, list[str] | None]:
        """The head sha now (None if the repo is gone) and, when the history was read, main's
        shas oldest first (for the check's end to place them); records every new revision
        on the way."""
        try:
            info = self.probe.head(claim.repo_id)
        except RepoGone:
            self._status(claim, RepoStatus.GONE)
            return claim.last_seen_sha, None
        except Gated:
            self._status(claim, RepoStatus.GATED)
            return claim.last_seen_sha, None
        status, renamed_to = _status_of(claim, info)
        if info.sha == claim.last_seen_sha:
            self._status(claim, status, renamed_to)
            return info.sha, None
        try:
            history = self.hub.commits(claim.repo_id)
        except Gated:
            # Listed but unreadable without accepted terms: reported, not failing.
            self._status(claim, RepoStatus.GATED)
            return claim.last_seen_sha, None
        except BaseException:
            self._status(claim, status, renamed_to)
            raise
        main_shas = [r.sha for r in history]
        with self.database.session() as session:
            # The Hub's word on the repo and on its history, stored in one transaction.
            self._status_in(session, claim, status, renamed_to)
            checked = history_checked(session, claim.repo_id, main_shas, now=self.clock())
            self._report(checked.event)
        self._record_history(claim, history, checked.recorded)
        return history[-1].sha, main_shas

    def _record_history(
        self, claim: Claim, history: list[Revision], recorded: frozenset[str]
    ) -> None:
        walk = Walk(repo_pk=claim.repo_pk)
        listed = {r.sha: r for r in history}
        for revision in history:
            if self.stop.is_set():
                raise Stopping
            if revision.sha not in recorded:
                self._record(claim, revision, walk, listed)

    def _record(
        self,
        claim: Claim,
        revision: Revision,
        walk: Walk,
        listed: dict[str, Revision],
    ) -> None:
        deadline = time.monotonic() + self.policy.budget_s
        with self.heartbeat.renewing(claim, until=deadline + self.policy.lease_s):
            prepared = prepare(self.database, self.hub, revision, walk, listed, deadline=deadline)
        if prepared is None:
            return

        fence = lease_fence(claim, now=self.clock(), lease_s=self.policy.lease_s)
        try:
            published = commit(
                self.database, prepared, fence=fence, publish=self.publish, clock=self.clock
            )
        except LeaseNotHeld as exc:
            raise LeaseLost(str(exc)) from exc
        if published is not None:
            remember(walk, prepared)
            self.metrics.revisions.inc()
            log.info(
                json.dumps(
                    {
                        "event": "revision_recorded",
                        "repo": revision.repo_id,
                        "sha": revision.sha,
                        "owner": self.owner,
                        "changes": len(prepared.outcome.changes),
                        "advisory": published.advisory_id,
                        "alerts": len(published.deliveries),
                    }
                )
            )

    def _status(self, claim: Claim, status: RepoStatus, renamed_to: str | None = None) -> None:
        with self.database.session() as session:
            self._status_in(session, claim, status, renamed_to)

    def _status_in(
        self, session: Session, claim: Claim, status: RepoStatus, renamed_to: str | None
    ) -> None:
        renew(session, claim, now=self.clock(), lease_s=self.policy.lease_s)
        self._report(
            status_changed(session, claim.repo_id, status, now=self.clock(), renamed_to=renamed_to)
        )

    def _report(self, event: RepoEvent | None) -> None:
        if event is not None:
            report(event)
            self.metrics.events.labels(kind=event.kind.value).inc()

    def _failed(self, claim: Claim, exc: Exception, interval: float) -> None:
        now = self.clock()
        self.metrics.checks.labels(outcome="failed").inc()
        self.metrics.failures.labels(error=type(exc).__name__).inc()
        log.warning(
            json.dumps(
                {
                    "event": "check_failed",
                    "repo": claim.repo_id,
                    "failures": claim.failures + 1,
                    "error": f"{type(exc).__name__}: {exc}",
                }
            )
        )
        try:
            with self.database.session() as session:
                fail(
                    session,
                    claim,
                    now=now,
                    error=f"{type(exc).__name__}: {exc}",
                    next_check_at=next_check_after_failure(
                        claim.repo_id, now, claim.failures + 1, interval, self.policy.max_backoff_s
                    ),
                )
        except LeaseLost:
            self.metrics.checks.labels(outcome="lease_lost").inc()


def _status_of(claim: Claim, info: HeadInfo) -> tuple[RepoStatus, str | None]:
    """What the head probe says of the repo: its status, and its new id when renamed."""
    if info.repo_id != claim.repo_id:
        return RepoStatus.RENAMED, info.repo_id
    if info.gated:
        return RepoStatus.GATED, None
    if info.private:
        return RepoStatus.PRIVATE, None
    return RepoStatus.ACTIVE, None


__all__ = ["Stopping", "Worker", "WorkerPolicy"]
