"""Property: whatever snapshot and changes the tracker records, storage hands back equal."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta, timezone

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from storage import (
    Change,
    Database,
    FileEntry,
    Revision,
    Severity,
    Snapshot,
    changes_of,
    record_revision,
    snapshot_at,
)
from tests.storage.builders import RECORDED_AT

TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\x00"), max_size=40)
HEX = st.text(alphabet="0123456789abcdef", min_size=40, max_size=40)
JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False, width=32)
    | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=12,
)
ZONES = st.sampled_from(
    [UTC, timezone(timedelta(hours=5, minutes=30)), timezone(-timedelta(hours=8))]
)
DATES = st.builds(
    lambda seconds, zone: (
        datetime(2020, 1, 1, tzinfo=UTC).astimezone(zone) + timedelta(microseconds=seconds)
    ),
    st.integers(0, 10**15),
    ZONES,
)
FILES = st.lists(
    st.builds(
        FileEntry,
        path=TEXT.filter(bool),
        size=st.integers(0, 2**50),
        blob_id=HEX,
        lfs_sha256=st.none() | st.text(alphabet="0123456789abcdef", min_size=64, max_size=64),
    ),
    max_size=6,
    unique_by=lambda entry: entry.path,
)
CHANGES = st.lists(
    st.builds(
        Change,
        artifact=st.sampled_from(["config", "chat_template", "tokenizer", "weights"]),
        path=TEXT,
        kind=st.sampled_from(["added", "removed", "modified", "parse_error"]),
        old=JSON,
        new=JSON,
        severity=st.sampled_from(list(Severity)),
        message=TEXT,
    ),
    max_size=4,
)
_repos = itertools.count()


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    sha=HEX,
    parents=st.lists(HEX, max_size=2).map(tuple),
    date=DATES,
    title=TEXT,
    author=st.none() | TEXT,
    files=FILES,
    oversized=st.lists(TEXT, max_size=3).map(tuple),
    manifest=st.none() | st.dictionaries(TEXT, JSON, max_size=4),
    card=st.dictionaries(TEXT, JSON, max_size=4),
    changes=CHANGES,
)
def test_recorded_snapshot_and_changes_read_back_equal(
    database: Database,
    sha: str,
    parents: tuple[str, ...],
    date: datetime,
    title: str,
    author: str | None,
    files: list[FileEntry],
    oversized: tuple[str, ...],
    manifest: dict[str, object] | None,
    card: dict[str, object],
    changes: list[Change],
) -> None:
    repo = f"org/model-{next(_repos)}"
    snap = Snapshot(
        revision=Revision(repo, sha, parents, date, title, author),
        files=tuple(files),
        oversized=oversized,
        manifest=manifest,
        card=card,
    )
    with database.session() as session:
        assert record_revision(session, snap, changes, None, processed_at=RECORDED_AT)
    with database.read_session() as session:
        got = snapshot_at(session, repo, sha)
        assert got == snap
        assert list(got.card) == list(card)
        assert changes_of(session, repo, sha) == changes
