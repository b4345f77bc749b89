"""Queries a daemon runs against every tracked repo stay one statement, whatever N is."""

from __future__ import annotations

from datetime import timedelta

from storage import Database, ensure_repo, newest_last_modified, record_last_modified
from tests.storage.builders import BASE_DATE


def test_the_watermark_is_the_newest_recorded_last_modified(database: Database) -> None:
    with database.session() as session:
        for n in range(3):
            ensure_repo(session, f"org/model-{n}", now=BASE_DATE)
        assert newest_last_modified(session) is None
        record_last_modified(session, "org/model-0", BASE_DATE + timedelta(hours=2))
        record_last_modified(session, "org/model-2", BASE_DATE + timedelta(hours=5))
    with database.read_session() as session:
        newest = newest_last_modified(session)
    assert newest == BASE_DATE + timedelta(hours=5)
    assert newest is not None and newest.utcoffset() == timedelta(0)
