"""Draining the alert outbox: one lane per channel, lanes side by side, each in order.

A lane is one (subscription, channel): storage makes only the oldest pending
row of a lane due, so a lane is sent strictly in sequence order. Lanes run
concurrently on a thread pool, so a receiver that hangs for its whole
timeout holds back its own lane and nobody else's. One lane's work:

1. claim its due row in one short transaction and commit it (the claim
   counts an attempt and hides the row for ``lease_s``), so no lock or
   connection is held while a receiver is slow;
2. push it through the sender of its channel kind, outside any transaction;
3. record success or failure in a new transaction: a retryable failure comes
   back after the policy's backoff, a permanent one (or one whose own
   attempts have used up the give-up horizon) becomes a dead letter; after a
   success the lane claims its next row at once, so a receiver that comes
   back drains its backlog without waiting for a tick.

``dispatch`` starts lanes for every channel with a due row and returns at
once (the daemon's tick); ``run_once`` also waits for them (tests, scripts).
Rows are claimed only for free pool threads, so a claimed row is sent
straight away, well inside its lease. A worker that dies between 1 and 3
leaves its row to come back when the lease runs out; if it died after the
POST, the receiver sees the same ``webhook-id`` again and can
drop it.
"""

from __future__ import annotations

import json
import logging
import math
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final

from storage import (
    Database,
    Delivery,
    Subscription,
    channel_key,
    claim_due_deliveries,
    record_delivery_failure,
    record_delivery_success,
    subscriptions_by_id,
)
from tracker.alerts.channels import DeliveryFailed, Sender
from tracker.alerts.spec import CHANNEL_KINDS, Channel
from tracker.errors import TrackerError

FEED_CHANNEL: Final = "feed"
GONE_CHANNEL: Final = "cancelled: the channel is no longer in the subscription"
GONE_SUBSCRIPTION: Final = "subscription no longer exists"

log = logging.getLogger(__name__)

__all__ = [
    "FEED_CHANNEL",
    "DeliveryReport",
    "DeliveryWorker",
    "RetryPolicy",
    "RetryPolicyError",
]


