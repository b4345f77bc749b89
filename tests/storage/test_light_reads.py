"""The DB-API reader (storage.light_reads) answers exactly what the ORM readers answer.

``history`` and ``diff`` read through it when no daemon answers, so every record it
hands back must equal ``revision_log`` / ``changes_of``'s, on SQLite and PostgreSQL,
for real recorded histories (the demo and corpus repos replayed through the Hub
emulator) and for the values storage repairs or stores specially on the way in.
Where it cannot be sure (no file, another schema, another URL shape) it answers None.
"""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest

from storage import (
    Change,
    Database,
    RepoId,
    RepoNotFound,
    RevisionNotFound,
    Severity,
    changes_of,
    mark_missing_revisions,
    put_blob,
    record_revision,
    revision_log,
)
from storage.light_reads import light_reader
from tests.storage.builders import RECORDED_AT, git_blob_id, revision, snapshot
from tracker.demo import HISTORIES
from tracker.hub.api import connect
from tracker.hub.client import Hub
from tracker.hubsim import HubEmulator, estimator_tensor_shapes
from tracker.reads.documents import SessionReads, diff_from, history_from
from tracker.revision.backfill import backfill
from tracker.settings import HubSettings

CORPUS_REPOS = ("BAAI/bge-large-zh-v1.5", "bigscience/bloom", "IDEA-Research/grounding-dino-tiny")


def replay(database: Database, corpus: Path, repos: tuple[str, ...] | None) -> list[RepoId]:
    """Backfill ``repos`` of ``corpus`` (all of them if None) into ``database``."""
    emulator = HubEmulator(corpus, tensor_shapes=estimator_tensor_shapes)
    url = emulator.start()
    try:
        chosen = repos or tuple(emulator.repo_ids())
        for repo in chosen:
            hub = Hub(connect(HubSettings(url)), max_retries=0)
            backfill(database, hub, repo, clock=lambda: RECORDED_AT)
    finally:
        emulator.stop()
    return [RepoId(repo) for repo in chosen]


def assert_same_reads(database: Database, url: str, repos: list[RepoId]) -> None:
    with light_reader(url) as light, database.read_session() as session:
        assert light is not None
        for repo in repos:
            log = revision_log(session, repo)
            assert log, repo
            assert light.revision_log(repo) == log
            for stored in log:
                sha = stored.revision.sha
                assert light.changes_of(repo, sha) == changes_of(session, repo, sha)
            assert history_from(light, repo) == history_from(SessionReads(session), repo)
            for stored in log:
                parent = next(iter(stored.revision.parents), None)
                if parent is not None and any(s.revision.sha == parent for s in log):
                    ours = diff_from(light, repo, parent, stored.revision.sha, None)
                    orm = diff_from(SessionReads(session), repo, parent, stored.revision.sha, None)
                    assert ours == orm is not None


def test_the_demo_histories_read_the_same_both_ways(database: Database) -> None:
    repos = replay(database, HISTORIES, None)
    assert_same_reads(database, database.engine.url.render_as_string(False), repos)


def test_corpus_histories_read_the_same_both_ways(database: Database, corpus_dir: Path) -> None:
    repos = replay(database, corpus_dir, CORPUS_REPOS)
    assert_same_reads(database, database.engine.url.render_as_string(False), repos)


def test_repaired_and_special_values_read_the_same_both_ways(database: Database) -> None:
    repo = RepoId("org/odd")
    config = b'{"model_type": "llama"}'
    odd = [
        Change("config", "config.json", "modified", 2**70, 1.0, Severity.HIGH, "big\x00int"),
        Change("config", "a\ud800b", "modified", float("nan"), None, Severity.LOW, "nan"),
        Change("card", "README.md", "modified", "text", ["a", {"b": None}], Severity.INFO, "x"),
    ]
    for index in range(3):
        base = revision(repo, index)
        title = "title with \x00 NUL" if index == 1 else base.title
        snap = snapshot(replace(base, title=title), {"config.json": config})
        with database.session() as session:
            put_blob(session, git_blob_id(config), config, at=RECORDED_AT)
            record_revision(session, snap, odd[:index], None, processed_at=RECORDED_AT)
    with database.session() as session:  # the newest falls off main (a force-push)
        kept = [revision(repo, i).sha for i in range(2)]
        mark_missing_revisions(session, repo, kept, at=RECORDED_AT + timedelta(hours=1))
    url = database.engine.url.render_as_string(False)
    assert_same_reads(database, url, [repo])
    with light_reader(url) as light:
        assert light is not None
        log = light.revision_log(repo)
        assert [s.on_main for s in log] == [False, True, True]
        assert log[1].revision.title == "title with \ufffd NUL"
        assert light.changes_of(repo, log[0].revision.sha)[0].old == 2**70


def test_unknown_repo_and_revision_are_the_orm_readers_errors(database: Database) -> None:
    replay(database, HISTORIES, None)
    url = database.engine.url.render_as_string(False)
    with light_reader(url) as light, database.read_session() as session:
        assert light is not None
        for read in (light.revision_log, SessionReads(session).revision_log):
            with pytest.raises(RepoNotFound, match="repo 'no/such' is not tracked; track it"):
                read(RepoId("no/such"))
        repo = RepoId("neurarch-demo/phi-1_5")
        with pytest.raises(RevisionNotFound, match="has no recorded revision 0000"):
            light.changes_of(repo, "0000")


def test_a_database_the_reader_cannot_be_sure_of_is_left_to_the_orm(tmp_path: Path) -> None:
    missing = tmp_path / "missing.db"
    unmigrated = tmp_path / "empty.db"
    sqlite3.connect(unmigrated).close()
    for url in (
        f"sqlite:///{missing}",
        f"sqlite:///{unmigrated}",
        "sqlite://",
        f"sqlite:///{tmp_path}/x.db?mode=ro",
        "mysql://user@host/db",
        "not a url",
        "postgresql+psycopg://postgres@127.0.0.1:1/test",
    ):
        with light_reader(url) as light:
            assert light is None, url
    assert not missing.exists()


def test_a_schema_other_than_the_shipped_head_is_left_to_the_orm(database: Database) -> None:
    url = database.engine.url.render_as_string(False)
    with light_reader(url) as light:
        assert light is not None
    with database.engine.begin() as connection:
        connection.exec_driver_sql("UPDATE alembic_version SET version_num = '0001'")
    with light_reader(url) as light:
        assert light is None


def test_a_driver_error_while_reading_ends_the_block_without_an_answer(
    database: Database,
) -> None:
    url = database.engine.url.render_as_string(False)
    with database.engine.begin() as connection:
        connection.exec_driver_sql("ALTER TABLE repos RENAME TO repos_elsewhere")
    answered = None
    with light_reader(url) as light:
        assert light is not None  # the schema's recorded revision is still the head
        answered = light.revision_log(RepoId("org/name"))
    assert answered is None  # the caller goes on to the ORM path, which reports it
