"""Alerts leave the outbox for real receivers on loopback: signed, in order, once, with backoff.

Every webhook receiver here checks every signature with the standardwebhooks library
and answers 401 when it does not verify, as a subscriber's endpoint would. The
clock is the test's, so backoff and leases are exact values, not sleeps. The
receivers listen on 127.0.0.1, which alerts may reach only because every sender
here is given an allow-list naming it (``LOOPBACK``), as a deployment with an
internal receiver would configure ``[alerts] allow``.
"""

from __future__ import annotations

import base64
import json
import re
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import requests
from standardwebhooks import Webhook, WebhookVerificationError

from storage import (
    Database,
    Delivery,
    DeliveryStatus,
    Subscription,
    add_subscription,
    channel_key,
    dead_letters,
    deliveries,
    enqueue_delivery,
    put_subscription,
    update_subscription,
)
from storage.outbox import CANCELLED
from tests.fixtures.receiver import Receiver, free_port
from tracker.alerts.channels import (
    AppriseSender,
    DeliveryFailed,
    FeedSender,
    Sender,
    WebhookSender,
    delivery_key,
    webhook_body,
)
from tracker.alerts.deliver import DeliveryReport, DeliveryWorker, RetryPolicy
from tracker.alerts.egress import AllowList, Egress
from tracker.alerts.spec import Channel, parse_subscription

ROOT = Path(__file__).resolve().parents[2]
T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
SECRET = "whsec_bmV1cmFyY2gtdGVzdC1zZWNyZXQta2V5"
OTHER_SECRET = "whsec_YW5vdGhlci10ZXN0LXNlY3JldC1rZXkh"
SHA = "59187708e28f74d2a1074eae3e844f9a6d991ebd"
LOOPBACK = Egress(AllowList.parse(["127.0.0.1"]))


class Clock:
    """The test's clock: it moves only when the test moves it."""

    def __init__(self, now: datetime = T0) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def receivers() -> Iterator[list[Receiver]]:
    """Receivers a test starts are stopped when it ends, passed or failed."""
    started: list[Receiver] = []
    yield started
    for receiver in started:
        receiver.stop()


@pytest.fixture
def http() -> Iterator[requests.Session]:
    with requests.Session() as session:
        yield session


def subscribe(database: Database, channels: list[dict[str, Any]]) -> Subscription:
    spec = parse_subscription(
        {"name": "lora-on-t4", "repos": ["org/*"], "cards": ["T4"], "channels": channels}
    )
    with database.session() as session:
        return add_subscription(
            session,
            spec.name,
            spec.repos,
            spec.spec_json(),
            [channel.to_json() for channel in spec.channels],
            created_at=T0,
        )


def alert(number: int) -> dict[str, Any]:
    return {
        "kind": "fit",
        "summary": f"org/model-{number}: LoRA r=16, batch 8 at 512 tokens no longer fits on T4",
        "repo_id": f"org/model-{number}",
        "sha": SHA,
        "advisory_url": f"https://trace.example/vulns/x_NEURARCH-ORG-MODEL-{number}",
    }


def enqueue(
    database: Database, subscription: Subscription, channel: str, count: int, at: datetime = T0
) -> None:
    with database.session() as session:
        for number in range(1, count + 1):
            enqueue_delivery(
                session, subscription.id, channel, f"alert-{number}", alert(number), now=at
            )


def lane_of(subscription: Subscription, index: int = 0) -> str:
    """The outbox's name for the subscription's channel at ``index``: its identity, not its place."""
    channel = subscription.channels[index]
    return channel_key(str(channel["type"]), str(channel["url"]))


def rows(database: Database, subscription: Subscription, channel: str) -> list[Delivery]:
    with database.read_session() as session:
        return [d for d in deliveries(session, subscription.id) if d.channel == channel]


def worker(
    database: Database, clock: Clock, http: requests.Session, **senders: Sender
) -> DeliveryWorker:
    table: dict[str, Sender] = {
        "webhook": WebhookSender(http, clock, timeout_s=5, egress=LOOPBACK),
        "apprise": AppriseSender(LOOPBACK),
        "feed": FeedSender(),
    }
    return DeliveryWorker(database, {**table, **senders}, clock, RetryPolicy())


