"""The OSV API and dumps over a real server, in OSV.dev's shapes (HUB-NOTES A.2, A.3)."""

from __future__ import annotations

import csv
import io
import json
import zipfile
from collections.abc import Iterator

import httpx
import pytest

from feeds import PublishSettings, create_app
from tests.feeds.conftest import ServerThread, Site

DEMO = "neurarch-demo/llama2-7b"


@pytest.fixture(scope="module")
def client(demo_site: Site) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=demo_site.url, timeout=30) as client:
        yield client


def of_repo(site: Site, repo_id: str) -> set[str]:
    return {a.id for a in site.advisories if a.repo_id == repo_id}


def test_query_by_purl_and_by_git_name_finds_the_repos_advisories(
    client: httpx.Client, demo_site: Site
) -> None:
    by_purl = client.post("/v1/query", json={"package": {"purl": f"pkg:huggingface/{DEMO}"}})
    by_name = client.post(
        "/v1/query",
        json={"package": {"ecosystem": "GIT", "name": f"https://huggingface.co/{DEMO}"}},
    )
    assert by_purl.status_code == by_name.status_code == 200
    assert {v["id"] for v in by_purl.json()["vulns"]} == of_repo(demo_site, DEMO)
    assert by_purl.json() == by_name.json()
    full = by_purl.json()["vulns"][0]
    assert full == client.get(f"/v1/vulns/{full['id']}").json()


def test_query_by_commit_finds_the_advisory_introduced_there(
    client: httpx.Client, demo_site: Site
) -> None:
    advisory = demo_site.advisories[-1]
    found = client.post("/v1/query", json={"commit": advisory.new_sha}).json()
    assert [v["id"] for v in found["vulns"]] == [advisory.id]
    versioned = client.post(
        "/v1/query",
        json={"package": {"purl": f"pkg:huggingface/{advisory.repo_id}@{advisory.new_sha}"}},
    ).json()
    assert [v["id"] for v in versioned["vulns"]] == [advisory.id]


def test_no_hits_is_an_empty_object(client: httpx.Client) -> None:
    assert client.post("/v1/query", json={"commit": "0" * 40}).json() == {}
    assert (
        client.post("/v1/query", json={"package": {"name": "x", "ecosystem": "PyPI"}}).json() == {}
    )


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({}, "invalid query"),
        ({"commit": "a" * 40, "version": "1"}, "invalid query"),
        (
            {"package": {"purl": f"pkg:huggingface/{DEMO}", "name": "x"}},
            "name specified in a PURL query",
        ),
        (
            {"package": {"purl": f"pkg:huggingface/{DEMO}@abc"}, "version": "1"},
            "version specified in params and PURL query",
        ),
        ({"commit": 5}, "invalid query"),
        ({"package": {"purl": f"pkg:huggingface/{DEMO}"}, "page_token": "%%%"}, "invalid cursor"),
    ],
)
def test_bad_queries_get_osv_status_errors(
    client: httpx.Client, body: dict[str, object], message: str
) -> None:
    response = client.post("/v1/query", json=body)
    assert response.status_code == 400
    assert response.json() == {"code": 3, "message": message}


def test_unknown_vuln_is_code_5(client: httpx.Client) -> None:
    response = client.get("/v1/vulns/x_NEURARCH-nope")
    assert (response.status_code, response.json()) == (
        404,
        {"code": 5, "message": "Vulnerability not found"},
    )


def test_querybatch_returns_id_and_modified_in_query_order(
    client: httpx.Client, demo_site: Site
) -> None:
    queries = [
        {"package": {"purl": "pkg:huggingface/neurarch-demo/phi-1_5"}},
        {"commit": "1" * 40},
        {"package": {"purl": f"pkg:huggingface/{DEMO}"}},
    ]
    results = client.post("/v1/querybatch", json={"queries": queries}).json()["results"]
    assert len(results) == 3 and results[1] == {}
    assert {v["id"] for v in results[0]["vulns"]} == of_repo(demo_site, "neurarch-demo/phi-1_5")
    assert all(set(v) == {"id", "modified"} for r in results for v in r.get("vulns", []))
    too_many = client.post("/v1/querybatch", json={"queries": [{"commit": "1" * 40}] * 1001})
    assert (too_many.status_code, too_many.json()["message"]) == (400, "too many queries")
    bad = client.post("/v1/querybatch", json={"queries": [{"commit": "1" * 40}, {}]})
    assert bad.json() == {"code": 3, "message": "error in query at index 1: invalid query"}


def test_page_tokens_walk_every_advisory_once(demo_site: Site) -> None:
    server = ServerThread()
    settings = PublishSettings(base_url=server.url, query_page_size=2)
    with (
        server.mount(create_app(demo_site.database, settings=settings)),
        httpx.Client(base_url=server.url) as client,
    ):
        query: dict[str, object] = {"package": {"purl": f"pkg:huggingface/{DEMO}"}}
        seen: list[str] = []
        pages = 0
        while True:
            page = client.post("/v1/query", json=query).json()
            pages += 1
            seen += [v["id"] for v in page.get("vulns", [])]
            if "next_page_token" not in page:
                break
            query["page_token"] = page["next_page_token"]
    assert sorted(seen) == sorted(of_repo(demo_site, DEMO))
    assert len(seen) >= 3 and pages == -(-len(seen) // 2)


def test_dumps_hold_every_advisory_and_the_index_is_newest_first(
    client: httpx.Client, demo_site: Site
) -> None:
    archive = zipfile.ZipFile(io.BytesIO(client.get("/osv/all.zip").content))
    names = sorted(archive.namelist())
    assert names == sorted(f"{a.id}.json" for a in demo_site.advisories)
    one = json.loads(archive.read(names[0]))
    assert one == client.get(f"/v1/vulns/{one['id']}").json()
    rows = list(csv.reader(io.StringIO(client.get("/osv/modified_id.csv").text)))
    assert {r[1] for r in rows} == {a.id for a in demo_site.advisories}
    stamps = [r[0] for r in rows]
    assert stamps == sorted(stamps, reverse=True)
