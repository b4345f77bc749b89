"""The dumps and OSV paths at any size: streamed zip and index, 304s unread, batch pages, newest-K."""

from __future__ import annotations

import csv
import io
import json
import tracemalloc
import zipfile
from collections.abc import Iterator
from datetime import UTC, datetime
from email.utils import format_datetime
from functools import partial

import feedparser
import httpx
import pytest

from feeds import PublishSettings, create_app, osv_document
from feeds.state import render_cache
from feeds.zipstream import stream_zip
from storage import Database
from storage.dumps import advisories_by_id
from storage.records import Advisory
from tests.feeds.conftest import ServerThread
from tests.storage.synthetic_log import bulk_insert, synthetic_advisories


@pytest.fixture
def served(database: Database) -> Iterator[tuple[httpx.Client, list[Advisory]]]:
    built = synthetic_advisories(60, repos=3)
    bulk_insert(database, built)
    server = ServerThread()
    settings = PublishSettings(
        base_url=server.url, log_poll_seconds=0, batch_page_size=4, feed_entries=5
    )
    with (
        server.mount(create_app(database, settings=settings)),
        httpx.Client(base_url=server.url) as client,
    ):
        yield client, built


def in_memory_zip(advisories: list[Advisory]) -> zipfile.ZipFile:
    """The archive as the app built it before streaming: stdlib zipfile over every record."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for advisory in sorted(advisories, key=lambda a: a.id):
            moment = advisory.modified
            stamp = (max(moment.year, 1980), moment.month, moment.day, moment.hour, moment.minute)
            info = zipfile.ZipInfo(f"{advisory.id}.json", (*stamp, moment.second))
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, json.dumps(osv_document(advisory), indent=2))
    return zipfile.ZipFile(buffer)


def contents(archive: zipfile.ZipFile) -> dict[str, tuple[object, tuple[int, ...]]]:
    """Each member's parsed document and time: the old archive was indented, the new is compact."""
    return {i.filename: (json.loads(archive.read(i)), i.date_time) for i in archive.infolist()}


def test_the_streamed_zip_holds_what_the_in_memory_zip_held(
    served: tuple[httpx.Client, list[Advisory]],
) -> None:
    client, built = served
    response = client.get("/osv/all.zip")
    assert response.headers["content-type"] == "application/zip"
    streamed = zipfile.ZipFile(io.BytesIO(response.content))
    assert streamed.testzip() is None
    assert [i.filename for i in streamed.infolist()] == sorted(f"{a.id}.json" for a in built)
    assert contents(streamed) == contents(in_memory_zip(built))


def test_the_dumps_answer_304_unread_and_change_tag_with_the_log(
    served: tuple[httpx.Client, list[Advisory]], database: Database
) -> None:
    client, built = served
    newest = format_datetime(max(a.modified for a in built), usegmt=True)
    for path in ("/osv/all.zip", "/osv/modified_id.csv"):
        first = client.get(path)
        again = client.get(path, headers={"If-None-Match": first.headers["etag"]})
        assert (again.status_code, again.content) == (304, b"")
        assert again.headers["etag"] == first.headers["etag"]
        assert first.headers["last-modified"] == newest
    tags = {
        path: client.get(path).headers["etag"] for path in ("/osv/all.zip", "/osv/modified_id.csv")
    }
    bulk_insert(database, synthetic_advisories(61, repos=3)[60:])
    for path, tag in tags.items():
        assert client.get(path, headers={"If-None-Match": tag}).status_code == 200


