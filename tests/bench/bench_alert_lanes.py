"""Six hanging receivers beside a healthy one: does the healthy one still hear in time?

Real HTTP receivers on loopback (tests/fixtures/receiver.py), a real SQLite
outbox, the real ``DeliveryWorker`` ticked as the daemon ticks it. Fourteen
alerts are queued, one every ``--every`` seconds, for each subscriber:

- ``alone``: the healthy receiver by itself;
- ``crowded``: the healthy one, six receivers that hang past the sender's
  timeout, and one that flaps (answers 500, 500, 500, then 204, over and over).

Printed: the healthy receiver's alert latency (queued -> delivered) p50 and
max in each run and their ratio (goal: crowded within 2x of alone), and what
the flapping receiver lost (goal: nothing: 14 delivered, 0 dead letters).

    python tests/bench/bench_alert_lanes.py [--every 0.5] [--timeout 2]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from storage import (  # noqa: E402
    Database,
    DeliveryStatus,
    add_subscription,
    deliveries,
    enqueue_delivery,
    open_database,
)

try:
    from storage import channel_key
except ImportError:  # the code before channel identities named a channel by position
    channel_key = None
from tests.fixtures.receiver import Receiver, free_port  # noqa: E402
from tracker.alerts.channels import FeedSender, WebhookSender  # noqa: E402
from tracker.alerts.deliver import DeliveryWorker, RetryPolicy  # noqa: E402
from tracker.alerts.egress import AllowList, Egress  # noqa: E402

SECRET = "whsec_bmV1cmFyY2gtdGVzdC1zZWNyZXQta2V5"
ALERTS = 14
HANGING = 6


def now() -> datetime:
    return datetime.now(UTC)


def run(crowded: bool, every_s: float, timeout_s: float) -> dict[str, object]:
    healthy = Receiver(free_port(), SECRET).start()
    flapping = Receiver(free_port(), SECRET, flap=(500, 500, 500, 204)).start()
    hanging = [Receiver(free_port(), SECRET, delay_s=60).start() for _ in range(HANGING)]
    receivers = [healthy, *([flapping, *hanging] if crowded else [])]
    with tempfile.TemporaryDirectory() as scratch:
        database = open_database(f"sqlite:///{scratch}/bench.db")
        database.migrate()
        subscriptions = [subscribe(database, f"s{n}", r.url) for n, r in enumerate(receivers)]
        policy = RetryPolicy(base_s=0.2, max_delay_s=1.0, give_up_after_s=5.0)
        egress = Egress(AllowList.parse(["127.0.0.1"]))
        import requests

        with requests.Session() as http:
            sender = WebhookSender(http, now, timeout_s=timeout_s, egress=egress)
            worker = DeliveryWorker(
                database, {"webhook": sender, "feed": FeedSender()}, now, policy
            )
            tick = getattr(worker, "dispatch", worker.run_once)  # before lanes: run_once
            queue_and_tick(database, subscriptions, tick, every_s)
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and pending(database, subscriptions[:2]):
                tick()
                time.sleep(0.05)
            latencies = latency_s(database, subscriptions[0])
            flap = outcome(database, subscriptions[1]) if crowded else None
            close = getattr(worker, "close", None)
        for receiver in [healthy, flapping, *hanging]:
            receiver.stop()
        if close is not None:
            close()
        database.close()
    return {"latencies": latencies, "flapping": flap}


def subscribe(database: Database, name: str, url: str) -> tuple[int, str]:
    with database.session() as session:
        subscription = add_subscription(
            session,
            name,
            ["org/*"],
            {},
            [{"type": "webhook", "url": url, "secret": SECRET}],
            created_at=now(),
        )
    return subscription.id, url


def label(subscription: tuple[int, str]) -> str:
    """The outbox's name for the channel: its identity now, its position before."""
    return "webhook:0" if channel_key is None else channel_key("webhook", subscription[1])


def queue_and_tick(
    database: Database,
    subscriptions: list[tuple[int, str]],
    tick: Callable[[], object],
    every_s: float,
) -> None:
    """Queue one alert per subscriber every ``every_s`` (its own thread, as revisions arrive)
    while the worker is ticked as the daemon ticks it."""

    def produce() -> None:
        for number in range(1, ALERTS + 1):
            with database.session() as session:
                for subscription in subscriptions:
                    enqueue_delivery(
                        session,
                        subscription[0],
                        label(subscription),
                        f"alert-{number}",
                        {"summary": f"alert {number}"},
                        now=now(),
                    )
            time.sleep(every_s)

    producer = threading.Thread(target=produce)
    producer.start()
    while producer.is_alive():
        tick()
        time.sleep(0.05)
    producer.join()


def pending(database: Database, subscriptions: list[tuple[int, str]]) -> bool:
    with database.read_session() as session:
        return any(
            d.status is DeliveryStatus.PENDING
            for subscription in subscriptions
            for d in deliveries(session, subscription[0])
        )


def latency_s(database: Database, subscription: tuple[int, str]) -> list[float]:
    with database.read_session() as session:
        rows = deliveries(session, subscription[0])
    return [
        (d.delivered_at - d.created_at).total_seconds() if d.delivered_at else float("inf")
        for d in rows
    ]


def outcome(database: Database, subscription: tuple[int, str]) -> dict[str, int]:
    with database.read_session() as session:
        rows = deliveries(session, subscription[0])
    return {status.value: sum(d.status is status for d in rows) for status in DeliveryStatus}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--every", type=float, default=0.5, help="seconds between alerts")
    parser.add_argument("--timeout", type=float, default=2.0, help="webhook timeout, seconds")
    args = parser.parse_args()
    alone = run(False, args.every, args.timeout)["latencies"]
    crowded_run = run(True, args.every, args.timeout)
    crowded = crowded_run["latencies"]
    assert isinstance(alone, list) and isinstance(crowded, list)
    p50 = (statistics.median(alone), statistics.median(crowded))
    worst = (max(alone), max(crowded))
    print(f"healthy receiver, {ALERTS} alerts, one every {args.every:g} s")
    print(
        f"{'':10} {'alone':>8} {'crowded':>8} {'ratio':>7}   (crowded: +{HANGING} hanging, +1 flapping)"
    )
    print(f"{'p50 s':10} {p50[0]:8.3f} {p50[1]:8.3f} {p50[1] / p50[0]:7.2f}")
    print(f"{'max s':10} {worst[0]:8.3f} {worst[1]:8.3f} {worst[1] / worst[0]:7.2f}")
    print(f"flapping receiver (500, 500, 500, 204 ...): {crowded_run['flapping']}")


if __name__ == "__main__":
    main()
