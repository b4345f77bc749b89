"""The parent's stored plan is read back once, typed; one the estimator cannot read is a
logged path, decided before the recording transaction, that leaves the stored row intact."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime

import pytest
from sqlalchemy import select, update

import estimator
from storage import Database, Revision, ensure_repo, plan_at
from storage.models.history import EstimateRow, RevisionRow
from tests.storage.builders import RECORDED_AT, recorded_at, snapshot
from tracker.demo import HISTORIES
from tracker.diff.revision import RevisionContent
from tracker.hub.api import connect
from tracker.hub.client import Hub
from tracker.hubsim import HubEmulator
from tracker.revision.backfill import record_one
from tracker.revision.estimate import estimate, parent_plan
from tracker.revision.process import prepare
from tracker.revision.walk import Walk
from tracker.settings import HubSettings

REPO = "parent/llama2-7b"
LLAMA2 = HISTORIES / "neurarch-demo" / "llama2-7b" / "7dba8667ad27534931d66b826bbdc7b31fad885c"
START = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)
OLDER_SCHEMA = {"schema_version": "0.9", "model": {"max_position_embeddings": 1}}


def config(**override: object) -> bytes:
    return json.dumps({**json.loads((LLAMA2 / "config.json").read_text()), **override}).encode()


def content(data: bytes) -> RevisionContent:
    revision = Revision(REPO, "a" * 40, (), START, "upload")
    return RevisionContent(snapshot(revision, {"config.json": data}), {"config.json": data})


def test_a_readable_stored_plan_comes_back_typed_and_equal() -> None:
    parent = content(config())
    planned, _ = estimate(parent)
    assert planned is not None
    assert parent_plan(json.loads(json.dumps(planned.to_json())), parent) == planned
    assert parent_plan(None, parent) is None  # the estimator refused the parent's config


def test_an_unreadable_stored_plan_is_logged_and_the_parent_estimated_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    parent = content(config())
    with caplog.at_level(logging.WARNING, logger="neurarch.worker"):
        typed = parent_plan(OLDER_SCHEMA, parent)
    assert typed == estimate(parent)[0]
    [event] = [json.loads(r.getMessage()) for r in caplog.records]
    assert (event["event"], event["repo"], event["sha"]) == (
        "stored_plan_unreadable",
        REPO,
        "a" * 40,
    )
    assert "schema_version '0.9'" in event["error"]


@pytest.mark.parametrize("hub_emulator", [{"corpus": None}], indirect=True)
def test_a_revision_after_an_unreadable_stored_plan_is_recorded_and_the_row_kept(
    database: Database, hub_emulator: HubEmulator, caplog: pytest.LogCaptureFixture
) -> None:
    hub_emulator.publish(REPO, {"config.json": config()}, title="Upload", date=START)
    hub_emulator.publish(
        REPO, {"config.json": config(num_hidden_layers=64)}, title="deeper", date=START
    )
    hub = Hub(connect(HubSettings(hub_emulator.endpoint)), max_retries=0)
    with database.session() as session:
        ensure_repo(session, REPO, now=RECORDED_AT)
    *older, upload, deeper = hub.commits(REPO)
    for revision in (*older, upload):
        assert record_one(database, hub, revision, clock=recorded_at) is not None
    with database.session() as session:
        pk = session.scalar(select(RevisionRow.id).where(RevisionRow.sha == upload.sha))
        session.execute(
            update(EstimateRow)
            .where(EstimateRow.revision_pk == pk)
            .values(plan=OLDER_SCHEMA, plan_key=None)  # an inline row from before 0008
        )

    with caplog.at_level(logging.WARNING, logger="neurarch.worker"):
        prepared = prepare(database, hub, deeper, Walk())
    assert prepared is not None
    outcome = prepared.outcome
    assert isinstance(outcome.previous_plan, estimator.Plan)
    assert dict(outcome.previous_plan.parameters)["total"] < dict(outcome.plan.parameters)["total"]  # type: ignore[union-attr]
    assert any(c.kind == "parameters_changed" for c in outcome.changes)
    assert [json.loads(r.getMessage())["event"] for r in caplog.records] == [
        "stored_plan_unreadable"
    ]

    assert record_one(database, hub, deeper, clock=recorded_at) is not None
    with database.read_session() as session:
        assert plan_at(session, REPO, upload.sha) == OLDER_SCHEMA  # left as it was stored
        assert estimator.Plan.from_json(plan_at(session, REPO, deeper.sha)) == outcome.plan
