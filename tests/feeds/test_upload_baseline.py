"""The model's upload is a repo's baseline; what changes after it is published."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from feeds.publish import is_upload
from storage.records import Change, Revision, RevisionOutcome, Severity, Snapshot

WHEN = datetime(2024, 4, 18, tzinfo=UTC)
INITIAL = Revision("o/m", "a" * 40, (), WHEN, "initial commit")
UPLOAD = Revision("o/m", "b" * 40, ("a" * 40,), WHEN, "Upload folder")


def outcome(
    snapshot: Snapshot,
    changes: tuple[Change, ...],
    plan: Mapping[str, Any] | None,
    previous: Revision,
    previous_plan: Mapping[str, Any] | None,
) -> RevisionOutcome:
    """The outcome record of ``snapshot`` after ``previous`` (a snapshot with no files)."""
    return RevisionOutcome(
        snapshot, Snapshot(previous, ()), changes, plan=plan, previous_plan=previous_plan
    )


def change(artifact: str, path: str, kind: str) -> Change:
    return Change(artifact, path, kind, None, None, Severity.HIGH, f"{path} {kind}")


def test_the_revision_that_brings_config_json_is_the_baseline() -> None:
    upload = outcome(
        Snapshot(UPLOAD, ()),
        (change("config", "config.json", "added"), change("tokenizer", "tokenizer.json", "added")),
        {"schema_version": "1.0"},
        INITIAL,
        None,
    )
    assert is_upload(upload)


def test_code_added_to_an_existing_model_is_not_the_baseline() -> None:
    later = outcome(
        Snapshot(UPLOAD, ()),
        (change("code", "modeling_x.py", "added"),),
        {"schema_version": "1.0"},
        INITIAL,
        {"schema_version": "1.0"},
    )
    assert not is_upload(later)


def test_a_config_that_parses_again_is_not_the_baseline() -> None:
    fixed = outcome(
        Snapshot(UPLOAD, ()),
        (change("config", "config.json", "parse_fixed"),),
        {"schema_version": "1.0"},
        INITIAL,
        None,
    )
    assert not is_upload(fixed)
