"""What upstream may commit is recorded, read back without failing, ordered by main's chain,
and its manifest stored once however many revisions share it; on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime

from sqlalchemy import func, select, text

from storage import (
    Database,
    changes_between,
    changes_of,
    latest_revision,
    plan_at,
    record_revision,
    revisions,
    snapshot_at,
)
from storage.models import BlobRow, EstimateRow, SnapshotRow
from storage.publishing import model_page
from storage.records import FileEntry, Snapshot
from tests.storage.builders import RECORDED_AT, eos_change, revision, snapshot

REPO = "acme/hostile"


def _record(database: Database, snap: Snapshot, plan: dict[str, object] | None = None) -> None:
    with database.session() as session:
        assert record_revision(session, snap, [eos_change(1, 2)], plan, processed_at=RECORDED_AT)


def test_lone_surrogates_and_nul_anywhere_are_recorded_with_a_finding(database: Database) -> None:
    rev = replace(revision(REPO, 0), title="fix \ud800 and \x00", author="eve\udc00")
    snap = replace(
        snapshot(rev, {}, card={"license": "\ud800", "\ud800tags": ["a\x00"]}),
        manifest={"tensors": {"w\ud800": {"dtype": "F16", "shape": [1], "file": "m"}}},
    )
    _record(database, snap, {"cards": {"\udfff": 1}})
    with database.read_session() as session:
        stored = snapshot_at(session, REPO, rev.sha)
        finding = changes_of(session, REPO, rev.sha)[-1]
    assert (stored.revision.title, stored.revision.author) == ("fix \ufffd and \ufffd", "eve\ufffd")
    assert stored.card == {"license": "\ufffd", "\ufffdtags": ["a\ufffd"]}
    assert stored.manifest == {"tensors": {"w\ufffd": {"dtype": "F16", "shape": [1], "file": "m"}}}
    assert (finding.artifact, finding.kind) == ("repo", "unstorable_text")
    assert finding.new["repaired"] == [
        "commit title",
        "commit author",
        "weight manifest",
        "model card",
        "estimate",
    ]


def test_a_path_of_any_length_is_recorded(database: Database) -> None:
    long_path = "deep/" * 1000 + "config.json"  # 5,011 characters; VARCHAR(1024) refused it
    base = snapshot(revision(REPO, 0), {})
    snap = replace(base, files=(*base.files, FileEntry(long_path, 4, "a" * 40)))
    _record(database, snap)
    with database.read_session() as session:
        assert long_path in [f.path for f in snapshot_at(session, REPO, snap.revision.sha).files]


def test_two_paths_that_repair_to_the_same_text_keep_the_first(database: Database) -> None:
    base = snapshot(revision(REPO, 0), {})
    twins = (FileEntry("a\ud800.txt", 1, "a" * 40), FileEntry("a\udc00.txt", 1, "b" * 40))
    _record(database, replace(base, files=(*base.files, *twins)))
    with database.read_session() as session:
        files = snapshot_at(session, REPO, base.revision.sha).files
        finding = changes_of(session, REPO, base.revision.sha)[-1]
    assert [f.blob_id for f in files if f.path == "a\ufffd.txt"] == ["a" * 40]
    assert finding.new == {"repaired": ["file paths"], "dropped_paths": ["a\ufffd.txt"]}


def test_rows_stored_before_the_repair_read_back_printable(database: Database) -> None:
    _record(database, snapshot(revision(REPO, 0), {}))
    cast = "CAST(:value AS json)" if database.engine.dialect.name == "postgresql" else ":value"
    with database.session() as session:
        # What a lone surrogate in a chat template left in the changes and the card.
        session.execute(text(f"UPDATE changes SET new = {cast}"), {"value": '"\\ud800{{ x }}"'})
        session.execute(text(f"UPDATE snapshots SET card = {cast}"), {"value": '{"\\udfff": 1}'})
    with database.read_session() as session:
        [change] = changes_of(session, REPO, revision(REPO, 0).sha)
        page = model_page(session, REPO)
    assert change.new == "\ufffd{{ x }}"
    assert page.card == {"\ufffd": 1}
    json.dumps([change.new, page.card], ensure_ascii=False).encode()


def test_a_plan_shared_by_revisions_is_stored_once_and_older_inline_plans_read(
    database: Database,
) -> None:
    plan = {"cards": [{"name": f"card {i}", "fits": i % 2 == 0} for i in range(500)]}
    changed = {**plan, "context": 4096}
    for index, stored in enumerate([plan, plan, plan, changed]):
        _record(database, snapshot(revision(REPO, index), {}), stored)
    cast = "CAST(:value AS json)" if database.engine.dialect.name == "postgresql" else ":value"
    with database.session() as session:
        # A row written before plans were blobs: the plan inline, no key.
        session.execute(
            text(f"UPDATE estimates SET plan = {cast}, plan_key = NULL WHERE revision_pk = 1"),
            {"value": json.dumps({"inline": True})},
        )
    with database.read_session() as session:
        keys = list(session.scalars(select(EstimateRow.plan_key).order_by("revision_pk")))
        inline = session.scalar(
            select(func.count()).where(EstimateRow.plan.is_not(None))  # type: ignore[arg-type]
        )
        read = [plan_at(session, REPO, revision(REPO, i).sha) for i in range(4)]
        page = model_page(session, REPO)
    assert keys[0] is None and keys[1] == keys[2] != keys[3]
    assert inline == 1
    assert read == [{"inline": True}, plan, plan, changed]
    assert [entry.plan for entry in page.history] == [changed, plan, plan, {"inline": True}]
    assert page.summary.plan == changed


def test_a_nul_in_a_plan_is_repaired_and_said_once(database: Database) -> None:
    _record(database, snapshot(revision(REPO, 0), {}), {"note": "a\x00b"})
    with database.read_session() as session:
        plan = plan_at(session, REPO, revision(REPO, 0).sha)
        changes = changes_of(session, REPO, revision(REPO, 0).sha)
    assert plan == {"note": "a\ufffdb"}
    [finding] = [c for c in changes if c.kind == "unstorable_text"]
    assert finding.new == {"repaired": ["estimate"], "dropped_paths": []}


def test_newest_is_the_head_of_mains_chain_not_the_latest_date(database: Database) -> None:
    future = datetime(9999, 12, 31, tzinfo=UTC)
    chain = [revision(REPO, index) for index in range(5)]
    chain[2] = replace(chain[2], date=future)  # third on main, dated by a pusher's clock
    for rev in chain:
        _record(database, snapshot(rev, {}))
    with database.read_session() as session:
        listed = [r.sha for r in revisions(session, REPO)]
        latest = latest_revision(session, REPO)
        page = model_page(session, REPO)
        between = changes_between(session, REPO, chain[1].sha, chain[4].sha)
    assert listed == [rev.sha for rev in reversed(chain)]
    assert latest == chain[4]
    assert page.summary.latest is not None and page.summary.latest.revision == chain[4]
    assert [rev.sha for rev, _ in between] == [chain[i].sha for i in (2, 3, 4)]


def test_a_manifest_shared_by_revisions_is_stored_once(database: Database) -> None:
    manifest = {
        "tensors": {
            f"model.layers.{i}.weight": {"dtype": "BF16", "shape": [4096, 4096], "file": "m"}
            for i in range(2000)
        }
    }
    for index in range(5):
        _record(database, replace(snapshot(revision(REPO, index), {}), manifest=manifest))
    changed = {"tensors": {**manifest["tensors"], "lm_head.weight": {"dtype": "BF16"}}}
    _record(database, replace(snapshot(revision(REPO, 5), {}), manifest=changed))
    with database.read_session() as session:
        keys = list(session.scalars(select(SnapshotRow.manifest_key).order_by("revision_pk")))
        inline = session.scalar(
            select(func.count()).where(SnapshotRow.manifest.is_not(None))  # type: ignore[arg-type]
        )
        stored = session.scalar(
            select(func.sum(BlobRow.stored_size)).where(BlobRow.content_key.in_(set(keys)))
        )
        read = [snapshot_at(session, REPO, revision(REPO, i).sha).manifest for i in (0, 4, 5)]
    assert len(set(keys[:5])) == 1 and keys[5] != keys[0]
    assert inline == 0
    assert read == [manifest, manifest, changed]
    # two blobs for six revisions, each far smaller than the JSON it holds
    assert stored is not None and stored < len(json.dumps(manifest))