def test_backoff_doubles_from_30_s_and_caps_at_an_hour() -> None:
    policy = RetryPolicy()
    delays = [(policy.next_attempt(attempts, T0) or T0) - T0 for attempts in (1, 2, 3, 4, 7, 8, 29)]
    assert [d.total_seconds() for d in delays] == [30, 60, 120, 240, 1920, 3600, 3600]
    # the horizon is the row's own backoff: 30 + ... + 1920 s, then hourly, up to 24 h
    assert policy.waited_s(29) == 83010 and policy.waited_s(30) == 86610
    assert policy.next_attempt(30, T0) is None
    # however long the row waited in line before its first attempt
    assert policy.next_attempt(1, T0 + timedelta(days=9)) == T0 + timedelta(days=9, seconds=30)


def test_down_receiver_backs_off_then_gets_every_alert_once_in_order(
    database: Database, clock: Clock, receivers: list[Receiver], http: requests.Session
) -> None:
    receiver = Receiver(free_port(), SECRET, clock)
    subscription = subscribe(database, [{"type": "webhook", "url": receiver.url, "secret": SECRET}])
    enqueue(database, subscription, lane_of(subscription), 5)
    enqueue(database, subscription, "feed", 5)
    deliver = worker(database, clock, http)

    first = deliver.run_once()
    assert first == DeliveryReport(delivered=5, retried=1)  # the feed channel does not wait
    gaps: list[float] = []
    errors: list[str | None] = []
    for _ in range(4):
        head = rows(database, subscription, lane_of(subscription))[0]
        gaps.append((head.next_attempt_at - clock.now).total_seconds())
        errors.append(head.last_error)
        clock.now = head.next_attempt_at
        assert deliver.run_once() == DeliveryReport(retried=1)
    webhook_rows = rows(database, subscription, lane_of(subscription))
    assert gaps == [30, 60, 120, 240]
    assert errors == ["connection refused"] * 4
    assert [r.attempts for r in webhook_rows] == [5, 0, 0, 0, 0]  # the rest wait their turn

    receivers.append(receiver.start())  # up again, on the address the subscription names
    clock.now = webhook_rows[0].next_attempt_at
    assert deliver.run_once() == DeliveryReport(delivered=5)
    assert deliver.run_once() == DeliveryReport()

    stored = rows(database, subscription, lane_of(subscription))
    assert receiver.seen() == [
        (f"{subscription.id}-{r.sequence}-{lane_of(subscription)}", r.sequence) for r in stored
    ]
    assert [s for _, s in receiver.seen()] == sorted(r.sequence for r in stored)
    assert receiver.rejected == 0
    assert {r.status for r in stored} == {DeliveryStatus.DELIVERED}
    assert [r.attempts for r in stored] == [6, 1, 1, 1, 1]
    arrival = receiver.arrivals[0]
    assert arrival.headers["content-type"] == "application/json"
    assert arrival.headers["user-agent"].startswith("neurarch-trace/")
    assert arrival.headers["x-neurarch-event"] == "alert"
    assert arrival.body["delivery_id"] == arrival.headers["webhook-id"]
    assert arrival.body["summary"] == alert(1)["summary"]
    assert arrival.body["subscription"] == subscription.id


def test_receiver_that_rejects_the_signature_dead_letters_at_once(
    database: Database,
    clock: Clock,
    receivers: list[Receiver],
    http: requests.Session,
    caplog: pytest.LogCaptureFixture,
) -> None:
    receiver = Receiver(free_port(), "whsec_YS1kaWZmZXJlbnQtc2VjcmV0LWtleSEh", clock).start()
    receivers.append(receiver)
    subscription = subscribe(database, [{"type": "webhook", "url": receiver.url, "secret": SECRET}])
    enqueue(database, subscription, lane_of(subscription), 2)

    assert worker(database, clock, http).run_once() == DeliveryReport(dead=2)
    with database.read_session() as session:
        dead = dead_letters(session)
    assert [(d.sequence, d.last_error, d.attempts) for d in dead] == [
        (1, "HTTP 401", 1),
        (2, "HTTP 401", 1),
    ]
    assert {d.status for d in dead} == {DeliveryStatus.DEAD_LETTER}
    assert receiver.rejected == 2 and receiver.arrivals == []
    logged = [json.loads(r.getMessage()) for r in caplog.records if r.name.endswith("deliver")]
    assert [(line["event"], line["sequence"], line["error"]) for line in logged] == [
        ("alert_dead_letter", 1, "HTTP 401"),
        ("alert_dead_letter", 2, "HTTP 401"),
    ]


