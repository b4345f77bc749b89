"""Advisories, the webhook inbox and the outbox: nothing twice, nothing out of order."""

from __future__ import annotations

from datetime import timedelta

import pytest

from storage import (
    Advisory,
    Database,
    DeliveryStatus,
    IntegrityConflict,
    Severity,
    add_subscription,
    advisories,
    claim_due_deliveries,
    dead_letters,
    deliveries,
    enqueue_delivery,
    ensure_repo,
    mark_webhook_events_processed,
    pending_webhook_events,
    put_advisory,
    record_delivery_failure,
    record_delivery_success,
    record_revision,
    record_webhook_event,
    remove_subscription,
    subscriptions,
    subscriptions_by_id,
    withdraw_advisories,
)
from storage.publishing import advisories_for, advisory_by_id
from tests.storage.builders import BASE_DATE, RECORDED_AT, revision, snapshot

REPO = "meta-llama/Llama-3.2-1B"
NOW = BASE_DATE


def _advisory(index: int) -> Advisory:
    old, new = revision(REPO, index - 1), revision(REPO, index)
    return Advisory(
        id=f"x_neurarch-{index:04d}",
        repo_id=REPO,
        old_sha=old.sha,
        new_sha=new.sha,
        published=NOW + timedelta(hours=index),
        modified=NOW + timedelta(hours=index),
        summary=f"eos_token_id fix {index}",
        severity=Severity.HIGH if index % 2 else Severity.LOW,
        osv={"schema_version": "1.6.0", "id": f"x_neurarch-{index:04d}", "details": "<b>"},
    )


def test_an_advisory_is_stored_once_and_reads_back_equal(database: Database) -> None:
    with database.session() as session:
        ensure_repo(session, REPO, now=NOW)
        assert put_advisory(session, _advisory(1)) is True
        assert put_advisory(session, _advisory(1)) is False
    with database.read_session() as session:
        assert advisory_by_id(session, "x_neurarch-0001") == _advisory(1)
        assert advisory_by_id(session, "x_neurarch-0002") is None
        by_commit = advisories_for(session, commit=revision(REPO, 1).sha)
        assert by_commit.advisories == (_advisory(1),)
        assert advisories(session) == [_advisory(1)]


def test_advisories_filter_by_severity_newest_first(database: Database) -> None:
    with database.session() as session:
        ensure_repo(session, REPO, now=NOW)
        for index in range(1, 6):
            put_advisory(session, _advisory(index))
    with database.read_session() as session:
        high = advisories(session, repo_id=REPO, min_severity=Severity.HIGH)
        page = advisories(session, limit=2, offset=1)
    assert [a.id for a in high] == ["x_neurarch-0005", "x_neurarch-0003", "x_neurarch-0001"]
    assert [a.id for a in page] == ["x_neurarch-0004", "x_neurarch-0003"]


def test_force_push_withdraws_an_advisory_and_keeps_it(database: Database) -> None:
    gone_at = NOW + timedelta(days=2)
    with database.session() as session:
        ensure_repo(session, REPO, now=NOW)
        put_advisory(session, _advisory(1))
        put_advisory(session, _advisory(2))
        lost = withdraw_advisories(session, REPO, [revision(REPO, 2).sha], gone_at)
        assert withdraw_advisories(session, REPO, [revision(REPO, 2).sha], gone_at) == []
        withdrawn = advisory_by_id(session, "x_neurarch-0002")
    assert withdrawn is not None
    assert lost == ["x_neurarch-0002"]
    assert (withdrawn.withdrawn, withdrawn.modified) == (gone_at, gone_at)
    with database.read_session() as session:
        assert len(advisories(session)) == 2


def test_a_redelivered_webhook_is_stored_once_and_drained_once(database: Database) -> None:
    payload = {"event": {"action": "update", "scope": "repo.content"}, "repo": {"name": REPO}}
    with database.session() as session:
        assert record_webhook_event(session, "delivery-1", payload, NOW, repo_id=REPO)
        assert not record_webhook_event(session, "delivery-1", payload, NOW, repo_id=REPO)
    with database.session() as session:
        pending = pending_webhook_events(session)
        assert [(e.delivery_key, e.payload) for e in pending] == [("delivery-1", payload)]
        mark_webhook_events_processed(session, [e.id for e in pending], NOW)
    with database.session() as session:
        assert pending_webhook_events(session) == []


