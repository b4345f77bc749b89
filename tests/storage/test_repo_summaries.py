"""``repo_summaries`` on SQLite and PostgreSQL: kept current by every write, read by pages.

Each test writes through storage's own functions (record, renumber, force-push,
advisories, untrack) and compares what the index and a model page read with
what a full recomputation from the rows gives, so a write that forgets to mark
its repo fails here.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import select, text

from storage import Database, open_database, put_advisory, record_revision, untrack
from storage.history import mark_missing_revisions, place_on_main
from storage.models import RepoSummaryRow
from storage.publishing import family_siblings, model_page, model_summaries
from storage.records import Advisory, Revision, Severity, Snapshot
from storage.repos import repo_row
from storage.summaries import model_badge
from storage.summary_upkeep import family_and_total, refresh_all_summaries
from tests.storage.builders import BASE_DATE

START = datetime(2024, 6, 1, tzinfo=UTC)


def sha(repo_id: str, n: int) -> str:
    return hashlib.sha1(f"{repo_id}@{n}".encode()).hexdigest()


def plan(family: str, total: int) -> dict[str, Any]:
    return {"schema_version": "1.0", "model": {"family": family}, "parameters": {"total": total}}


def record(
    database: Database, repo_id: str, n: int, stored: dict[str, Any] | None, parent: int | None
) -> None:
    parents = () if parent is None else (sha(repo_id, parent),)
    revision = Revision(repo_id, sha(repo_id, n), parents, START + timedelta(hours=n), f"c{n}")
    with database.session() as session:
        record_revision(session, Snapshot(revision, ()), [], stored, processed_at=START)  # type: ignore[arg-type]


def advisory(repo_id: str, n: int) -> Advisory:
    at = START + timedelta(days=n)
    return Advisory(
        id=f"NAT-{n}",
        repo_id=repo_id,
        old_sha=sha(repo_id, 0),
        new_sha=sha(repo_id, 1),
        published=at,
        modified=at,
        withdrawn=None,
        summary="s",
        severity=Severity.LOW,
        osv={"id": f"NAT-{n}"},
    )


def rows(database: Database) -> dict[int, tuple[object, ...]]:
    with database.read_session() as session:
        return {
            r.repo_pk: (r.latest_revision_pk, r.advisories, r.family, r.total_parameters)
            for r in session.scalars(select(RepoSummaryRow))
        }


def recomputed(database: Database) -> dict[int, tuple[object, ...]]:
    """What a recomputation from the rows gives, in a transaction rolled back after."""
    with database.session() as session:
        session.execute(text("DELETE FROM repo_summaries"))
        refresh_all_summaries(session)
        found = {
            r.repo_pk: (r.latest_revision_pk, r.advisories, r.family, r.total_parameters)
            for r in session.scalars(select(RepoSummaryRow))
        }
        session.rollback()
    return found


def test_every_write_keeps_the_summary_equal_to_a_recomputation(database: Database) -> None:
    record(database, "org/one", 0, plan("llama", 7), None)
    record(database, "org/one", 1, plan("llama", 8), 0)
    assert rows(database) == recomputed(database)
    with database.read_session() as session:
        (one,) = model_summaries(session)
    assert one.latest is not None and one.latest.revision.sha == sha("org/one", 1)
    assert one.plan == plan("llama", 8) and one.advisories == 0

    with database.session() as session:
        put_advisory(session, advisory("org/one", 1))
        put_advisory(session, advisory("org/one", 1))  # the same id: stored once
        put_advisory(session, advisory("org/one", 2))
    assert rows(database) == recomputed(database)
    with database.read_session() as session:
        assert model_summaries(session)[0].advisories == 2

    # a force-push drops revision 1 from main: the index shows revision 0 again
    with database.session() as session:
        mark_missing_revisions(session, "org/one", [sha("org/one", 0)], at=START)
    assert rows(database) == recomputed(database)
    with database.read_session() as session:
        (one,) = model_summaries(session)
        badge = model_badge(session, "org/one")
    assert one.latest is not None and one.latest.revision.sha == sha("org/one", 0)
    assert one.plan == plan("llama", 7) and badge.plan == plan("llama", 7)


def test_a_history_recorded_under_its_head_ends_with_the_head_as_newest(
    database: Database,
) -> None:
    # `track` records the head alone; the backfill then records its parents under it
    record(database, "org/one", 2, plan("llama", 3), 1)
    record(database, "org/one", 0, plan("llama", 1), None)
    record(database, "org/one", 1, plan("llama", 2), 0)
    with database.session() as session:
        place_on_main(session, "org/one", [sha("org/one", n) for n in range(3)])
    assert rows(database) == recomputed(database)
    with database.read_session() as session:
        (one,) = model_summaries(session)
    assert one.latest is not None and one.latest.revision.sha == sha("org/one", 2)
    assert one.plan == plan("llama", 3)


def test_siblings_are_the_family_nearest_in_size_ten_each_side(database: Database) -> None:
    for n in range(30):
        record(database, f"org/llama-{n:02d}", 0, plan("llama", 100 + n), None)
    record(database, "org/mistral", 0, plan("mistral", 110), None)
    record(database, "org/unplanned", 0, None, None)
    with database.session() as session:
        untrack(session, "org/llama-16")
    with database.read_session() as session:
        page = model_page(session, "org/llama-15")
        unplanned = model_page(session, "org/unplanned")
    totals = [o.plan["parameters"]["total"] for o in page.others if o.plan]
    # 10 smaller (105..114), 10 at least as large (116..126, the untracked 116 skipped)
    assert totals == [*range(105, 115), *range(117, 127)]
    assert unplanned.others == ()


def test_the_index_pages_by_repo_id_and_hides_untracked_repos(database: Database) -> None:
    for n in range(7):
        record(database, f"org/m{n}", 0, None, None)
    with database.session() as session:
        untrack(session, "org/m3")
    with database.read_session() as session:
        first = model_summaries(session, limit=3)
        second = model_summaries(session, after=first[-1].repo.repo_id, limit=3)
        rest = model_summaries(session, after=second[-1].repo.repo_id, limit=3)
    assert [[s.repo.repo_id for s in p] for p in (first, second, rest)] == [
        ["org/m0", "org/m1", "org/m2"],
        ["org/m4", "org/m5", "org/m6"],
        [],
    ]


def test_a_purged_repo_takes_its_summary_with_it(database: Database) -> None:
    record(database, "org/one", 0, plan("llama", 7), None)
    record(database, "org/two", 0, plan("llama", 8), None)
    with database.session() as session:
        untrack(session, "org/one", purge=True)
    with database.read_session() as session:
        assert [s.repo.repo_id for s in model_summaries(session)] == ["org/two"]
        assert family_siblings(session, repo_row(session, "org/two").id, "llama", 8) == ()
    assert rows(database) == recomputed(database)


def test_family_and_total_refuse_what_no_plan_of_ours_holds() -> None:
    assert family_and_total(plan("llama", 7)) == ("llama", 7)
    assert family_and_total(None) == (None, None)
    assert family_and_total({"model": {"family": "x" * 129}, "parameters": {"total": True}}) == (
        None,
        None,
    )
    assert family_and_total({"model": [], "parameters": {"total": 2**70}}) == (None, None)


def test_0009_fills_the_summaries_of_rows_stored_before_it(database_url: str) -> None:
    db = open_database(database_url)
    try:
        db.migrate("0006")
        with db.engine.begin() as connection:
            connection.execute(
                text(
                    "INSERT INTO repos (id, repo_id, added_at, status, tracked, options)"
                    " VALUES (7, 'acme/model', :at, 'active', true, '{}')"
                ),
                {"at": BASE_DATE},
            )
            for row_id, position, on_main in ((3, 0, True), (5, 1, True), (9, 2, False)):
                connection.execute(
                    text(
                        "INSERT INTO revisions (id, repo_pk, sha, parents, date, title,"
                        " processed_at, on_main, position)"
                        " VALUES (:id, 7, :sha, '[]', :at, 't', :at, :on_main, :position)"
                    ),
                    {
                        "id": row_id,
                        "sha": str(row_id) * 40,
                        "at": BASE_DATE,
                        "on_main": on_main,
                        "position": position,
                    },
                )
            connection.execute(
                text(
                    "INSERT INTO estimates (revision_pk, plan, schema_version) VALUES (5, :plan, 1)"
                ),
                {"plan": '{"model": {"family": "llama"}, "parameters": {"total": 6738415616}}'},
            )
        db.migrate()
        assert rows(db) == {7: (5, 0, "llama", 6738415616)} == recomputed(db)
    finally:
        db.close()