def test_a_day_of_failures_ends_in_the_dead_letters(
    database: Database, clock: Clock, http: requests.Session
) -> None:
    subscription = subscribe(
        database, [{"type": "webhook", "url": f"http://127.0.0.1:{free_port()}/", "secret": SECRET}]
    )
    enqueue(database, subscription, lane_of(subscription), 1)
    deliver = worker(database, clock, http)
    while (report := deliver.run_once()) == DeliveryReport(retried=1):
        clock.now = rows(database, subscription, lane_of(subscription))[0].next_attempt_at
    assert report == DeliveryReport(dead=1)
    [row] = rows(database, subscription, lane_of(subscription))
    # 30 + 60 + ... + 1920 s, then hourly: the 30th attempt is the last one inside 24 h
    assert (clock.now - T0).total_seconds() == 83010
    assert row.attempts == 30
    assert row.status is DeliveryStatus.DEAD_LETTER
    assert row.last_error == "connection refused (gave up after 30 attempts)"


def test_a_flapping_receiver_loses_nothing_to_the_time_its_alerts_waited_in_line(
    database: Database, clock: Clock, receivers: list[Receiver], http: requests.Session
) -> None:
    receiver = Receiver(free_port(), SECRET, clock, flap=(500, 500, 500, 204)).start()
    receivers.append(receiver)
    subscription = subscribe(database, [{"type": "webhook", "url": receiver.url, "secret": SECRET}])
    enqueue(database, subscription, lane_of(subscription), 5)
    policy = RetryPolicy(base_s=10, max_delay_s=40, give_up_after_s=100)
    deliver = DeliveryWorker(
        database,
        {"webhook": WebhookSender(http, clock, timeout_s=5, egress=LOOPBACK)},
        clock,
        policy,
    )
    while pending := [
        r
        for r in rows(database, subscription, lane_of(subscription))
        if r.status.value == "pending"
    ]:
        clock.now = max(clock.now, pending[0].next_attempt_at)  # the lane's head
        deliver.run_once()
        assert clock.now < T0 + timedelta(hours=1)
    stored = rows(database, subscription, lane_of(subscription))
    # each waited up to 280 s behind the ones before it, past the 100 s horizon, and still
    # counts only its own 10 + 20 + 40 s of retries (queue time made 4 of 5 dead letters)
    assert [(r.status, r.attempts) for r in stored] == [(DeliveryStatus.DELIVERED, 4)] * 5
    assert [s for _, s in receiver.seen() if _] == [
        1,
        1,
        1,
        1,
        2,
        2,
        2,
        2,
        3,
        3,
        3,
        3,
        4,
        4,
        4,
        4,
        5,
        5,
        5,
        5,
    ]


class WorkerDied(BaseException):
    """Stands for the process dying (kill -9) in the middle of a round."""


class DiesBeforeSending:
    def send(self, delivery: Delivery, channel: Channel | None) -> None:
        raise WorkerDied


@dataclass
class DiesAfterSending:
    inner: Sender

    def send(self, delivery: Delivery, channel: Channel | None) -> None:
        self.inner.send(delivery, channel)
        raise WorkerDied


def test_claim_of_a_dead_worker_is_retried_after_the_lease_and_delivered_once(
    database: Database, clock: Clock, receivers: list[Receiver], http: requests.Session
) -> None:
    receiver = Receiver(free_port(), SECRET, clock).start()
    receivers.append(receiver)
    subscription = subscribe(database, [{"type": "webhook", "url": receiver.url, "secret": SECRET}])
    enqueue(database, subscription, lane_of(subscription), 1)

    with pytest.raises(WorkerDied):
        worker(database, clock, http, webhook=DiesBeforeSending()).run_once()
    survivor = worker(database, clock, http)
    clock.now = T0 + timedelta(seconds=59)
    assert survivor.run_once() == DeliveryReport()  # the claim was committed: still leased
    clock.now = T0 + timedelta(seconds=60)
    assert survivor.run_once() == DeliveryReport(delivered=1)
    assert survivor.run_once() == DeliveryReport()
    assert receiver.seen() == [(f"{subscription.id}-1-{lane_of(subscription)}", 1)]
    [row] = rows(database, subscription, lane_of(subscription))
    assert (row.status, row.attempts) == (DeliveryStatus.DELIVERED, 2)


