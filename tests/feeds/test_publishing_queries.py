"""storage.publishing on SQLite and PostgreSQL: idempotent inserts, withdrawals, filters, cursors."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime, timedelta

import feedparser
import httpx
import pytest

import estimator
from feeds import PublishSettings, build_advisory, create_app, osv_document
from feeds.pages import INDEX_PAGE_SIZE
from storage import Database, plan_at, put_advisory, record_revision
from storage.dumps import modified_batches
from storage.publishing import (
    InvalidCursor,
    advisories_for,
    advisory_by_id,
    model_page,
    withdraw_advisory,
)
from storage.records import Advisory, Change, Revision, Severity, Snapshot, StoredRevision
from tests.conftest import REPO_ROOT
from tests.feeds.conftest import ServerThread
from tests.storage.builders import RECORDED_AT

START = datetime(2024, 6, 1, tzinfo=UTC)


def sha(repo_id: str, n: int) -> str:
    return hashlib.sha1(f"{repo_id}@{n}".encode()).hexdigest()


def record(database: Database, repo_id: str, n: int, changes: list[Change]) -> StoredRevision:
    revision = Revision(repo_id, sha(repo_id, n), (), START + timedelta(hours=n), f"commit {n}")
    with database.session() as session:
        record_revision(session, Snapshot(revision, ()), changes, None, processed_at=RECORDED_AT)
    return StoredRevision(revision, START + timedelta(hours=n, minutes=1))


def history(
    database: Database, repo_id: str, artifacts: list[tuple[str, Severity]]
) -> list[Advisory]:
    """A repo whose revision i changes artifacts[i]; the advisories built for it."""
    previous = record(database, repo_id, 0, [])
    built = []
    for n, (artifact, severity) in enumerate(artifacts, start=1):
        change = Change(artifact, "config.json", "modified", n - 1, n, severity, f"{artifact} {n}")
        current = record(database, repo_id, n, [change])
        advisory = build_advisory(repo_id, previous, current, [change], None)
        assert advisory is not None
        built.append(advisory)
        previous = current
    return built


def test_inserting_an_advisory_twice_stores_it_once(database: Database) -> None:
    (advisory,) = history(database, "org/one", [("config", Severity.HIGH)])
    with database.session() as session:
        assert put_advisory(session, advisory) is True
        assert put_advisory(session, advisory) is False
    with database.read_session() as session:
        assert advisories_for(session).advisories == (advisory,)
        assert advisory_by_id(session, advisory.id) == advisory
        assert advisory_by_id(session, advisory.id.lower()) is None


def test_withdrawal_keeps_the_advisory_and_moves_it_to_the_top_of_the_index(
    database: Database,
) -> None:
    first, second = history(
        database, "org/one", [("config", Severity.HIGH), ("tokenizer", Severity.MODERATE)]
    )
    at = START + timedelta(days=30)
    with database.session() as session:
        put_advisory(session, first)
        put_advisory(session, second)
        assert withdraw_advisory(session, first.id, at) is True
        assert withdraw_advisory(session, first.id, at + timedelta(days=1)) is False
    with database.read_session() as session:
        stored = advisory_by_id(session, first.id)
        index = [row for batch in modified_batches(session) for row in batch]
    assert stored is not None and stored.withdrawn == at
    assert osv_document(stored)["withdrawn"] == "2024-07-01T00:00:00Z"
    assert index[0] == (at, first.id) and index[1][1] == second.id


def test_cursor_pages_cover_every_advisory_once_in_order(database: Database) -> None:
    built = history(database, "org/one", [("config", Severity.HIGH)] * 7)
    with database.session() as session:
        for advisory in built:
            put_advisory(session, advisory)
    seen: list[str] = []
    cursor = None
    with database.read_session() as session:
        while True:
            page = advisories_for(session, cursor=cursor, limit=3)
            seen += [a.id for a in page.advisories]
            cursor = page.next_cursor
            if cursor is None:
                break
        with pytest.raises(InvalidCursor, match="invalid cursor"):
            advisories_for(session, cursor="not-a-cursor")
    newest_first = sorted(built, key=lambda a: a.published, reverse=True)
    assert seen == [a.id for a in newest_first]


def test_filters_by_org_artifact_severity_and_commit(database: Database) -> None:
    one = history(
        database, "org/one", [("config", Severity.HIGH), ("tokenizer", Severity.MODERATE)]
    )
    other = history(database, "else/two", [("chat_template", Severity.LOW)])
    with database.session() as session:
        for advisory in one + other:
            put_advisory(session, advisory)
    with database.read_session() as session:

        def ids(**kw: object) -> set[str]:
            return {a.id for a in advisories_for(session, **kw).advisories}  # type: ignore[arg-type]

        assert ids(org="org") == {a.id for a in one}
        assert ids(org="els") == set()
        assert ids(artifact="tokenizer") == {one[1].id}
        assert ids(min_severity=Severity.MODERATE) == {one[0].id, one[1].id}
        assert ids(commit=one[0].new_sha) == {one[0].id}
        assert ids(repo_id="else/two") == {other[0].id}
        page = model_page(session, "org/one")
    assert [e.advisory_id for e in page.history] == [one[1].id, one[0].id, None]
    assert page.history[0].changes[0].artifact == "tokenizer"


def test_a_withdrawn_advisory_is_served_withdrawn_everywhere(database: Database) -> None:
    first, second = history(
        database, "org/one", [("config", Severity.HIGH), ("tokenizer", Severity.MODERATE)]
    )
    with database.session() as session:
        put_advisory(session, first)
        put_advisory(session, second)
    server = ServerThread()
    settings = PublishSettings(base_url=server.url, log_poll_seconds=0)
    app = create_app(database, settings=settings)
    with server.mount(app), httpx.Client(base_url=server.url) as client:
        before = client.get("/feeds/all.atom")
        with database.session() as session:
            withdraw_advisory(session, first.id, START + timedelta(days=2))
        vuln = client.get(f"/v1/vulns/{first.id}").json()
        feed = feedparser.parse(client.get("/feeds/all.atom").content)
        index = client.get("/osv/modified_id.csv").text.splitlines()
        revalidated = client.get(
            "/feeds/all.atom", headers={"If-None-Match": before.headers["etag"]}
        )
    assert vuln["withdrawn"] == vuln["modified"] == "2024-06-03T00:00:00Z"
    titles = {e.id.rsplit(":", 1)[1]: e.title for e in feed.entries}
    assert titles[first.id].startswith("[withdrawn] ") and not titles[second.id].startswith("[")
    assert index[0] == f"2024-06-03T00:00:00Z,{first.id}"
    assert revalidated.status_code == 200


def test_model_page_hands_back_each_revisions_stored_plan_and_its_family(
    database: Database,
) -> None:
    plan = {"schema_version": "1.0", "model": {"family": "llama"}, "opaque": [1, 2]}
    with database.session() as session:
        for n, stored in ((0, None), (1, plan)):
            revision = Revision("org/one", sha("org/one", n), (), START + timedelta(hours=n), "c")
            record_revision(session, Snapshot(revision, ()), [], stored, processed_at=RECORDED_AT)  # type: ignore[arg-type]
        for repo_id, family in (("org/two", "llama"), ("org/three", "mistral"), ("org/four", None)):
            other = Revision(repo_id, sha(repo_id, 0), (), START, "c")
            theirs = None if family is None else {**plan, "model": {"family": family}}
            record_revision(session, Snapshot(other, ()), [], theirs, processed_at=RECORDED_AT)  # type: ignore[arg-type]
    with database.read_session() as session:
        page = model_page(session, "org/one")
    assert [e.plan for e in page.history] == [plan, None]  # newest first, JSON as stored
    assert page.summary.plan == plan
    assert [o.repo.repo_id for o in page.others] == ["org/two"]


def test_a_model_without_any_plan_renders_its_page_without_a_chart(database: Database) -> None:
    history(database, "org/one", [("config", Severity.HIGH)])
    server = ServerThread()
    app = create_app(database, settings=PublishSettings(base_url=server.url))
    with server.mount(app), httpx.Client(base_url=server.url) as client:
        page = client.get("/models/org/one")
        twin = client.get("/models/org/one.md")
    assert page.status_code == 200 and twin.status_code == 200
    assert "No revision has an estimate yet." in page.text and "<svg" not in page.text
    assert "org/one: could not estimate" in twin.text
    assert "could not estimate" in page.text
    assert "config 1" in twin.text and "No findings." in page.text


def test_a_stored_plan_reads_back_as_the_same_typed_plan(database: Database) -> None:
    config = json.loads((REPO_ROOT / "tests/data/configs/llama-3.2-1b/config.json").read_text())
    written = estimator.plan(config, estimator.Workload(method="qlora", batch=3, epochs=2.5))
    revision = Revision("org/one", sha("org/one", 0), (), START, "c")
    with database.session() as session:
        record_revision(
            session, Snapshot(revision, ()), [], written.to_json(), processed_at=RECORDED_AT
        )  # type: ignore[arg-type]
    with database.read_session() as session:
        stored = plan_at(session, "org/one", revision.sha)
    assert stored is not None
    read = estimator.Plan.from_json(stored)
    assert read == written
    assert read.cost.training_flops == written.cost.training_flops


def test_the_index_and_its_json_page_by_repo_id_and_chain_to_the_end(
    database: Database,
) -> None:
    with database.session() as session:
        for n in range(INDEX_PAGE_SIZE + 30):
            revision = Revision(f"org/m{n:03d}", sha("m", n), (), START, "c")
            record_revision(session, Snapshot(revision, ()), [], None, processed_at=RECORDED_AT)
    server = ServerThread()
    app = create_app(database, settings=PublishSettings(base_url=server.url))
    with server.mount(app), httpx.Client(base_url=server.url) as client:
        pages, url = [], f"{server.url}/index.json"
        while url is not None:
            answer = client.get(url).json()
            pages.append([m["repo_id"] for m in answer["models"]])
            url = answer["next"]
        html = client.get("/").text
        second_html = client.get("/", params={"after": pages[0][-1]}).text
        refused = client.get("/index.json", params={"after": "x" * 300})
    assert [len(p) for p in pages] == [INDEX_PAGE_SIZE, 30]
    assert [r for page in pages for r in page] == [
        f"org/m{n:03d}" for n in range(INDEX_PAGE_SIZE + 30)
    ]
    assert f'<a rel="next" href="/?after=org%2Fm{INDEX_PAGE_SIZE - 1:03d}">' in html
    assert f"org/m{INDEX_PAGE_SIZE + 29:03d}" in second_html and "org/m000" not in second_html
    assert 'rel="next"' not in second_html
    assert refused.status_code == 400 and "after must be a repo id" in refused.text
