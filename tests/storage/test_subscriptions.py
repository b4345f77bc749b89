"""Stored subscriptions (storage.subscription_rows) on SQLite and PostgreSQL: put, replace, read back."""

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
    subscriptions_naming,
)
from storage.records import Severity
from storage.repo_patterns import lookup_keys, names_repo, repo_key

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


def test_a_repo_reads_only_the_subscriptions_whose_patterns_name_it(database: Database) -> None:
    patterns = {
        "exact": ("org/model",),
        "org": ("org/*",),
        "prefix": ("org/mod*",),
        "anywhere": ("*/model",),
        "other-org": ("else/*",),
        "other-repo": ("org/other", "else/model"),
        "near-miss": ("*/models",),
    }
    with database.session() as session:
        for name, repos in patterns.items():
            add_subscription(session, name, repos, {}, [], created_at=NOW)
        assert remove_subscription(session, "prefix")
    with database.read_session() as session:
        named = [s.name for s in subscriptions_naming(session, "org/model")]
        assert [s.name for s in subscriptions_naming(session, "else/model")] == [
            "anywhere",
            "other-org",
            "other-repo",
        ]
        assert subscriptions_naming(session, "solo") == []
    assert named == ["anywhere", "exact", "org"]


def test_replacing_a_subscriptions_patterns_replaces_its_lookup_keys(database: Database) -> None:
    with database.session() as session:
        put_subscription(session, "watch", COLUMNS, now=NOW)
    moved = SubscriptionColumns(("else/model",), {"method": "serve"}, (), Severity.INFO)
    with database.session() as session:
        put_subscription(session, "watch", moved, now=NOW)
    with database.read_session() as session:
        assert subscriptions_naming(session, "org/model") == []
        assert [s.name for s in subscriptions_naming(session, "else/model")] == ["watch"]


@pytest.mark.parametrize(
    ("pattern", "key"),
    [
        ("org/model", "org/model"),
        ("org/*", "org/"),
        ("org/llama-?", "org/"),
        ("*", "*"),
        ("*/model", "*"),
        ("o[rs]g/model", "*"),
        ("org*", "*"),
        ("solo", "solo"),
    ],
)
def test_each_pattern_is_stored_under_the_narrowest_key_a_repo_finds(
    pattern: str, key: str
) -> None:
    assert repo_key(pattern) == key
    named = [
        repo
        for repo in ("org/model", "org/llama-3", "solo", "os/model")
        if names_repo([pattern], repo)
    ]
    assert all(key in lookup_keys(repo) for repo in named)
