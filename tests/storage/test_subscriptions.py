"""Stored subscriptions (storage.subscriptions) on SQLite and PostgreSQL: put, replace, read back."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from storage import (
    Database,
    IntegrityConflict,
    SubscriptionColumns,
    add_subscription,
    enqueue_delivery,
    get_subscription,
    put_subscription,
    remove_subscription,
    subscription_document,
)
from storage.records import Severity

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
COLUMNS = SubscriptionColumns(
    repo_patterns=("org/*",),
    spec={"method": "lora", "batch": 8, "cards": ["T4"]},
    channels=({"type": "webhook", "url": "https://hooks.example/a", "secret": "s" * 16},),
    min_severity=Severity.MODERATE,
)


def test_put_adds_then_replaces_keeping_the_sequence_counter(database: Database) -> None:
    with database.session() as session:
        added, created = put_subscription(session, "watch", COLUMNS, now=NOW)
        first = enqueue_delivery(session, added.id, "feed", "k1", {}, now=NOW)
    assert created and first is not None and first.sequence == 1
    changed = SubscriptionColumns(("org/model",), {"method": "serve"}, (), Severity.INFO)
    with database.session() as session:
        assert remove_subscription(session, "watch")
        replaced, created = put_subscription(session, "watch", changed, now=NOW + timedelta(days=1))
        second = enqueue_delivery(session, replaced.id, "feed", "k2", {}, now=NOW)
    assert not created and replaced.id == added.id and replaced.active
    assert replaced.created_at == NOW and second is not None and second.sequence == 2
    assert changed.held_by(replaced) and not COLUMNS.held_by(replaced)


def test_held_by_is_false_for_a_removed_subscription(database: Database) -> None:
    with database.session() as session:
        put_subscription(session, "watch", COLUMNS, now=NOW)
        assert COLUMNS.held_by(get_subscription(session, "watch"))
        remove_subscription(session, "watch")
        assert not COLUMNS.held_by(get_subscription(session, "watch"))


def test_the_stored_document_has_the_records_fields(database: Database) -> None:
    with database.session() as session:
        record, _ = put_subscription(session, "watch", COLUMNS, now=NOW)
    assert subscription_document(record) == {
        "name": "watch",
        "repos": ["org/*"],
        "method": "lora",
        "batch": 8,
        "cards": ["T4"],
        "min_severity": "moderate",
        "channels": [{"type": "webhook", "url": "https://hooks.example/a", "secret": "s" * 16}],
    }


def test_adding_a_taken_name_is_a_conflict(database: Database) -> None:
    with database.session() as session:
        put_subscription(session, "watch", COLUMNS, now=NOW)
        with pytest.raises(IntegrityConflict, match="'watch' exists"):
            add_subscription(session, "watch", ("o/m",), {}, (), created_at=NOW)
