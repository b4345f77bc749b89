"""Recording revisions: idempotent on (repo, sha), all-or-nothing, read back exactly."""

from __future__ import annotations

import json
import threading

import pytest
from sqlalchemy import func, select

from storage import (
    Change,
    Database,
    InvalidRecord,
    RevisionNotFound,
    Severity,
    changes_between,
    changes_of,
    ensure_repo,
    latest_revision,
    mark_missing_revisions,
    plan_at,
    put_blob,
    record_revision,
    revision_log,
    revisions,
    snapshot_at,
    tracked_repos,
    untrack,
)
from storage.models import ChangeRow, RevisionFileRow, RevisionRow
from tests.storage.builders import RECORDED_AT, eos_change, git_blob_id, revision, snapshot

REPO = "meta-llama/Llama-3.2-1B"
CONFIG = json.dumps({"model_type": "llama", "hidden_size": 2048}).encode()


def _record(db: Database, index: int, texts: dict[str, bytes] | None = None) -> bool:
    texts = texts if texts is not None else {"config.json": CONFIG}
    snap = snapshot(revision(REPO, index), texts)
    with db.session() as session:
        for data in texts.values():
            put_blob(session, git_blob_id(data), data, at=RECORDED_AT)
        return record_revision(
            session, snap, [eos_change(128001, 128009)], {"params": index}, processed_at=RECORDED_AT
        )


def _count(db: Database, model: type) -> int:
    with db.read_session() as session:
        return int(session.scalar(select(func.count()).select_from(model)) or 0)


def test_recording_a_revision_twice_writes_it_once(database: Database) -> None:
    assert _record(database, 0) is True
    assert _record(database, 0) is False
    assert _count(database, RevisionRow) == 1
    assert _count(database, ChangeRow) == 1
    assert _count(database, RevisionFileRow) == 2


def test_snapshot_reads_back_exactly_as_recorded(database: Database) -> None:
    snap = snapshot(
        revision(REPO, 3), {"config.json": CONFIG, "tokenizer_config.json": b"{}"}, weights=4
    )
    changes = [eos_change(1, 2), eos_change(2, 3)]
    with database.session() as session:
        for path, key in snap.texts.items():
            put_blob(session, key, CONFIG if path == "config.json" else b"{}", at=RECORDED_AT)
        record_revision(session, snap, changes, {"b": 1, "a": [1, 2]}, processed_at=RECORDED_AT)
    with database.read_session() as session:
        assert snapshot_at(session, REPO, snap.revision.sha) == snap
        assert changes_of(session, REPO, snap.revision.sha) == changes
        assert list(plan_at(session, REPO, snap.revision.sha) or {}) == ["b", "a"]


def test_exception_inside_the_block_leaves_nothing_half_written(database: Database) -> None:
    with pytest.raises(RuntimeError, match="crash"), database.session() as session:
        snap = snapshot(revision(REPO, 0), {"config.json": CONFIG})
        put_blob(session, snap.texts["config.json"], CONFIG, at=RECORDED_AT)
        record_revision(session, snap, [eos_change(1, 2)], None, processed_at=RECORDED_AT)
        raise RuntimeError("crash after writing, before commit")
    for model in (RevisionRow, RevisionFileRow, ChangeRow):
        assert _count(database, model) == 0
    with database.read_session() as session:
        assert tracked_repos(session) == []


HOSTILE = [
    "</script><script>alert('x')</script>",
    "quote \" and ' and back\\slash",
    "emoji 🦙 and RTL ‮ override",
    "{{ raise_exception('jinja') }}",
    "line\nbreak\ttab",
]


def test_hostile_strings_round_trip_through_json_and_text(database: Database) -> None:
    change = Change(
        artifact="chat_template",
        path="tokenizer_config.json",
        kind="modified",
        old={"template": HOSTILE[0], HOSTILE[1]: HOSTILE},
        new=HOSTILE,
        severity=Severity.MODERATE,
        message=" | ".join(HOSTILE),
    )
    snap = snapshot(revision(REPO, 0), {}, card={"license": HOSTILE[2], "tags": HOSTILE})
    with database.session() as session:
        record_revision(session, snap, [change], {"note": HOSTILE[3]}, processed_at=RECORDED_AT)
    with database.read_session() as session:
        assert changes_of(session, REPO, snap.revision.sha) == [change]
        assert snapshot_at(session, REPO, snap.revision.sha).card == snap.card


def test_nul_in_a_change_is_stored_as_replacement_character_on_every_backend(
    database: Database,
) -> None:
    quoted = Change(
        "chat_template",
        "a\x00.jinja",
        "modified",
        {"k\x00": ["\x00"]},
        "a\x00b",
        Severity.LOW,
        "n\x00l",
    )
    snap = snapshot(revision(REPO, 0), {})
    with database.session() as session:
        record_revision(session, snap, [quoted], None, processed_at=RECORDED_AT)
    with database.read_session() as session:
        (stored,) = changes_of(session, REPO, snap.revision.sha)
    assert (stored.path, stored.old, stored.new, stored.message) == (
        "a\ufffd.jinja",
        {"k\ufffd": ["\ufffd"]},
        "a\ufffdb",
        "n\ufffdl",
    )


