"""When each repo is checked next, and the ticker that wakes the workers.

Scheduling state lives in storage (``poll_state``), never in APScheduler's
job store, so any number of instances can share it: APScheduler here only
ticks. The jitter is derived from the repo id, so a repo's slot within its
interval is stable across restarts and instances, and tests need no
randomness to fake; the same holds for the backoff, which doubles per failure
up to a cap.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from datetime import datetime, timedelta

from apscheduler.schedulers.background import BackgroundScheduler

from storage import RepoId

JITTER_FRACTION = 0.1
"""A repo's check lands up to this fraction of its interval after the nominal time."""
BACKOFF_BASE_S = 60.0

log = logging.getLogger(__name__)


def jitter_fraction(repo_id: RepoId) -> float:
    """A number in [0, 1) fixed by the repo id: the same repo always gets the same slot."""
    digest = hashlib.sha256(repo_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def next_check_after_success(repo_id: RepoId, now: datetime, interval_s: float) -> datetime:
    """The next routine check: one interval plus the repo's own jitter."""
    jitter = interval_s * JITTER_FRACTION * jitter_fraction(repo_id)
    return now + timedelta(seconds=interval_s + jitter)


def backoff_s(
    failures: int, interval_s: float, cap_s: float, base_s: float = BACKOFF_BASE_S
) -> float:
    """Delay after ``failures`` consecutive failures: base * 2^(n-1), never above the cap.

    A failing repo is retried sooner than its interval at first (a blip
    should not cost an hour), but never more often than the base delay, and
    never later than ``cap_s``.
    """
    if failures < 1:
        return interval_s
    return float(min(cap_s, base_s * 2 ** min(failures - 1, 40)))


def next_check_after_failure(
    repo_id: RepoId, now: datetime, failures: int, interval_s: float, cap_s: float
) -> datetime:
    """When to retry after the ``failures``-th failure in a row (jittered like routine checks)."""
    delay = backoff_s(failures, interval_s, cap_s)
    return now + timedelta(seconds=delay * (1 + JITTER_FRACTION * jitter_fraction(repo_id)))


class Ticker:
    """An APScheduler BackgroundScheduler that calls ``tick`` every ``every_s`` seconds.

    It holds no state of its own: ``tick`` asks storage what is due. One run
    at a time (max_instances=1) and coalescing keep a slow tick from piling
    up behind itself.
    """

    def __init__(self, tick: Callable[[], object], every_s: float, name: str = "tick") -> None:
        self._scheduler = BackgroundScheduler(timezone="UTC")
        self._scheduler.add_job(
            self._safe(tick, name),
            "interval",
            seconds=every_s,
            id=name,
            max_instances=1,
            coalesce=True,
            next_run_time=None,
        )
        self._name = name

    def add(self, job: Callable[[], object], every_s: float, name: str) -> None:
        """Tick another job (discovery, inbox drain) on its own period."""
        self._scheduler.add_job(
            self._safe(job, name),
            "interval",
            seconds=every_s,
            id=name,
            max_instances=1,
            coalesce=True,
        )

    def start(self) -> None:
        """Start the scheduler thread and run every job once now, not one period from now."""
        self._scheduler.start()
        for job in self._scheduler.get_jobs():
            job.modify(next_run_time=datetime.now(self._scheduler.timezone))

    def shutdown(self, wait: bool = True) -> None:
        """Stop ticking; with ``wait`` the tick in progress finishes first."""
        if self._scheduler.running:
            self._scheduler.shutdown(wait=wait)

    @staticmethod
    def _safe(job: Callable[[], object], name: str) -> Callable[[], None]:
        def run() -> None:
            try:
                job()
            except Exception:  # a tick must never kill the scheduler thread
                log.exception("%s failed; the next tick retries", name)

        return run


__all__ = [
    "BACKOFF_BASE_S",
    "JITTER_FRACTION",
    "Ticker",
    "backoff_s",
    "jitter_fraction",
    "next_check_after_failure",
    "next_check_after_success",
]
