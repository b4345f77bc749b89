"""Recording a revision: one read before the writes, its blobs in one insert, no lookups of
what the caller handed in."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from sqlalchemy import event, func, select

from storage import (
    BlobTooLarge,
    Database,
    add_subscription,
    ensure_repo,
    get_blob,
    plan_at,
    poll_state,
    put_advisory,
    put_blobs,
    record_revision,
    repo_id,
    snapshot_at,
    subscriptions_naming,
)
from storage.models import BlobRow
from storage.records import Advisory, Severity
from tests.storage.builders import RECORDED_AT, git_blob_id, revision, snapshot

REPO = repo_id("org/model")
PLAN = {"model": {"family": "llama"}, "parameters": {"total": 1_235_814_400}}


@contextmanager
def statements(database: Database) -> Iterator[list[str]]:
    """The SQL the engine sends inside the block, BEGINs left out."""
    sent: list[str] = []

    def record(*args: object) -> None:
        text = str(args[2])
        if not text.startswith("BEGIN"):
            sent.append(text)

    event.listen(database.engine, "before_cursor_execute", record)
    try:
        yield sent
    finally:
        event.remove(database.engine, "before_cursor_execute", record)


def tracked_pk(database: Database) -> int:
    with database.session() as session:
        ensure_repo(session, REPO, now=RECORDED_AT)
    with database.read_session() as session:
        pk = poll_state(session, REPO).repo_pk
    assert pk is not None
    return pk


def test_a_revision_is_recorded_with_one_read_and_one_blob_insert(database: Database) -> None:
    pk = tracked_pk(database)
    texts = {"config.json": b'{"hidden_size": 2048}', "README.md": b"# model"}
    snap = snapshot(revision(REPO, 0), texts)
    with database.session() as session, statements(database) as sent:
        assert record_revision(
            session,
            snap,
            [],
            PLAN,
            processed_at=RECORDED_AT,
            repo_pk=pk,
            texts={git_blob_id(data): data for data in texts.values()},
        )
        recording = list(sent)
    reads = [s for s in recording if s.lstrip().upper().startswith("SELECT")]
    blob_inserts = [s for s in recording if s.startswith("INSERT INTO blobs")]
    assert (len(reads), len(blob_inserts)) == (1, 1)
    assert not any("FROM repos" in s for s in recording)
    with database.read_session() as session:
        stored = snapshot_at(session, REPO, snap.revision.sha)
        assert stored.texts == snap.texts
        assert stored.manifest == snap.manifest
        assert plan_at(session, REPO, snap.revision.sha) == PLAN
        assert get_blob(session, git_blob_id(texts["README.md"])) == b"# model"
        # two texts, the manifest and the plan
        assert session.scalar(select(func.count()).select_from(BlobRow)) == 4


def test_a_recorded_revision_writes_nothing_the_second_time(database: Database) -> None:
    pk = tracked_pk(database)
    texts = {"config.json": b'{"hidden_size": 2048}'}
    snap = snapshot(revision(REPO, 0), texts)
    given = {git_blob_id(data): data for data in texts.values()}
    for expected in (True, False):
        with database.session() as session:
            recorded = record_revision(
                session, snap, [], PLAN, processed_at=RECORDED_AT, repo_pk=pk, texts=given
            )
        assert recorded is expected
    with database.read_session() as session:
        assert session.scalar(select(func.count()).select_from(BlobRow)) == 3


def test_no_subscription_is_read_when_none_can_name_the_repo(database: Database) -> None:
    pk = tracked_pk(database)
    with database.session() as session:
        add_subscription(session, "elsewhere", ("other/*",), {}, [], created_at=RECORDED_AT)
    texts = {"config.json": b"{}"}
    with database.session() as session:
        record_revision(
            session,
            snapshot(revision(REPO, 0), texts),
            [],
            None,
            processed_at=RECORDED_AT,
            repo_pk=pk,
            texts={git_blob_id(b"{}"): b"{}"},
        )
        with statements(database) as sent:
            assert subscriptions_naming(session, REPO) == []
        assert sent == []
        # one added later in the same transaction is found all the same
        add_subscription(session, "mine", ("org/*",), {}, [], created_at=RECORDED_AT)
        assert [s.name for s in subscriptions_naming(session, REPO)] == ["mine"]


def test_a_subscription_naming_the_repo_is_read_after_recording(database: Database) -> None:
    pk = tracked_pk(database)
    with database.session() as session:
        add_subscription(session, "mine", ("org/model",), {}, [], created_at=RECORDED_AT)
    with database.session() as session:
        record_revision(
            session,
            snapshot(revision(REPO, 0), {"config.json": b"{}"}),
            [],
            None,
            processed_at=RECORDED_AT,
            repo_pk=pk,
            texts={git_blob_id(b"{}"): b"{}"},
        )
        assert [s.name for s in subscriptions_naming(session, REPO)] == ["mine"]


def test_the_advisory_of_a_recorded_revision_takes_the_repo_key_handed_in(
    database: Database,
) -> None:
    pk = tracked_pk(database)
    snap = snapshot(revision(REPO, 0), {"config.json": b"{}"})
    advisory = Advisory(
        id="NAT-2024-0001",
        repo_id=REPO,
        old_sha=None,
        new_sha=snap.revision.sha,
        published=RECORDED_AT,
        modified=RECORDED_AT,
        summary="config changed",
        severity=Severity.MODERATE,
        osv={"id": "NAT-2024-0001"},
    )
    with database.session() as session:
        record_revision(
            session,
            snap,
            [],
            None,
            processed_at=RECORDED_AT,
            repo_pk=pk,
            texts={git_blob_id(b"{}"): b"{}"},
        )
        with statements(database) as sent:
            assert put_advisory(session, advisory)
    assert not any("FROM repos" in s for s in sent)


def test_blobs_are_put_in_one_statement_and_known_ones_kept(database: Database) -> None:
    blobs = {git_blob_id(data): data for data in (b"a" * 500, b"b", json.dumps([1]).encode())}
    with database.session() as session:
        put_blobs(session, dict(list(blobs.items())[:1]), at=RECORDED_AT)
    with database.session() as session, statements(database) as sent:
        put_blobs(session, blobs, at=RECORDED_AT)
    assert len(sent) == 1
    with database.read_session() as session:
        assert {key: get_blob(session, key) for key in blobs} == blobs
        assert session.scalar(select(func.count()).select_from(BlobRow)) == 3


def test_an_oversized_blob_among_several_writes_none_of_them(database: Database) -> None:
    blobs = {git_blob_id(b"small"): b"small", git_blob_id(b"x" * 100): b"x" * 100}
    with pytest.raises(BlobTooLarge), database.session() as session:
        put_blobs(session, blobs, at=RECORDED_AT, limit=50)
    with database.read_session() as session:
        assert session.scalar(select(func.count()).select_from(BlobRow)) == 0
