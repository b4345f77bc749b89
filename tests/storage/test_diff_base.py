"""The diff base of a revision: recorded or not, and what it is compared with, in few queries."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace

from sqlalchemy import event

from storage import Database, diff_base, mark_missing_revisions, put_blob, record_revision
from tests.storage.builders import RECORDED_AT, eos_change, git_blob_id, revision, sha_of, snapshot

REPO = "Qwen/Qwen2.5-0.5B"
CONFIG = json.dumps({"model_type": "qwen2", "hidden_size": 896}).encode()


def _record(db: Database, index: int, plan: dict[str, object] | None) -> None:
    snap = snapshot(revision(REPO, index), {"config.json": CONFIG})
    with db.session() as session:
        put_blob(session, git_blob_id(CONFIG), CONFIG, at=RECORDED_AT)
        record_revision(session, snap, [eos_change(1, 2)], plan, processed_at=RECORDED_AT)  # type: ignore[arg-type]


@contextmanager
def _statements(db: Database) -> Iterator[list[str]]:
    seen: list[str] = []

    def on_execute(*args: object) -> None:
        if str(args[2]).lstrip().upper().startswith("SELECT"):
            seen.append(str(args[2]))

    event.listen(db.engine, "before_cursor_execute", on_execute)
    try:
        yield seen
    finally:
        event.remove(db.engine, "before_cursor_execute", on_execute)


def test_a_recorded_revision_needs_nothing_prepared(database: Database) -> None:
    _record(database, 0, {"params": 0})
    with database.read_session() as session:
        base = diff_base(session, revision(REPO, 0))
    assert base.recorded is True
    assert base.previous is None


def test_the_first_revision_of_a_repo_has_no_base(database: Database) -> None:
    _record(database, 0, None)
    with database.session() as session:
        mark_missing_revisions(
            session, REPO, [], at=RECORDED_AT
        )  # the only one left main: no newest on main
    with database.read_session() as session:
        base = diff_base(session, replace(revision(REPO, 1), parents=()))
    assert (base.recorded, base.previous, base.previous_plan) == (False, None, None)


def test_the_recorded_parent_is_the_base_with_its_plan(database: Database) -> None:
    for index in range(3):
        _record(database, index, {"params": index})
    # Revision 1 is the parent (main's previous commit), though revision 2 is newer.
    child = revision(REPO, 3, parents=(sha_of(f"{REPO}/1"),))
    with database.read_session() as session:
        base = diff_base(session, child)
    assert base.recorded is False
    assert base.previous is not None
    assert base.previous.revision.sha == sha_of(f"{REPO}/1")
    assert base.previous.texts == {"config.json": git_blob_id(CONFIG)}
    assert base.previous_plan == {"params": 1}
    assert base.unrecorded_parent is None


def test_an_unrecorded_parent_is_named_and_nothing_else_stands_in(database: Database) -> None:
    for index in range(2):
        _record(database, index, {"params": index} if index else None)
    # Neither the newest on main nor a recorded second parent is a base: the caller
    # reads the first parent itself, so the diff never depends on what arrived first.
    orphan = revision(REPO, 5, parents=(sha_of("never recorded"), sha_of(f"{REPO}/1")))
    with database.read_session() as session:
        base = diff_base(session, orphan)
    assert (base.recorded, base.previous, base.previous_plan) == (False, None, None)
    assert base.unrecorded_parent == sha_of("never recorded")


def test_a_base_with_its_snapshot_and_plan_is_three_queries(database: Database) -> None:
    _record(database, 0, {"params": 0})
    with database.read_session() as session, _statements(database) as seen:
        base = diff_base(session, revision(REPO, 1))
    assert base.previous is not None
    assert base.previous_plan == {"params": 0}
    # repo row; the revision and its parent with the parent's snapshot row, estimate,
    # manifest and plan; the parent's files
    assert len(seen) == 3, seen