class RetryPolicyError(TrackerError, ValueError):
    """A retry policy whose numbers cannot describe a backoff."""


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff: 30 s, 60 s, 120 s ... capped at an hour, given up after a day.

    The horizon counts the row's own retries (the backoff its failures have
    scheduled so far), not the time since it was queued: rows queued behind a
    failing one wait their turn without that wait counting against them, so a
    receiver that recovers receives every alert it missed.
    """

    base_s: float = 30
    factor: float = 2
    max_delay_s: float = 3600
    give_up_after_s: float = 86400

    def __post_init__(self) -> None:
        if not self.base_s > 0 or not self.factor >= 1:
            raise RetryPolicyError(
                f"retry base ({self.base_s}) must be > 0 and factor ({self.factor}) >= 1"
            )
        if self.max_delay_s < self.base_s or self.give_up_after_s < 0:
            raise RetryPolicyError(
                f"retry max delay ({self.max_delay_s}) must be >= the base ({self.base_s}) "
                f"and give-up horizon ({self.give_up_after_s}) >= 0"
            )

    def delay_s(self, attempts: int) -> float:
        """The wait after the ``attempts``-th failed attempt (1 -> base)."""
        exponent = max(attempts - 1, 0)
        if self.factor > 1 and exponent >= math.log(self.max_delay_s / self.base_s, self.factor):
            return float(self.max_delay_s)  # before factor**exponent can overflow
        return float(min(self.base_s * self.factor**exponent, self.max_delay_s))

    def waited_s(self, attempts: int) -> float:
        """The backoff ``attempts`` failures schedule in all (the row's own retry time)."""
        return sum(self.delay_s(n) for n in range(1, attempts + 1))

    def next_attempt(self, attempts: int, now: datetime) -> datetime | None:
        """When to try again after ``attempts`` failures, or None to give up."""
        if self.waited_s(attempts) > self.give_up_after_s:
            return None
        return now + timedelta(seconds=self.delay_s(attempts))


@dataclass(frozen=True)
class DeliveryReport:
    """What lanes did: rows delivered, rows scheduled for a retry, rows dead-lettered."""

    delivered: int = 0
    retried: int = 0
    dead: int = 0

    def __add__(self, other: DeliveryReport) -> DeliveryReport:
        return DeliveryReport(
            self.delivered + other.delivered, self.retried + other.retried, self.dead + other.dead
        )


@dataclass(frozen=True)
class _Target:
    """Where one claimed row goes: a sender and its channel, or why it cannot go anywhere."""

    sender: Sender | None
    channel: Channel | None
    error: str | None = None


class DeliveryWorker:
    """Drains the outbox through ``senders`` (keyed "webhook", "apprise", "feed").

    Any number of workers, in any number of processes, may share one
    database: claims are row leases. ``lanes`` is how many channels are sent
    to at once (pool threads); a lane's row is claimed only when a thread is
    free to send it.
    """

    def __init__(
        self,
        database: Database,
        senders: Mapping[str, Sender],
        clock: Callable[[], datetime],
        policy: RetryPolicy | None = None,
        lease_s: float = 60,
        batch: int = 50,
        lanes: int = 16,
    ) -> None:
        if lease_s <= 0 or batch < 1 or lanes < 1:
            raise ValueError(
                f"lease_s ({lease_s}) must be > 0, batch ({batch}) and lanes ({lanes}) >= 1"
            )
        self.database = database
        self.senders = dict(senders)
        self.clock = clock
        self.policy = policy or RetryPolicy()
        self.lease_s = lease_s
        self.batch = batch
        self._pool = ThreadPoolExecutor(lanes, thread_name_prefix="alert-lane")
        self._lanes = lanes
        self._lock = threading.Lock()
        self._running: dict[tuple[int, str], Future[DeliveryReport]] = {}
        self._done = DeliveryReport()

    def run_once(self) -> DeliveryReport:
        """Send until nothing is due (or ``batch`` rows per lane), lanes side by side; wait."""
        while True:
            started = self._start_lanes()
            with self._lock:
                running = list(self._running.values())
            if not started and not running:
                break
            wait(running)
            self._collect()
        return self.dispatch_report()

    def dispatch(self) -> DeliveryReport:
        """Start lanes for the channels with a due row and return at once.

        The report is what lanes finished since the last call: a lane still
        waiting on a slow receiver is counted when it finishes.
        """
        self._collect()
        self._start_lanes()
        return self.dispatch_report()

    def dispatch_report(self) -> DeliveryReport:
        """What finished lanes did since the last report (and forget it)."""
        self._collect()
        with self._lock:
            report, self._done = self._done, DeliveryReport()
        return report

    def close(self) -> None:
        """Stop taking lanes; wait for the rows being sent (each bounded by its timeout)."""
        self._pool.shutdown(wait=True)

    def _start_lanes(self) -> int:
        with self._lock:
            free = self._lanes - len(self._running)
        if free <= 0:
            return 0
        claimed, targets = self._claim(self.clock(), free)
        with self._lock:
            for delivery in claimed:
                lane = (delivery.subscription_id, delivery.channel)
                self._running[lane] = self._pool.submit(self._lane, delivery, targets[delivery.id])
        return len(claimed)

    def _collect(self) -> None:
        with self._lock:
            finished = [lane for lane, future in self._running.items() if future.done()]
            for lane in finished:
                self._done = self._done + self._running.pop(lane).result()

    def _lane(self, delivery: Delivery, target: _Target) -> DeliveryReport:
        """Send a lane's rows in order, while they succeed and are due (``batch`` at most)."""
        report = DeliveryReport()
        lane = (delivery.subscription_id, delivery.channel)
        for _ in range(self.batch):
            outcome = self._deliver(delivery, target)
            report = report + DeliveryReport(
                outcome == "delivered", outcome == "retried", outcome == "dead"
            )
            if outcome != "delivered":
                break
            claimed, targets = self._claim(self.clock(), 1, lane)
            if not claimed:
                break
            delivery, target = claimed[0], targets[claimed[0].id]
        return report

    def _claim(
        self, now: datetime, limit: int, lane: tuple[int, str] | None = None
    ) -> tuple[list[Delivery], dict[int, _Target]]:
        with self.database.session() as session:
            claimed = claim_due_deliveries(session, now, limit, self.lease_s, lane=lane)
            if not claimed:
                return [], {}
            by_id = subscriptions_by_id(session, [d.subscription_id for d in claimed])
        return claimed, {d.id: self._target(d, by_id.get(d.subscription_id)) for d in claimed}

    def _target(self, delivery: Delivery, subscription: Subscription | None) -> _Target:
        if subscription is None:
            return _Target(None, None, GONE_SUBSCRIPTION)
        kind = delivery.channel.partition(":")[0]
        channel: Channel | None = None
        if kind != FEED_CHANNEL:
            channel = _configured_channel(subscription, delivery.channel)
            if channel is None:
                return _Target(None, None, GONE_CHANNEL)
        sender = self.senders.get(kind)
        if sender is None:
            return _Target(None, channel, f"no sender is configured for {kind} channels")
        return _Target(sender, channel)

    def _deliver(self, delivery: Delivery, target: _Target) -> str:
        if target.sender is None:
            return self._record_failure(delivery, target.error or GONE_CHANNEL, permanent=True)
        try:
            target.sender.send(delivery, target.channel)
        except DeliveryFailed as failure:
            return self._record_failure(delivery, failure.message, permanent=failure.permanent)
        except Exception as exc:  # a sender's own bug must not stop the other channels
            log.exception("alert sender %s failed unexpectedly", type(target.sender).__name__)
            return self._record_failure(delivery, f"internal error ({type(exc).__name__})", False)
        with self.database.session() as session:
            record_delivery_success(session, delivery.id, self.clock())
        return "delivered"

    def _record_failure(self, delivery: Delivery, message: str, permanent: bool) -> str:
        now = self.clock()
        retry_at = None
        if not permanent:
            retry_at = self.policy.next_attempt(delivery.attempts, now)
            if retry_at is None:
                message = f"{message} (gave up after {delivery.attempts} attempts)"
        with self.database.session() as session:
            record_delivery_failure(session, delivery.id, message, retry_at=retry_at)
        if retry_at is not None:
            return "retried"
        log.warning(
            json.dumps(
                {
                    "event": "alert_dead_letter",
                    "delivery": delivery.id,
                    "subscription": delivery.subscription_id,
                    "sequence": delivery.sequence,
                    "channel": delivery.channel,
                    "attempts": delivery.attempts,
                    "error": message,
                },
                sort_keys=True,
            )
        )
        return "dead"


def _configured_channel(subscription: Subscription, key: str) -> Channel | None:
    """The subscription's channel whose identity is ``key`` (``storage.channel_key``), if listed.

    Never a channel by position: after a replace, a row queued for a channel
    the subscription no longer lists matches nothing and is not sent.
    """
    for stored in subscription.channels:
        kind, url, secret = stored.get("type"), stored.get("url"), stored.get("secret")
        if kind not in CHANNEL_KINDS or not isinstance(url, str):
            continue
        if channel_key(str(kind), url) != key:
            continue
        if kind == "webhook":
            return Channel("webhook", url, secret if isinstance(secret, str) else None)
        return Channel("apprise", url)
    return None
