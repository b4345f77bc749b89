"""Advisories built from real tracker output validate against the official OSV schema."""

from __future__ import annotations

import hashlib
import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from feeds import EstimateDelta, build_advisory, osv_document, withdraw
from feeds.osv import noteworthy
from storage import open_database
from storage.records import Change, Revision, Severity, StoredRevision
from tests.conftest import REPO_ROOT
from tests.feeds.conftest import Site
from tests.feeds.populate import build_all, populate

SCHEMA = REPO_ROOT.parent / "shared" / "osv" / "schema.json"
SHA = re.compile(r"^[0-9a-f]{40}$")


@pytest.fixture(scope="module")
def validator() -> Draft202012Validator:
    schema = json.loads(SCHEMA.read_text("utf-8"))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)


def assert_valid(validator: Draft202012Validator, document: dict[str, Any]) -> None:
    errors = sorted(validator.iter_errors(document), key=lambda e: list(e.path))
    assert not errors, [f"{list(e.path)}: {e.message}" for e in errors[:5]]


def stored(repo_id: str, sha: str, minute: int) -> StoredRevision:
    moment = datetime(2024, 5, 1, 12, minute, tzinfo=UTC)
    return StoredRevision(Revision(repo_id, sha, (), moment, "update"), moment)


def test_every_demo_advisory_validates_against_the_osv_schema(
    demo_site: Site, validator: Draft202012Validator
) -> None:
    assert len(demo_site.advisories) >= 10
    for advisory in demo_site.advisories:
        document = osv_document(advisory)
        assert_valid(validator, document)
        assert document["id"].startswith("x_NEURARCH-")
        (affected,) = document["affected"]
        assert affected["package"]["purl"] == f"pkg:huggingface/{advisory.repo_id}"
        assert affected["versions"] == [advisory.new_sha]
        assert SHA.match(advisory.new_sha)
        assert "\n" not in document["summary"]
    withdrawn = osv_document(withdraw(demo_site.advisories[0], datetime.now(UTC)))
    assert_valid(validator, withdrawn)
    assert "withdrawn" in withdrawn


def test_advisory_ids_are_the_documented_digest_and_stable_across_runs(demo_site: Site) -> None:
    again = build_all(demo_site.database)
    assert [a.id for a in again] == [a.id for a in demo_site.advisories]
    assert [a.osv for a in again] == [a.osv for a in demo_site.advisories]
    for advisory in demo_site.advisories:
        key = f"{advisory.repo_id}|{advisory.old_sha}|{advisory.new_sha}".encode()
        org, name = advisory.repo_id.split("/")
        assert advisory.id == f"x_NEURARCH-{org}-{name}-{hashlib.sha256(key).hexdigest()[:12]}"


def test_the_demo_eot_fix_is_published_with_its_stop_token(demo_site: Site) -> None:
    llama3 = [a for a in demo_site.advisories if a.repo_id == "neurarch-demo/llama3-8b-instruct"]
    assert any("<|eot_id|>" in a.summary for a in llama3), [a.summary for a in llama3]


def test_minor_changes_and_a_first_revision_publish_nothing() -> None:
    old, new = stored("o/m", "a" * 40, 0), stored("o/m", "b" * 40, 1)
    minor = Change("card", "README.md", "modified", "x", "y", Severity.LOW, "card text edited")
    assert noteworthy([minor]) == []
    assert build_advisory("o/m", old, new, [minor], None) is None
    big = Change("config", "config.json", "modified", 2048, 4096, Severity.HIGH, "context 2x")
    assert build_advisory("o/m", None, new, [big], None) is None
    advisory = build_advisory("o/m", old, new, [big, minor], EstimateDelta(None, ()))
    assert advisory is not None and advisory.severity is Severity.HIGH
    assert advisory.osv["database_specific"]["changes"][0]["new"] == 4096


@pytest.mark.slow
def test_every_corpus_advisory_validates_against_the_osv_schema(
    corpus_dir: Path, tmp_path: Path, validator: Draft202012Validator
) -> None:
    database = open_database(f"sqlite:///{tmp_path / 'corpus.db'}")
    database.migrate()
    try:
        advisories = populate(database, corpus_dir)
        assert len(advisories) >= 100
        for advisory in advisories:
            assert_valid(validator, osv_document(advisory))
        assert len({a.id for a in advisories}) == len(advisories)
        print(f"{len(advisories)} corpus advisories validated")
    finally:
        database.close()
