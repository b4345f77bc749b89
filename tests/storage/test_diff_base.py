"""The diff base of a revision: recorded or not, and what it is compared with, in few queries."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace

from sqlalchemy import event

from storage import Database, diff_base, mark_missing_revisions, put_blob, record_revision
from tests.storage.builders import eos_change, git_blob_id, revision, sha_of, snapshot

REPO = "Qwen/Qwen2.5-0.5B"
CONFIG = json.dumps({"model_type": "qwen2", "hidden_size": 896}).encode()


def _record(db: Database, index: int, plan: dict[str, object] | None) -> None:
    snap = snapshot(revision(REPO, index), {"config.json": CONFIG})
    with db.session() as session:
        put_blob(session, git_blob_id(CONFIG), CONFIG)
        record_revision(session, snap, [eos_change(1, 2)], plan)  # type: ignore[arg-type]


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
        mark_missing_revisions(session, REPO, [])  # the only one left main: no newest on main
    with database.read_session() as session:
        base = diff_base(session, replace(revision(REPO, 1), parents=()))
    assert (base.recorded, base.previous, base.previous_plan) == (False, None, None)


def test_the_recorded_parent_is_the_base_with_its_plan(database: Database) -> None:
    for index in range(3):
        _record(database, index, {"params": index})
    # A merge whose first parent is unknown: the recorded second parent (revision 1) wins
    # over the newest on main (revision 2).
    merge = revision(REPO, 3, parents=(sha_of("elsewhere"), sha_of(f"{REPO}/1")))
    with database.read_session() as session:
        base = diff_base(session, merge)
    assert base.recorded is False
    assert base.previous is not None
    assert base.previous.revision.sha == sha_of(f"{REPO}/1")
    assert base.previous.texts == {"config.json": git_blob_id(CONFIG)}
    assert base.previous_plan == {"params": 1}


def test_without_a_recorded_parent_the_newest_on_main_is_the_base(database: Database) -> None:
    for index in range(2):
        _record(database, index, {"params": index} if index else None)
    orphan = revision(REPO, 5, parents=(sha_of("never recorded"),))
    with database.read_session() as session:
        base = diff_base(session, orphan)
    assert base.previous is not None and base.previous.revision.sha == sha_of(f"{REPO}/1")
    assert base.previous_plan == {"params": 1}


def test_a_base_with_its_snapshot_and_plan_is_five_queries(database: Database) -> None:
    _record(database, 0, {"params": 0})
    with database.read_session() as session, _statements(database) as seen:
        base = diff_base(session, revision(REPO, 1))
    assert base.previous is not None
    # repo row, the revision with its parents, files, snapshot extras, estimate
    assert len(seen) == 5, seen
