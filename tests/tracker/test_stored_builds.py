"""Meta-device builds live in the blob store: one build per config for a whole deployment,
written with the revision that needed it, and a stored document is never trusted blindly."""

from __future__ import annotations

from collections import Counter

import pytest
from sqlalchemy import select

import tracker.revision.exact_parameters as exact_parameters
import tracker.revision.stored_builds as stored_builds
from storage import Database, plan_at, put_blob, revisions
from storage.models import BlobRow
from tests.storage.builders import RECORDED_AT, recorded_at
from tests.tracker.test_exact_parameters import OLMO2 as OLMO2_FOUR_LAYERS
from tracker.hub.api import connect
from tracker.hub.client import Hub
from tracker.hubsim import HubEmulator
from tracker.revision.backfill import backfill
from tracker.revision.stored_builds import StoredBuilds, build_key, decode, encode
from tracker.settings import HubSettings

# OLMo 2 has no family module: only transformers can list its parameters.
OLMO2 = {**OLMO2_FOUR_LAYERS, "num_hidden_layers": 2}
# A corpus repo of a type without a family module (LayoutLMv3).
UNKNOWN_TYPE_REPO = "Theivaprakasham/layoutlmv3-finetuned-invoice"


def test_the_key_cannot_be_a_hub_content_key_and_names_the_transformers_version(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    key = build_key(OLMO2)
    assert len(key) == 64 and key.isalnum() and key[0] == "m"
    assert build_key(dict(reversed(list(OLMO2.items())))) == key
    monkeypatch.setattr(stored_builds, "transformers_version", lambda: "0.0.1")
    assert build_key(OLMO2) != key


def test_a_document_decodes_only_under_its_own_key_and_only_when_well_formed() -> None:
    built = exact_parameters.meta_build(OLMO2)
    key = build_key(OLMO2)
    assert decode(encode(built, key), key) == built
    assert decode(encode(built, key), "m" + "0" * 63) is None
    hostile = [
        b"{not json",
        b"[]",
        b'{"format": 1, "key": "%s", "parameters": [["w", [-1]]], "modules": [], "refused": null}',
        b'{"format": 1, "key": "%s", "parameters": [["w", [true]]], "modules": [], "refused": null}',
        b'{"format": 1, "key": "%s", "parameters": [], "modules": [["a"]], "refused": null}',
        b'{"format": 1, "key": "%s", "parameters": [], "modules": [], "refused": 7}',
        b'{"format": 2, "key": "%s", "parameters": [], "modules": [], "refused": null}',
    ]
    for data in hostile:
        assert decode(data.replace(b"%s", key.encode()), key) is None, data


def test_a_stored_build_is_read_back_instead_of_built(
    database: Database, builds: Counter[str]
) -> None:
    with database.read_session() as session:
        first = StoredBuilds(session)
        parameters = first(OLMO2)
    assert builds["build"] == 1 and parameters and list(first.new) == [build_key(OLMO2)]
    with database.session() as session:
        for key, data in first.new.items():
            put_blob(session, key, data, at=RECORDED_AT)
    exact_parameters._cache.clear()  # another worker, or this one restarted
    with database.read_session() as session:
        again = StoredBuilds(session)
        assert again(OLMO2) == parameters
    assert builds["build"] == 1 and again.new == {}


def test_a_corrupt_stored_build_is_rebuilt_not_trusted(
    database: Database, builds: Counter[str]
) -> None:
    key = build_key(OLMO2)
    forged = (
        b'{"format": 1, "key": "%s", "parameters": [["w", [1]]], "modules": [], "refused": null}'
    )
    with database.session() as session:
        put_blob(session, key, forged.replace(b"%s", key.encode()[:-1] + b"0"), at=RECORDED_AT)
    with database.read_session() as session:
        parameters = StoredBuilds(session)(OLMO2)
    assert builds["build"] == 1 and parameters is not None and len(parameters) > 1


def test_a_backfill_writes_each_build_once_with_its_revision(
    hub_emulator: HubEmulator, database: Database, builds: Counter[str]
) -> None:
    report = backfill(
        database,
        Hub(connect(HubSettings(hub_emulator.endpoint)), max_retries=0),
        UNKNOWN_TYPE_REPO,
        clock=recorded_at,
    )
    assert report.recorded == len(hub_emulator.history(UNKNOWN_TYPE_REPO))
    with database.read_session() as session:
        keys = list(
            session.scalars(select(BlobRow.content_key).where(BlobRow.content_key.like("m%")))
        )
        plans = [
            plan_at(session, UNKNOWN_TYPE_REPO, r.sha)
            for r in revisions(session, UNKNOWN_TYPE_REPO)
        ]
    families = {p["model"]["family"] for p in plans if p is not None}
    assert families == {"meta-device"}, families
    assert len(keys) == builds["build"] >= 1  # one build and one stored document per config


def test_a_build_this_process_holds_is_answered_without_the_store(
    database: Database, builds: Counter[str]
) -> None:
    with database.read_session() as session:
        parameters = StoredBuilds(session)(OLMO2)
    with database.read_session() as session:
        again = StoredBuilds(session)
        assert again(OLMO2) == parameters
    # Nothing was written and nothing read back: the second answer came from memory.
    assert builds["build"] == 1 and again.new == {}
    with database.read_session() as session:
        stored = session.scalars(select(BlobRow.content_key)).all()
    assert build_key(OLMO2) not in stored