def _subscription_with_revisions(db: Database, count: int) -> int:
    with db.session() as session:
        for index in range(count):
            record_revision(
                session, snapshot(revision(REPO, index), {}), [], None, processed_at=RECORDED_AT
            )
        sub = add_subscription(
            session,
            "t4-lora",
            ["meta-llama/*"],
            {"workload": {"method": "lora", "batch": 8}, "cards": ["T4"]},
            [{"kind": "webhook", "url": "http://127.0.0.1:9/hook"}],
            created_at=NOW,
            min_severity=Severity.MODERATE,
        )
    return sub.id


def test_subscription_names_are_unique_and_removal_keeps_history(database: Database) -> None:
    _subscription_with_revisions(database, 0)
    with pytest.raises(IntegrityConflict, match="t4-lora"), database.session() as session:
        add_subscription(session, "t4-lora", ["x/*"], {}, [], created_at=NOW)
    with database.session() as session:
        assert remove_subscription(session, "t4-lora") is True
        assert subscriptions(session) == []
        assert [s.name for s in subscriptions(session, include_inactive=True)] == ["t4-lora"]


def test_subscriptions_are_found_by_id_removed_ones_too(database: Database) -> None:
    first = _subscription_with_revisions(database, 0)
    with database.session() as session:
        second = add_subscription(session, "other", ["x/*"], {}, [], created_at=NOW).id
        remove_subscription(session, "t4-lora")
    with database.read_session() as session:
        found = subscriptions_by_id(session, [second, first, first, 9999])
        assert {i: (s.name, s.active) for i, s in found.items()} == {
            first: ("t4-lora", False),
            second: ("other", True),
        }
        assert subscriptions_by_id(session, []) == {}


def test_an_alert_queued_twice_is_delivered_once(database: Database) -> None:
    sub = _subscription_with_revisions(database, 1)
    sha = revision(REPO, 0).sha
    with database.session() as session:
        first = enqueue_delivery(
            session,
            sub,
            "webhook",
            f"{REPO}@{sha}",
            {"fits": False},
            now=NOW,
            repo_id=REPO,
            sha=sha,
        )
        again = enqueue_delivery(session, sub, "webhook", f"{REPO}@{sha}", {"fits": False}, now=NOW)
    assert first is not None and (first.sequence, first.repo_id, first.sha) == (1, REPO, sha)
    assert again is None


def test_deliveries_go_out_in_order_and_a_failing_one_holds_back_the_rest(
    database: Database,
) -> None:
    sub = _subscription_with_revisions(database, 3)
    with database.session() as session:
        for index in range(3):
            enqueue_delivery(session, sub, "webhook", f"alert-{index}", {"n": index}, now=NOW)
    with database.session() as session:
        head = claim_due_deliveries(session, NOW, limit=10, lease_seconds=30)
        assert [d.event_key for d in head] == ["alert-0"]
        record_delivery_failure(
            session, head[0].id, "connection refused", retry_at=NOW + timedelta(minutes=5)
        )
    with database.session() as session:
        assert claim_due_deliveries(session, NOW + timedelta(minutes=1), 10, 30) == []
    sent: list[str] = []
    moment = NOW + timedelta(minutes=5)
    while True:
        with database.session() as session:
            due = claim_due_deliveries(session, moment, 10, 30)
            if not due:
                break
            for delivery in due:
                record_delivery_success(session, delivery.id, moment)
                sent.append(delivery.event_key)
    assert sent == ["alert-0", "alert-1", "alert-2"]
    with database.read_session() as session:
        done = deliveries(session, sub)
    assert [(d.sequence, d.status, d.attempts) for d in done] == [
        (1, DeliveryStatus.DELIVERED, 2),
        (2, DeliveryStatus.DELIVERED, 1),
        (3, DeliveryStatus.DELIVERED, 1),
    ]


def test_a_delivery_given_up_on_is_a_visible_dead_letter(database: Database) -> None:
    sub = _subscription_with_revisions(database, 0)
    with database.session() as session:
        enqueue_delivery(session, sub, "webhook", "alert-0", {}, now=NOW)
        enqueue_delivery(session, sub, "webhook", "alert-1", {}, now=NOW)
    with database.session() as session:
        (head,) = claim_due_deliveries(session, NOW, 10, 30)
        record_delivery_failure(session, head.id, "HTTP 500 for 24 h", retry_at=None)
    with database.session() as session:
        letters = dead_letters(session)
        nxt = claim_due_deliveries(session, NOW, 10, 30)
    assert [(d.event_key, d.last_error) for d in letters] == [("alert-0", "HTTP 500 for 24 h")]
    assert [d.event_key for d in nxt] == ["alert-1"]