def test_nul_character_in_a_snapshot_is_recorded_as_the_replacement_character(
    database: Database,
) -> None:
    bad = snapshot(revision(REPO, 0), {}, card={"license": "a\x00b"})
    with database.session() as session:
        assert record_revision(session, bad, [], None, processed_at=RECORDED_AT)
    with database.read_session() as session:
        assert snapshot_at(session, REPO, bad.revision.sha).card["license"] == "a\ufffdb"
        [finding] = changes_of(session, REPO, bad.revision.sha)
    assert (finding.artifact, finding.kind) == ("repo", "unstorable_text")
    assert finding.new == {"repaired": ["model card"], "dropped_paths": []}


def test_text_missing_from_the_blob_store_is_refused(database: Database) -> None:
    snap = snapshot(revision(REPO, 0), {"config.json": CONFIG})
    with pytest.raises(InvalidRecord, match=r"config\.json"), database.session() as session:
        record_revision(session, snap, [], None, processed_at=RECORDED_AT)


def test_revisions_are_listed_newest_first(database: Database) -> None:
    for index in (1, 0, 2):
        _record(database, index)
    with database.read_session() as session:
        assert [r.sha for r in revisions(session, REPO)] == [
            revision(REPO, i).sha for i in (2, 1, 0)
        ]
        assert latest_revision(session, REPO) == revision(REPO, 2)


def test_changes_between_lists_each_later_revision_oldest_first(database: Database) -> None:
    for index in range(4):
        _record(database, index)
    with database.read_session() as session:
        steps = changes_between(session, REPO, revision(REPO, 0).sha, revision(REPO, 3).sha)
    assert [rev.sha for rev, _ in steps] == [revision(REPO, i).sha for i in (1, 2, 3)]
    assert all(changes == [eos_change(128001, 128009)] for _, changes in steps)


def test_force_push_marks_lost_revisions_off_main_and_keeps_them(database: Database) -> None:
    for index in range(3):
        _record(database, index)
    kept = [revision(REPO, 0).sha]
    with database.session() as session:
        gone = mark_missing_revisions(session, REPO, kept, at=RECORDED_AT)
    assert gone == [revision(REPO, 2).sha, revision(REPO, 1).sha]
    with database.read_session() as session:
        assert [r.sha for r in revisions(session, REPO)] == kept
        assert len(revisions(session, REPO, include_off_main=True)) == 3
        log = revision_log(session, REPO)
        assert [entry.on_main for entry in log] == [False, False, True]
        assert log[0].off_main_since is not None
        assert snapshot_at(session, REPO, revision(REPO, 2).sha).revision == revision(REPO, 2)
        assert latest_revision(session, REPO) == revision(REPO, 0)


def test_unknown_revision_is_a_named_error(database: Database) -> None:
    with database.session() as session:
        ensure_repo(session, REPO, now=RECORDED_AT)
    with pytest.raises(RevisionNotFound, match=REPO), database.read_session() as session:
        snapshot_at(session, REPO, "0" * 40)


def test_untrack_stops_following_but_keeps_history(database: Database) -> None:
    _record(database, 0)
    with database.session() as session:
        assert untrack(session, REPO) is True
        assert untrack(session, REPO) is False
    with database.read_session() as session:
        assert tracked_repos(session) == []
        assert len(revisions(session, REPO)) == 1


def test_untrack_with_purge_deletes_everything_of_the_repo(database: Database) -> None:
    _record(database, 0)
    with database.session() as session:
        untrack(session, REPO, purge=True)
    for model in (RevisionRow, RevisionFileRow, ChangeRow):
        assert _count(database, model) == 0


def test_two_writers_recording_the_same_new_revision_store_it_once(database: Database) -> None:
    """Two instances that both saw a new head: one records it, the other finds it done."""
    snap = snapshot(revision(REPO, 0), {"config.json": CONFIG})
    results: list[bool] = []
    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def write() -> None:
        try:
            start.wait()
            with database.session() as session:
                put_blob(session, git_blob_id(CONFIG), CONFIG, at=RECORDED_AT)
                results.append(
                    record_revision(
                        session, snap, [eos_change(1, 2)], {"p": 1}, processed_at=RECORDED_AT
                    )
                )
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=write) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert errors == []
    assert sorted(results) == [False, True]
    assert (_count(database, RevisionRow), _count(database, ChangeRow)) == (1, 1)


def test_recording_for_an_untracked_repo_keeps_it_untracked(database: Database) -> None:
    _record(database, 0)
    with database.session() as session:
        untrack(session, REPO)
    _record(database, 1)
    with database.read_session() as session:
        assert tracked_repos(session) == []
        assert len(revisions(session, REPO)) == 2