def test_crash_after_the_post_resends_under_the_same_delivery_id(
    database: Database, clock: Clock, receivers: list[Receiver], http: requests.Session
) -> None:
    receiver = Receiver(free_port(), SECRET, clock).start()
    receivers.append(receiver)
    subscription = subscribe(database, [{"type": "webhook", "url": receiver.url, "secret": SECRET}])
    enqueue(database, subscription, lane_of(subscription), 1)

    sender = WebhookSender(http, clock, timeout_s=5, egress=LOOPBACK)
    with pytest.raises(WorkerDied):
        worker(database, clock, http, webhook=DiesAfterSending(sender)).run_once()
    clock.now = T0 + timedelta(seconds=61)
    assert worker(database, clock, http).run_once() == DeliveryReport(delivered=1)
    delivery_id = f"{subscription.id}-1-{lane_of(subscription)}"
    assert receiver.seen() == [(delivery_id, 1), (delivery_id, 1)]  # the receiver drops one
    assert receiver.arrivals[0].raw == receiver.arrivals[1].raw  # the same bytes, re-signed


def test_a_queued_alert_never_goes_to_the_channel_that_took_its_place(
    database: Database, clock: Clock, receivers: list[Receiver], http: requests.Session
) -> None:
    old = Receiver(free_port(), SECRET, clock).start()
    kept = Receiver(free_port(), SECRET, clock).start()
    new = Receiver(free_port(), SECRET, clock).start()
    receivers.extend([old, kept, new])
    hook = {"type": "webhook", "secret": SECRET}
    subscription = subscribe(database, [{**hook, "url": old.url}, {**hook, "url": kept.url}])
    enqueue(database, subscription, lane_of(subscription), 2)
    enqueue(database, subscription, lane_of(subscription, 1), 2)
    replacement = parse_subscription(
        {
            "name": subscription.name,
            "repos": ["org/*"],
            "cards": ["T4"],
            # the old channel's place now holds another receiver; the kept one moved
            "channels": [{**hook, "url": new.url}, {**hook, "url": kept.url}],
        }
    )
    with database.session() as session:
        _, added = put_subscription(session, replacement.name, replacement.columns(), now=clock.now)
    assert not added

    assert worker(database, clock, http).run_once() == DeliveryReport(delivered=2)
    assert old.arrivals == [] and new.arrivals == []  # position 0 is not an identity
    assert [s for _, s in kept.seen()] == [3, 4]  # still its channel: its alerts go on
    cancelled = rows(database, subscription, lane_of(subscription))
    assert [(r.status, r.last_error, r.attempts) for r in cancelled] == [
        (DeliveryStatus.DEAD_LETTER, CANCELLED, 0)
    ] * 2


def test_a_row_for_a_channel_edited_away_behind_storage_is_cancelled_not_sent(
    database: Database, clock: Clock, http: requests.Session
) -> None:
    subscription = subscribe(
        database, [{"type": "webhook", "url": "http://127.0.0.1:9/", "secret": SECRET}]
    )
    enqueue(database, subscription, lane_of(subscription), 1)
    with database.session() as session:
        update_subscription(session, subscription.name, ["org/*"], dict(subscription.spec), [])
    assert worker(database, clock, http).run_once() == DeliveryReport(dead=1)
    [row] = rows(database, subscription, lane_of(subscription))
    assert (row.status, row.last_error) == (
        DeliveryStatus.DEAD_LETTER,
        "cancelled: the channel is no longer in the subscription",
    )


def test_a_hanging_receiver_delays_no_other_channel(
    database: Database, receivers: list[Receiver], http: requests.Session
) -> None:
    healthy = Receiver(free_port(), SECRET).start()
    hanging = [Receiver(free_port(), SECRET, delay_s=3.0).start() for _ in range(3)]
    receivers.extend([healthy, *hanging])
    hook = {"type": "webhook", "secret": SECRET}
    subscription = subscribe(database, [{**hook, "url": r.url} for r in [*hanging, healthy]])
    for index in range(4):
        enqueue(database, subscription, lane_of(subscription, index), 1, at=datetime.now(UTC))
    table: dict[str, Sender] = {
        "webhook": WebhookSender(http, lambda: datetime.now(UTC), timeout_s=2, egress=LOOPBACK)
    }
    deliver = DeliveryWorker(database, table, lambda: datetime.now(UTC), RetryPolicy())
    started = time.monotonic()
    deliver.dispatch()
    while not healthy.arrivals and time.monotonic() - started < 5:
        time.sleep(0.01)
    assert len(healthy.arrivals) == 1
    assert time.monotonic() - started < 1.8  # not behind three 2 s timeouts
    assert deliver.run_once() == DeliveryReport(delivered=1, retried=3)
    deliver.close()


