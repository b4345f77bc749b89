"""Badges and pages read stored summaries, never a snapshot's manifest, and clip upstream text.

A badge that reloaded the whole page's data per request (the snapshot row with
its manifest included) would take seconds for a checkpoint header of millions of
tensors, and an unclipped config key of megabytes would make a page twice its
size. Here a repo is recorded with a ~6 MB manifest, a 300,000-character
config key and card field; the statements each request runs are captured
from the engine, on SQLite and PostgreSQL.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

import httpx
from sqlalchemy import event

import estimator
from estimator.deltas import stored_plan
from feeds import PublishSettings, create_app, figures
from feeds.state import MAX_SHOWN_CHARS
from storage import Database, record_revision
from storage.records import Change, Revision, Severity, Snapshot
from tests.feeds.conftest import ServerThread
from tests.feeds.test_engine_column import CONTEXT_4K
from tests.storage.builders import RECORDED_AT

START = datetime(2024, 7, 23, tzinfo=UTC)
HUGE = "k" * 300_000
TENSORS = 60_000


def record_hostile(database: Database, repo_id: str) -> dict[str, object]:
    plan = estimator.plan(json.loads(CONTEXT_4K.read_text())).to_json()
    manifest = {
        f"model.layers.{i}.weight": {"dtype": "F16", "shape": [64, 64], "file": "m.safetensors"}
        for i in range(TENSORS)
    }
    sha = hashlib.sha1(repo_id.encode()).hexdigest()
    snapshot = Snapshot(
        Revision(repo_id, sha, (), START, f"title {HUGE}"),
        (),
        manifest=manifest,
        card={"license": HUGE},
    )
    # the path column holds 1,024 characters on PostgreSQL; the key reaches the message and value
    change = Change("config", "k" * 1000, "added", None, HUGE, Severity.MODERATE, f"{HUGE} added")
    with database.session() as session:
        record_revision(session, snapshot, [change], plan, processed_at=RECORDED_AT)
    return plan


@contextmanager
def statements(database: Database) -> Iterator[list[str]]:
    seen: list[str] = []

    def capture(conn: object, cursor: object, statement: str, *args: object) -> None:
        seen.append(statement)

    event.listen(database.engine, "before_cursor_execute", capture)
    try:
        yield seen
    finally:
        event.remove(database.engine, "before_cursor_execute", capture)


def test_badge_reads_stored_summaries_and_page_text_is_clipped(database: Database) -> None:
    plan = record_hostile(database, "org/huge")
    server = ServerThread()
    app = create_app(database, settings=PublishSettings(base_url=server.url, accuracy=None))
    with server.mount(app), httpx.Client(base_url=server.url, timeout=60) as client:
        with statements(database) as badge_sql:
            badge = client.get("/models/org/huge/badge.json")
        with statements(database) as page_sql:
            page = client.get("/models/org/huge")
        markdown = client.get("/models/org/huge.md")
        missing = client.get("/models/org/nope/badge.json")

    assert badge.status_code == 200
    # the verdict at the stated workload, from the stored plan alone
    assert badge.json() == figures.badge(stored_plan(plan))
    assert badge.json()["message"].endswith("A10G")
    touched = " ".join(badge_sql).lower()
    assert "snapshots" not in touched and "changes" not in touched, badge_sql
    assert len(badge_sql) <= 4, badge_sql
    assert not any("snapshots.manifest" in s.lower() for s in page_sql), page_sql
    assert missing.status_code == 404

    for answer in (page, markdown):
        assert answer.status_code == 200
        assert len(answer.content) < 200_000, len(answer.content)
        assert "k" * MAX_SHOWN_CHARS + "…" in answer.text
        assert "k" * (MAX_SHOWN_CHARS + 1) not in answer.text
