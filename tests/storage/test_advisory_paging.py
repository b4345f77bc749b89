"""Paging the advisory log: every advisory exactly once, cursors that round-trip, batch pages."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from storage import Database
from storage.advisory_refs import RefQuery, advisory_refs_for, advisory_refs_for_many
from storage.cursors import InvalidCursor, decode_cursor, encode_cursor
from storage.dumps import advisories_by_id, modified_batches
from storage.publishing import advisories_for, log_version, withdraw_advisory
from storage.records import Advisory
from tests.storage.synthetic_log import bulk_insert, synthetic_advisories


@pytest.fixture
def log(database: Database) -> list[Advisory]:
    built = synthetic_advisories(120, repos=4)
    bulk_insert(database, built)
    return built


def newest_first(advisories: list[Advisory]) -> list[str]:
    ordered = sorted(advisories, key=lambda a: a.id)
    ordered.sort(key=lambda a: a.published, reverse=True)
    return [a.id for a in ordered]


def test_pages_walk_every_advisory_exactly_once_in_order(
    database: Database, log: list[Advisory]
) -> None:
    seen: list[str] = []
    cursor = None
    pages = 0
    with database.read_session() as session:
        while True:
            page = advisories_for(session, cursor=cursor, limit=7)
            seen += [a.id for a in page.advisories]
            pages += 1
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
    assert seen == newest_first(log)
    assert pages == -(-len(log) // 7)


def test_a_cursor_round_trips_and_a_foreign_one_is_refused() -> None:
    moment = datetime(2025, 3, 1, 12, 30, 15, 250, tzinfo=UTC)
    assert decode_cursor(encode_cursor(moment, "x_NEURARCH-1|odd")) == (moment, "x_NEURARCH-1|odd")
    for foreign in ("not-a-cursor", encode_cursor(moment, "a").upper(), "MjAyNXxh"):
        with pytest.raises(InvalidCursor):
            decode_cursor(foreign)


def test_ref_pages_are_the_full_pages_as_ids(database: Database, log: list[Advisory]) -> None:
    repo_id = log[1].repo_id
    with database.read_session() as session:
        cursor: str | None = None
        while True:
            full = advisories_for(session, repo_id=repo_id, cursor=cursor, limit=4)
            refs = advisory_refs_for(session, RefQuery(repo_id, cursor=cursor), limit=4)
            assert [r.id for r in refs.refs] == [a.id for a in full.advisories]
            assert [r.modified for r in refs.refs] == [a.modified for a in full.advisories]
            assert refs.next_cursor == full.next_cursor
            if full.next_cursor is None:
                break
            cursor = full.next_cursor
    walked = [a.id for a in advisories_for_repo(database, repo_id)]
    assert walked == newest_first([a for a in log if a.repo_id == repo_id])


def advisories_for_repo(database: Database, repo_id: str) -> tuple[Advisory, ...]:
    with database.read_session() as session:
        return advisories_for(session, repo_id=repo_id, limit=None).advisories


def test_a_batch_answers_each_query_as_it_would_alone(
    database: Database, log: list[Advisory]
) -> None:
    first = log[0]
    with database.read_session() as session:
        cursor = advisory_refs_for(session, RefQuery(first.repo_id), limit=5).next_cursor
        queries = [
            RefQuery(first.repo_id),
            RefQuery(commit=log[7].new_sha),
            RefQuery("org9/unknown"),
            RefQuery(first.repo_id, commit=first.new_sha),
            RefQuery(first.repo_id, cursor=cursor),
            RefQuery(log[2].repo_id),
            RefQuery(first.repo_id),
            RefQuery(commit="0" * 40),
        ]
        batch = advisory_refs_for_many(session, queries, limit=5)
        alone = [advisory_refs_for(session, query, limit=5) for query in queries]
    assert batch == alone
    assert [len(page.refs) for page in batch] == [5, 1, 0, 1, 5, 5, 5, 0]
    assert batch[0].next_cursor == cursor and batch[4].next_cursor is not None


def test_dump_batches_hold_every_advisory_once_in_their_index_order(
    database: Database, log: list[Advisory]
) -> None:
    with database.read_session() as session:
        by_id = [a for batch in advisories_by_id(session, batch=7) for a in batch]
        by_modified = [row for batch in modified_batches(session, batch=7) for row in batch]
    assert [a.id for a in by_id] == sorted(a.id for a in log)
    assert {a.id: a for a in by_id} == {a.id: a for a in log}
    expected = sorted(((a.modified, a.id) for a in log), key=lambda row: row[1])
    expected.sort(key=lambda row: row[0], reverse=True)
    assert by_modified == expected


def test_newest_k_are_the_k_most_recently_published(
    database: Database, log: list[Advisory]
) -> None:
    with database.read_session() as session:
        page = advisories_for(session, limit=10)
        org = advisories_for(session, org="org1", limit=3)
    assert [a.id for a in page.advisories] == newest_first(log)[:10]
    assert [a.id for a in org.advisories] == newest_first(
        [a for a in log if a.repo_id.startswith("org1/")]
    )[:3]


def test_the_log_version_moves_on_every_insert_and_withdrawal(
    database: Database, log: list[Advisory]
) -> None:
    def version() -> tuple[datetime | None, datetime | None]:
        with database.read_session() as session:
            return log_version(session)

    before = version()
    assert before == (max(a.published for a in log), max(a.modified for a in log))
    bulk_insert(database, synthetic_advisories(121, repos=4)[120:])
    inserted = version()
    assert inserted != before
    with database.session() as session:
        assert withdraw_advisory(session, log[5].id, datetime(2026, 1, 1, tzinfo=UTC))
    assert version() == (inserted[0], datetime(2026, 1, 1, tzinfo=UTC))