def stamp(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def test_the_streamed_index_is_every_advisory_newest_first(
    served: tuple[httpx.Client, list[Advisory]],
) -> None:
    client, built = served
    rows = list(csv.reader(io.StringIO(client.get("/osv/modified_id.csv").text)))
    expected = sorted(built, key=lambda a: a.id)
    expected.sort(key=lambda a: a.modified, reverse=True)
    assert [r[1] for r in rows] == [a.id for a in expected]
    assert rows[0][0] == stamp(expected[0].modified)


def test_querybatch_pages_each_query_with_its_own_token(
    served: tuple[httpx.Client, list[Advisory]],
) -> None:
    client, built = served
    repo_id = built[0].repo_id
    queries: list[dict[str, object]] = [
        {"package": {"purl": f"pkg:huggingface/{repo_id}"}},
        {"commit": built[4].new_sha},
    ]
    seen: list[str] = []
    while True:
        first = client.post("/v1/querybatch", json={"queries": queries}).json()["results"]
        assert first[1] == {"vulns": [{"id": built[4].id, "modified": stamp(built[4].modified)}]}
        seen += [v["id"] for v in first[0]["vulns"]]
        assert len(first[0]["vulns"]) <= 4
        if "next_page_token" not in first[0]:
            break
        queries[0] = {**queries[0], "page_token": first[0]["next_page_token"]}
    assert sorted(seen) == sorted(a.id for a in built if a.repo_id == repo_id)
    assert len(seen) == len(set(seen)) == 20


def test_the_global_feed_reads_the_newest_k(
    served: tuple[httpx.Client, list[Advisory]],
) -> None:
    client, built = served
    feed = feedparser.parse(client.get("/feeds/all.atom").content)
    newest = sorted(built, key=lambda a: a.id)
    newest.sort(key=lambda a: a.published, reverse=True)
    expected = [f"urn:neurarch-trace:advisory:{a.id}" for a in newest[:5]]
    assert [entry.id for entry in feed.entries] == expected


def test_a_render_is_kept_per_key_until_its_version_changes_or_it_ages() -> None:
    renders: list[str] = []

    def render(key: str) -> str:
        renders.append(key)
        return key.upper()

    cache = render_cache(maxsize=2)
    assert [cache(k, 1, partial(render, k)) for k in ("a", "b", "a")] == ["A", "B", "A"]
    assert cache("a", 2, lambda: render("a")) == "A"  # a new version renders this key only
    assert cache("b", 1, lambda: render("b")) == "B"  # ("b", 1) was evicted by ("a", 2)
    assert renders == ["a", "b", "a", "b"]
    aged = render_cache(max_age=0)
    aged("a", 1, lambda: render("a"))
    aged("a", 1, lambda: render("a"))
    assert renders[-2:] == ["a", "a"]


def zip_peak(members: Iterator[tuple[str, datetime, bytes]]) -> int:
    """Peak traced bytes while ``members`` are zipped, streamed and discarded."""
    tracemalloc.start()
    try:
        total = sum(len(chunk) for chunk in stream_zip(members, spool_bytes=64 * 1024))
        return tracemalloc.get_traced_memory()[1] if total else 0
    finally:
        tracemalloc.stop()


def documents(advisories: list[Advisory]) -> Iterator[tuple[str, datetime, bytes]]:
    for advisory in advisories:
        yield f"{advisory.id}.json", advisory.modified, json.dumps(osv_document(advisory)).encode()


def test_zipping_ten_times_the_advisories_takes_the_same_memory() -> None:
    (one,) = synthetic_advisories(1, repos=1)
    document = json.dumps(osv_document(one)).encode()

    def members(count: int) -> Iterator[tuple[str, datetime, bytes]]:
        # long names, so the directory of even the small archive outgrows the fixed buffers
        name = "x_NEURARCH-" + "m" * 80 + "-{:07d}.json"
        return ((name.format(n), one.modified, document) for n in range(count))

    # past ~2,000 such entries the writer's fixed buffers (a 256 KiB chunk and its copy) are
    # full; a central directory kept in memory would add ~150 bytes an entry beyond that
    small, large = zip_peak(members(2_000)), zip_peak(members(20_000))
    assert small > 0 and large < small * 1.25, (small, large)


def test_the_dump_reader_holds_one_batch_at_a_time(database: Database) -> None:
    bulk_insert(database, synthetic_advisories(50, repos=5))
    with database.read_session() as session:
        sizes = []
        for batch in advisories_by_id(session, batch=8):
            sizes.append(len(batch))
            assert len(session.identity_map) == 0
    assert sizes == [8, 8, 8, 8, 8, 8, 2]


def stored_documents(database: Database) -> Iterator[tuple[str, datetime, bytes]]:
    with database.read_session() as session:
        for batch in advisories_by_id(session, batch=200):
            yield from documents(list(batch))


@pytest.mark.slow
def test_streaming_the_stored_log_takes_the_same_memory_at_ten_times_its_size(
    database: Database,
) -> None:
    built = synthetic_advisories(20_000, repos=200)
    bulk_insert(database, built[:2_000])
    small = zip_peak(stored_documents(database))
    bulk_insert(database, built[2_000:])
    large = zip_peak(stored_documents(database))
    assert small > 0 and large < small * 1.5, (small, large)


def test_an_archive_past_65535_entries_carries_zip64_end_records() -> None:
    moment = datetime(2025, 1, 1, tzinfo=UTC)
    data = b"".join(stream_zip((f"{n}.json", moment, b"{}") for n in range(65_536)))
    archive = zipfile.ZipFile(io.BytesIO(data))
    assert len(archive.infolist()) == 65_536
    assert archive.read("65535.json") == b"{}"
    assert b"PK\x06\x06" in data[-200:]