def test_apprise_json_url_posts_the_summary_to_a_local_receiver(
    database: Database, clock: Clock, receivers: list[Receiver], http: requests.Session
) -> None:
    receiver = Receiver(free_port()).start()
    receivers.append(receiver)
    url = f"json://127.0.0.1:{receiver.port}/apprise/inbox"
    subscription = subscribe(database, [{"type": "apprise", "url": url}])
    enqueue(database, subscription, lane_of(subscription), 2)

    assert worker(database, clock, http).run_once() == DeliveryReport(delivered=2)
    assert [a.path for a in receiver.arrivals] == ["/apprise/inbox"] * 2
    first = receiver.arrivals[0].body
    assert first["title"] == alert(1)["summary"]
    assert first["message"] == f"{alert(1)['summary']}\n\n{alert(1)['advisory_url']}"
    assert alert(2)["summary"] in receiver.arrivals[1].body["message"]


def test_apprise_failures_retry_and_unknown_urls_dead_letter(
    database: Database, clock: Clock, http: requests.Session
) -> None:
    subscription = subscribe(
        database,
        [
            {"type": "apprise", "url": f"json://127.0.0.1:{free_port()}/down"},
            {"type": "apprise", "url": "no-such-service://token@host"},
        ],
    )
    enqueue(database, subscription, lane_of(subscription), 1)
    enqueue(database, subscription, lane_of(subscription, 1), 1)
    assert worker(database, clock, http).run_once() == DeliveryReport(retried=1, dead=1)
    [down] = rows(database, subscription, lane_of(subscription))
    [unknown] = rows(database, subscription, lane_of(subscription, 1))
    assert (down.last_error, down.next_attempt_at) == (
        "the notification service did not accept it",
        T0 + timedelta(seconds=30),
    )
    assert unknown.last_error == "apprise does not understand this notification URL"


@pytest.mark.parametrize(
    ("status", "permanent"),
    [(503, False), (500, False), (429, False), (408, False), (404, True), (410, True), (400, True)],
)
def test_webhook_status_decides_retry_or_dead_letter(
    status: int, permanent: bool, receivers: list[Receiver], http: requests.Session
) -> None:
    receiver = Receiver(free_port(), SECRET, status=status).start()
    receivers.append(receiver)
    sender = WebhookSender(http, lambda: datetime.now(UTC), egress=LOOPBACK)
    with pytest.raises(DeliveryFailed) as failure:
        sender.send(a_delivery(), Channel("webhook", receiver.url, SECRET))
    assert (failure.value.message, failure.value.permanent) == (f"HTTP {status}", permanent)


def test_a_secret_stored_before_standard_webhooks_signs_with_itself_as_the_key(
    receivers: list[Receiver], http: requests.Session
) -> None:
    legacy = "receiver-shared-secret-0123"
    derived = "whsec_" + base64.b64encode(legacy.encode()).decode()
    receiver = Receiver(free_port(), derived).start()  # verifies with standardwebhooks
    receivers.append(receiver)
    WebhookSender(http, lambda: datetime.now(UTC), egress=LOOPBACK).send(
        a_delivery(), Channel("webhook", receiver.url, legacy)
    )
    assert len(receiver.arrivals) == 1 and receiver.rejected == 0


def test_redirects_are_not_followed(receivers: list[Receiver], http: requests.Session) -> None:
    receiver = Receiver(free_port(), SECRET, status=308).start()
    receivers.append(receiver)
    with pytest.raises(DeliveryFailed) as failure:
        WebhookSender(http, lambda: datetime.now(UTC), egress=LOOPBACK).send(
            a_delivery(), Channel("webhook", receiver.url, SECRET)
        )
    assert failure.value.permanent
    assert failure.value.message == "HTTP 308 (redirects are not followed; use the final URL)"
    assert len(receiver.arrivals) == 1


