"""Draining the alert outbox: claim, send outside any transaction, record, retry with backoff.

One round of ``DeliveryWorker.run_once``:

1. claim due rows in one short transaction and commit it (the claim counts an
   attempt and hides each row for ``lease_s``), so no lock or connection is
   held while a receiver is slow;
2. push each row through the sender of its channel kind, outside any
   transaction;
3. record success or failure in a new transaction: a retryable failure comes
   back after the policy's backoff, a permanent one (or one past the give-up
   horizon) becomes a dead letter.

A worker that dies between 1 and 3 leaves its rows to come back when the
lease runs out; if it died after the POST, the receiver sees the same
``X-Neurarch-Delivery`` id again and can drop it. Storage makes only the
oldest pending row of each (subscription, channel) due, so alerts arrive in
sequence order per channel; the round claims again after each batch until
nothing is due, so a receiver that comes back drains its backlog in one round.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final

from storage import (
    Database,
    Delivery,
    Subscription,
    claim_due_deliveries,
    record_delivery_failure,
    record_delivery_success,
    subscriptions_by_id,
)
from tracker.alerts.channels import DeliveryFailed, Sender
from tracker.alerts.spec import CHANNEL_KINDS, Channel
from tracker.errors import TrackerError

FEED_CHANNEL: Final = "feed"
GONE_CHANNEL: Final = "channel no longer configured"
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

    The horizon counts from when the alert was queued, not from the first
    failure, so an alert is never delivered more than ``give_up_after_s``
    late: past that, news about a revision is stale and goes to the dead
    letters, where it stays visible.
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

    def next_attempt(self, created_at: datetime, attempts: int, now: datetime) -> datetime | None:
        """When to try again after ``attempts`` failures, or None to give up."""
        retry_at = now + timedelta(seconds=self.delay_s(attempts))
        if retry_at > created_at + timedelta(seconds=self.give_up_after_s):
            return None
        return retry_at


@dataclass(frozen=True)
class DeliveryReport:
    """What one round did: rows delivered, rows scheduled for a retry, rows dead-lettered.

    ``deferred`` counts claimed rows left to their lease because the round
    ran out of lease time before reaching them (see ``DeliveryWorker``).
    """

    delivered: int = 0
    retried: int = 0
    dead: int = 0
    deferred: int = 0


@dataclass(frozen=True)
class _Target:
    """Where one claimed row goes: a sender and its channel, or why it cannot go anywhere."""

    sender: Sender | None
    channel: Channel | None
    error: str | None = None


class DeliveryWorker:
    """Drains the outbox through ``senders`` (keyed "webhook", "apprise", "feed").

    Any number of workers, in any number of processes, may share one
    database: claims are row leases. A claimed row is only sent while at least
    half its lease is left, so a slow receiver early in a batch cannot make
    a later row's lease run out mid-send (which would let another worker
    claim and send it too); rows not reached come back when their lease ends.
    """

    def __init__(
        self,
        database: Database,
        senders: Mapping[str, Sender],
        clock: Callable[[], datetime],
        policy: RetryPolicy | None = None,
        lease_s: float = 60,
        batch: int = 50,
    ) -> None:
        if lease_s <= 0 or batch < 1:
            raise ValueError(f"lease_s ({lease_s}) must be > 0 and batch ({batch}) >= 1")
        self.database = database
        self.senders = dict(senders)
        self.clock = clock
        self.policy = policy or RetryPolicy()
        self.lease_s = lease_s
        self.batch = batch

    def run_once(self) -> DeliveryReport:
        """Claim and send until nothing is due or ``batch`` rows were claimed."""
        delivered = retried = dead = deferred = handled = 0
        while handled < self.batch:
            claimed_at = self.clock()
            claimed, targets = self._claim(claimed_at, self.batch - handled)
            if not claimed:
                break
            handled += len(claimed)
            for delivery in claimed:
                if self.clock() - claimed_at > timedelta(seconds=self.lease_s / 2):
                    deferred += 1
                    continue
                outcome = self._deliver(delivery, targets[delivery.id])
                delivered += outcome == "delivered"
                retried += outcome == "retried"
                dead += outcome == "dead"
        return DeliveryReport(delivered=delivered, retried=retried, dead=dead, deferred=deferred)

    def _claim(self, now: datetime, limit: int) -> tuple[list[Delivery], dict[int, _Target]]:
        with self.database.session() as session:
            claimed = claim_due_deliveries(session, now, limit, self.lease_s)
            if not claimed:
                return [], {}
            by_id = subscriptions_by_id(session, [d.subscription_id for d in claimed])
        return claimed, {d.id: self._target(d, by_id.get(d.subscription_id)) for d in claimed}

    def _target(self, delivery: Delivery, subscription: Subscription | None) -> _Target:
        if subscription is None:
            return _Target(None, None, GONE_SUBSCRIPTION)
        kind, _, index = delivery.channel.partition(":")
        channel: Channel | None = None
        if kind != FEED_CHANNEL:
            channel = _configured_channel(subscription, kind, index)
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
            retry_at = self.policy.next_attempt(delivery.created_at, delivery.attempts, now)
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


def _configured_channel(subscription: Subscription, kind: str, index: str) -> Channel | None:
    """``spec.channels[index]`` if it still exists and is still of ``kind``."""
    if kind not in CHANNEL_KINDS or not index.isdigit():
        return None
    position = int(index)
    if position >= len(subscription.channels):
        return None
    stored = subscription.channels[position]
    url, secret = stored.get("url"), stored.get("secret")
    if stored.get("type") != kind or not isinstance(url, str):
        return None
    if kind == "webhook":
        return Channel("webhook", url, secret if isinstance(secret, str) else None)
    return Channel("apprise", url)
