"""Code a model loads from another repo (``auto_map`` ``other/repo--module.Class``): a change
there is a change here, in the model's history, its advisory and its audit.

Against the Hub emulator with the real huggingface_hub client and a real database;
the referenced repos' code files are written by the tests themselves.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from storage import Database, changes_of, open_database, put_advisory, revision_log
from tests.feeds.populate import build_all
from tests.storage.builders import recorded_at
from tracker.audit.advisories import Published
from tracker.cli import main
from tracker.hub.api import connect
from tracker.hub.client import Hub
from tracker.hubsim import HubEmulator
from tracker.revision.backfill import backfill
from tracker.revision.remote_code import RemoteReference, cross_repo_references
from tracker.settings import HubSettings

MODEL = "acme/remote-model"
CODE = "acme/shared-code"
RMBG = "briaai/RMBG-1.4"
RMBG_CODE = "not-lain/CustomCodeForRMBG"


def config(auto_map: dict[str, Any]) -> bytes:
    document = {"model_type": "custom", "hidden_size": 64, "auto_map": auto_map}
    return json.dumps(document, indent=2).encode()


def modeling(version: int) -> bytes:
    return f"class Model:\n    VERSION = {version}\n".encode()


def test_references_to_other_repos_are_read_from_auto_map_and_custom_pipelines(
    corpus_dir: Path,
) -> None:
    """briaai/RMBG-1.4's pull request #9921b8c1 (February 2024) loaded all its code from
    not-lain/CustomCodeForRMBG."""
    (folder,) = [p for p in (corpus_dir / RMBG).iterdir() if p.name.startswith("9921b8c1")]
    rmbg = json.loads((folder / "config.json").read_text("utf-8"))
    refs = cross_repo_references(RMBG, {"config.json": rmbg})
    assert {(r.repo_id, r.module) for r in refs} == {
        (RMBG_CODE, "MyConfig"),
        (RMBG_CODE, "briarmbg"),
        (RMBG_CODE, "MyPipe"),
    }
    tokenizer = {"auto_map": {"AutoTokenizer": ["o/tok--tok.Slow", None], "AutoModel": "m.Local"}}
    own = {"auto_map": {"AutoModel": f"{MODEL}--modeling.Model"}}
    assert cross_repo_references(MODEL, {"tokenizer_config.json": tokenizer}) == (
        RemoteReference("o/tok", "tok", "tokenizer_config.json auto_map.AutoTokenizer"),
    )
    assert cross_repo_references(MODEL, {"config.json": own}) == ()


@pytest.fixture
def world(tmp_path: Path) -> Iterator[tuple[HubEmulator, Database, Hub]]:
    with HubEmulator(None) as emulator:
        emulator.start()
        database = open_database(f"sqlite:///{tmp_path / 'db.sqlite'}")
        database.migrate()
        try:
            yield emulator, database, Hub(connect(HubSettings(emulator.endpoint)), max_retries=0)
        finally:
            database.close()


def test_a_push_to_the_referenced_repo_shows_in_the_models_history_advisory_and_audit(
    world: tuple[HubEmulator, Database, Hub],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    emulator, database, hub = world
    emulator.publish(CODE, {"modeling.py": modeling(1), "helpers.py": b"X = 1\n"})
    emulator.publish(MODEL, {"README.md": b"# a model\n"}, title="create")
    referencing = emulator.publish(
        MODEL, {"config.json": config({"AutoModel": f"{CODE}--modeling.Model"})}, title="config"
    )
    backfill(database, hub, MODEL, clock=recorded_at)
    emulator.publish(CODE, {"modeling.py": modeling(2)}, title="change the model class")
    head = emulator.publish(MODEL, {"README.md": b"# a model, documented\n"}, title="docs")
    backfill(database, hub, MODEL, clock=recorded_at)

    with database.read_session() as session:
        added = changes_of(session, MODEL, referencing)
        moved = changes_of(session, MODEL, head)
        log = revision_log(session, MODEL)
    assert [(c.artifact, c.kind, c.path) for c in added if c.artifact == "remote_code"] == [
        ("remote_code", "reference_added", CODE)
    ]
    remote = [c for c in moved if c.artifact == "remote_code"]
    assert [(c.kind, c.path) for c in remote] == [("code_modified", f"{CODE}/modeling.py")]
    assert "this model runs it with trust_remote_code" in remote[0].message
    assert log[0].revision.sha == head

    advisories = build_all(database)
    with database.session() as session:
        for advisory in advisories:
            put_advisory(session, advisory)
    (at_head,) = [a for a in advisories if a.new_sha == head]
    changes = at_head.osv["database_specific"]["changes"]
    assert [(c["artifact"], c["kind"]) for c in changes] == [("remote_code", "code_modified")]

    monkeypatch.setenv("HF_ENDPOINT", emulator.endpoint)
    monkeypatch.setenv("NEURARCH_DATABASE_URL", f"sqlite:///{tmp_path / 'db.sqlite'}")
    monkeypatch.setenv("NEURARCH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("NEURARCH_CONFIG", raising=False)
    capsys.readouterr()
    code = main(["audit", f"{MODEL}@{referencing}", "--format", "json"])
    report = json.loads(capsys.readouterr().out)["pins"][0]
    assert code == 1
    kinds = {f["kind"] for f in report["findings"]}
    assert {"advisory", "remote-code"} <= kinds
    assert at_head.id in {f["advisory"]["id"] for f in report["findings"] if f["advisory"]}
    (unpinned,) = [f for f in report["findings"] if f["kind"] == "remote-code"]
    assert f"loads code from {CODE} at that repo's main" in unpinned["message"]

    published = Published(
        at_head.id,
        MODEL,
        at_head.old_sha,
        head,
        at_head.severity,
        at_head.summary,
        tuple((c["artifact"], c["kind"]) for c in changes),
    )
    assert published.security_relevant

    capsys.readouterr()
    assert main(["history", MODEL]) == 0
    printed = capsys.readouterr().out
    assert f"remote code {CODE}/modeling.py changed" in printed


def test_an_unreadable_referenced_repo_is_said_once_and_nothing_else_breaks(
    world: tuple[HubEmulator, Database, Hub],
) -> None:
    emulator, database, hub = world
    emulator.publish(MODEL, {"config.json": config({"AutoModel": "ghost/code--m.M"})})
    backfill(database, hub, MODEL, clock=recorded_at)
    with database.read_session() as session:
        (latest, *_) = revision_log(session, MODEL)
        changes = changes_of(session, MODEL, latest.revision.sha)
    (reference,) = [c for c in changes if c.artifact == "remote_code"]
    assert reference.kind == "reference_added"
    assert "error" in reference.new