def test_missing_apprise_is_a_permanent_failure_naming_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "apprise", None)  # what an install without the extra sees
    with pytest.raises(DeliveryFailed) as failure:
        AppriseSender(LOOPBACK).send(a_delivery(), Channel("apprise", "json://127.0.0.1:9/"))
    assert failure.value.permanent
    assert (
        failure.value.message == "apprise is not installed: pip install 'neurarch-trace[apprise]'"
    )


def test_slow_receiver_times_out_without_naming_the_url(
    receivers: list[Receiver], http: requests.Session
) -> None:
    receiver = Receiver(free_port(), SECRET, delay_s=1.0).start()
    receivers.append(receiver)
    sender = WebhookSender(http, lambda: datetime.now(UTC), timeout_s=0.2, egress=LOOPBACK)
    with pytest.raises(DeliveryFailed) as failure:
        sender.send(a_delivery(), Channel("webhook", receiver.url + "?token=s3cr3t", SECRET))
    assert (failure.value.message, failure.value.permanent) == ("timed out after 0.2 s", False)


def a_delivery() -> Delivery:
    return Delivery(
        id=1,
        subscription_id=7,
        sequence=3,
        channel="webhook:3f2a5c0e9b1d4a67",
        event_key="alert-1",
        payload=alert(1),
        status=DeliveryStatus.PENDING,
        attempts=1,
        next_attempt_at=T0,
        created_at=T0,
    )


def test_a_delivered_alert_verifies_with_standard_webhooks_and_nothing_else_does(
    receivers: list[Receiver], http: requests.Session
) -> None:
    receiver = Receiver(free_port(), SECRET).start()
    receivers.append(receiver)
    delivery = a_delivery()
    WebhookSender(http, lambda: datetime.now(UTC), egress=LOOPBACK).send(
        delivery, Channel("webhook", receiver.url, SECRET)
    )
    [arrival] = receiver.arrivals
    headers, raw = arrival.headers, arrival.raw
    assert Webhook(SECRET).verify(raw, headers) == webhook_body(delivery)
    assert headers["webhook-id"] == delivery_key(delivery)
    assert re.fullmatch(r"v1,[A-Za-z0-9+/]{43}=", headers["webhook-signature"])
    stale = str(int(time.time()) - 301)
    later = str(int(headers["webhook-timestamp"]) + 1)  # signed too: no replay under a new one
    refused = [
        (SECRET, raw.replace(b"T4", b"T5"), headers),
        (OTHER_SECRET, raw, headers),
        (SECRET, raw, {**headers, "webhook-timestamp": stale}),
        (SECRET, raw, {**headers, "webhook-timestamp": later}),
        (SECRET, raw, {**headers, "webhook-id": "another-delivery"}),
        (SECRET, raw, {k: v for k, v in headers.items() if k != "webhook-signature"}),
    ]
    for secret, body, shown in refused:
        with pytest.raises(WebhookVerificationError):
            Webhook(secret).verify(body, shown)


def readme_verifier() -> Callable[..., Any]:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Alerts: verifying webhook signatures", 1)[1].split("\n## ", 1)[0]
    [code] = re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)
    namespace: dict[str, Any] = {}
    exec(compile(code, "README.md", "exec"), namespace)
    verifier: Callable[..., Any] = namespace["verify_signature"]
    return verifier


def test_readme_verification_snippet_accepts_what_the_sender_signed(
    receivers: list[Receiver], http: requests.Session
) -> None:
    receiver = Receiver(free_port(), SECRET).start()
    receivers.append(receiver)
    WebhookSender(http, lambda: datetime.now(UTC), egress=LOOPBACK).send(
        a_delivery(), Channel("webhook", receiver.url, SECRET)
    )
    [arrival] = receiver.arrivals
    verify_signature = readme_verifier()
    assert verify_signature(SECRET, arrival.headers, arrival.raw) == arrival.body
    assert verify_signature(SECRET, arrival.headers, arrival.raw + b" ") is None
    assert verify_signature(OTHER_SECRET, arrival.headers, arrival.raw) is None
    stale = {**arrival.headers, "webhook-timestamp": str(int(time.time()) - 301)}
    assert verify_signature(SECRET, stale, arrival.raw) is None
