"""One meaning for an advisory, read three ways: its GIT range, its versions, /v1/query by commit.

The range is evaluated the way OSV's spec evaluates GIT ranges (walk the commit
graph; here main is a chain, oldest first): a commit is affected from an
``introduced`` event up to a ``fixed`` one (excluded) or a ``last_affected`` one
(included). A consumer that evaluates ranges and one that matches ``versions``
must name the same commits, and the OSV API answers a commit with the records
whose range holds it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest

from feeds import osv_document
from feeds.osv import purl
from storage import Database, open_database, revision_log, tracked_repos
from storage.records import Advisory
from tests.feeds.conftest import Site
from tests.feeds.populate import populate


def range_affected(chain: Sequence[str], events: Iterable[dict[str, str]]) -> set[str]:
    """The commits of ``chain`` (oldest first) a GIT range's events mark affected."""
    introduced = {e["introduced"] for e in events if "introduced" in e}
    events = list(events)
    fixed = {e["fixed"] for e in events if "fixed" in e}
    last = {e["last_affected"] for e in events if "last_affected" in e}
    affected: set[str] = set()
    inside = False
    for sha in chain:
        if sha in introduced:
            inside = True
        if sha in fixed:
            inside = False
        if inside:
            affected.add(sha)
        if sha in last:
            inside = False
    return affected


def chains(database: Database) -> dict[str, list[str]]:
    with database.read_session() as session:
        return {
            repo.repo_id: [s.revision.sha for s in reversed(revision_log(session, repo.repo_id))]
            for repo in tracked_repos(session)
        }


def assert_one_meaning(advisories: Sequence[Advisory], chain_of: dict[str, list[str]]) -> int:
    checked = 0
    for advisory in advisories:
        document: dict[str, Any] = osv_document(advisory)
        (affected,) = document["affected"]
        (git,) = affected["ranges"]
        by_range = range_affected(chain_of[advisory.repo_id], git["events"])
        assert by_range == set(affected["versions"]) == {advisory.new_sha}, advisory.id
        checked += 1
    return checked


def test_range_and_versions_name_the_same_commits_for_every_demo_advisory(
    demo_site: Site,
) -> None:
    assert assert_one_meaning(demo_site.advisories, chains(demo_site.database)) >= 10


def test_a_query_by_commit_answers_what_the_range_holds_for_every_recorded_commit(
    demo_site: Site,
) -> None:
    chain_of = chains(demo_site.database)
    repos = sorted({a.repo_id for a in demo_site.advisories})[:3]
    assert len(repos) == 3
    asked = 0
    with httpx.Client(base_url=demo_site.url, timeout=30) as client:
        for repo_id in repos:
            for sha in chain_of[repo_id]:
                expected = {
                    a.id
                    for a in demo_site.advisories
                    if sha
                    in range_affected(
                        chain_of[a.repo_id], osv_document(a)["affected"][0]["ranges"][0]["events"]
                    )
                }
                answer = client.post("/v1/query", json={"commit": sha}).json()
                assert {v["id"] for v in answer.get("vulns", [])} == expected, sha
                upper = client.post(
                    "/v1/query",
                    json={"package": {"purl": f"pkg:huggingface/{repo_id}@{sha.upper()}"}},
                ).json()
                assert {v["id"] for v in upper.get("vulns", [])} == expected, sha
                asked += 1
    assert asked >= 10


def test_a_record_stored_with_an_open_range_is_served_with_its_last_affected_commit(
    demo_site: Site,
) -> None:
    advisory = demo_site.advisories[0]
    legacy = dict(advisory.osv)
    (entry,) = legacy["affected"]
    legacy["affected"] = [
        {**entry, "ranges": [{**entry["ranges"][0], "events": [{"introduced": advisory.new_sha}]}]}
    ]
    from dataclasses import replace

    served = osv_document(replace(advisory, osv=legacy))
    assert served["affected"][0]["ranges"][0]["events"] == [
        {"introduced": advisory.new_sha},
        {"last_affected": advisory.new_sha},
    ]


def test_purls_follow_the_huggingface_type() -> None:
    sha = "043235D6088ECD3DD5FB5CA3592B6913FD516027"
    assert purl("distilbert/distilbert-base-uncased", sha) == (
        "pkg:huggingface/distilbert/distilbert-base-uncased@" + sha.lower()
    )
    assert purl("meta-llama/Llama-2-7b-hf") == "pkg:huggingface/meta-llama/Llama-2-7b-hf"
    assert purl("gpt2") is None  # a legacy id: the type requires its canonical namespace


def test_a_purl_without_a_namespace_is_an_invalid_query(demo_site: Site) -> None:
    with httpx.Client(base_url=demo_site.url, timeout=30) as client:
        answer = client.post("/v1/query", json={"package": {"purl": "pkg:huggingface/gpt2"}})
    assert answer.status_code == 400
    assert answer.json() == {"code": 3, "message": "invalid purl"}


@pytest.mark.slow
def test_every_corpus_advisory_has_one_meaning(corpus_dir: Path, tmp_path: Path) -> None:
    database = open_database(f"sqlite:///{tmp_path / 'corpus.db'}")
    database.migrate()
    try:
        advisories = populate(database, corpus_dir)
        checked = assert_one_meaning(advisories, chains(database))
        assert checked == len(advisories) >= 100
        print(f"{checked} corpus advisories: range and versions agree")
    finally:
        database.close()
