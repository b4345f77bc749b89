"""List subscriptions and their outbox: what each asks for and where its alerts stand.

Without options, one row per active subscription with its delivery counts
(pending, delivered, dead letters). ``--deliveries NAME`` lists that
subscription's outbox rows in sequence order; ``--dead`` keeps only the dead
letters (alerts given up on after the retries), of one subscription or of all.
Secrets never appear, in the table or in ``--json``.
"""

from __future__ import annotations

import argparse
from collections import Counter
from typing import TYPE_CHECKING, Any

from tracker.settings import Settings

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from storage.records import Delivery, Subscription

NAME = "subscriptions"
HELP = "list subscriptions with their delivery counts, or one subscription's deliveries"
_SUMMARY_KEYS = ("summary", "title", "message")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--json``, and ``--deliveries NAME`` / ``--dead`` for the outbox instead of the list."""
    parser.add_argument("--json", action="store_true", help="print JSON (secrets redacted)")
    parser.add_argument(
        "--deliveries",
        metavar="NAME",
        help="list the outbox rows of subscription NAME: sequence, channel, status, attempts",
    )
    parser.add_argument(
        "--dead",
        action="store_true",
        help="only dead letters (given up on after retries); of NAME with --deliveries, else all",
    )


def subscription_json(record: Subscription, counts: Counter[str]) -> dict[str, Any]:
    """A stored subscription as its document, secrets masked, with its delivery counts."""
    from storage import subscription_document
    from storage.records import DeliveryStatus
    from tracker.alerts.spec import MASK, SubscriptionError, SubscriptionSpec

    try:
        document: dict[str, Any] = dict(
            SubscriptionSpec.from_record(record).to_document(redact=True)
        )
    except SubscriptionError as exc:  # stored under rules that have since changed: show raw
        document = {
            **subscription_document(record),
            "channels": [
                {k: (MASK if k == "secret" else v) for k, v in c.items()} for c in record.channels
            ],
            "error": str(exc),
        }
    document["active"] = record.active
    document["created_at"] = record.created_at.isoformat()
    document["deliveries"] = {status.value: counts[status.value] for status in DeliveryStatus}
    return document


def delivery_json(delivery: Delivery, subscription: str) -> dict[str, Any]:
    """One outbox row; the payload is summarised, not dumped."""
    return {
        "subscription": subscription,
        "sequence": delivery.sequence,
        "channel": delivery.channel,
        "status": delivery.status.value,
        "attempts": delivery.attempts,
        "summary": summary(delivery),
        "last_error": delivery.last_error,
        "advisory_id": delivery.advisory_id,
        "repo_id": delivery.repo_id,
        "sha": delivery.sha,
        "created_at": delivery.created_at.isoformat(),
        "next_attempt_at": delivery.next_attempt_at.isoformat(),
        "delivered_at": None
        if delivery.delivered_at is None
        else delivery.delivered_at.isoformat(),
    }


def summary(delivery: Delivery) -> str:
    """The alert's one-line summary from its payload, else its event key."""
    for key in _SUMMARY_KEYS:
        value = delivery.payload.get(key)
        if isinstance(value, str) and value:
            return value
    return delivery.event_key


def _listing(session: Session) -> list[dict[str, Any]]:
    from storage import deliveries, subscriptions

    rows = []
    for record in subscriptions(session):
        counts = Counter(d.status.value for d in deliveries(session, record.id))
        rows.append(subscription_json(record, counts))
    return rows


def _outbox(session: Session, name: str | None, dead: bool) -> list[dict[str, Any]]:
    from storage import dead_letters, deliveries, get_subscription, subscriptions
    from storage.records import DeliveryStatus

    if name is None:
        names = {s.id: s.name for s in subscriptions(session, include_inactive=True)}
        return [delivery_json(d, names[d.subscription_id]) for d in dead_letters(session)]
    record = get_subscription(session, name)
    status = DeliveryStatus.DEAD_LETTER if dead else None
    return [delivery_json(d, record.name) for d in deliveries(session, record.id, status=status)]


def print_listing(rows: list[dict[str, Any]]) -> None:
    if not rows:
        print("no subscriptions; add one with 'neurarch-trace subscribe NAME --repo ORG/NAME'")
        return
    for row in rows:
        seq_len = row["seq_len"] if row["seq_len"] != "max" else "max (model context)"
        counts = row["deliveries"]
        kinds = ", ".join(c["type"] for c in row["channels"]) or "feed only"
        print(row["name"])
        print(f"  repos:      {', '.join(row['repos'])}")
        print(
            f"  workload:   {row['method']}, batch {row['batch']}, seq_len {seq_len}, "
            f"{row['precision']}, lora_rank {row['lora_rank']}, gpus {row['gpus']}"
        )
        print(f"  cards:      {', '.join(row['cards'])}")
        print(
            f"  alert on:   {', '.join(row['alert_on'])} (min severity {row.get('min_severity')})"
        )
        print(f"  channels:   {kinds}")
        print(
            f"  deliveries: {counts['pending']} pending, {counts['delivered']} delivered, "
            f"{counts['dead_letter']} dead letters"
        )


def print_outbox(rows: list[dict[str, Any]]) -> None:
    if not rows:
        print("no deliveries")
        return
    for row in rows:
        print(
            f"{row['subscription']} #{row['sequence']} {row['channel']} {row['status']} "
            f"attempts={row['attempts']}: {row['summary']}"
        )
        if row["last_error"]:
            print(f"    last error: {row['last_error']}")


def run(args: argparse.Namespace, settings: Settings) -> int:
    """Exit 0; reads storage only, secrets masked in every form."""
    from tracker.commands.common import open_storage, print_json, user_errors

    with user_errors(), open_storage(settings) as database, database.read_session() as session:
        outbox = args.deliveries is not None or args.dead
        rows = _outbox(session, args.deliveries, args.dead) if outbox else _listing(session)
    if args.json:
        print_json(rows)
    elif outbox:
        print_outbox(rows)
    else:
        print_listing(rows)
    return 0


__all__ = [
    "HELP",
    "NAME",
    "add_arguments",
    "delivery_json",
    "run",
    "subscription_json",
    "summary",
]
