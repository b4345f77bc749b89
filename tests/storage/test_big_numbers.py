"""Numbers of any size read back the same from SQLite and PostgreSQL.

Each test runs on both backends (the ``database`` fixture) and asserts the exact
value and type read back, so a backend that turns 10**71 into a float, 1.0 into 1 or
refuses NaN fails here.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy import text

from storage import Change, Database, Severity, changes_of, plan_at, record_revision
from storage.json_text import dumps, dumps_for_sqlite
from tests.storage.builders import RECORDED_AT, revision, snapshot

BIG_INTS = [1, 2**53 + 1, 2**63 - 1, 2**63, 2**64 + 1, 10**71, -(2**63) - 1, -(10**71)]
BLOOM_TOTAL_SIZE = 256701667093757600000000000000000000000000000000000000000000000000000000


def _change(old: Any, new: Any) -> Change:
    return Change("weights", "model.safetensors.index.json", "modified", old, new,
                  Severity.LOW, "metadata.total_size changed")  # fmt: skip


def _record(database: Database, repo: str, changes: list[Change], plan: Any = None) -> str:
    rev = revision(repo, 0)
    with database.session() as session:
        assert record_revision(session, snapshot(rev, {}), changes, plan, processed_at=RECORDED_AT)
    return rev.sha


@pytest.mark.parametrize("number", BIG_INTS, ids=str)
def test_an_integer_of_any_size_reads_back_as_the_same_integer(
    database: Database, number: int
) -> None:
    sha = _record(
        database,
        "big/ints",
        [_change(number, {"metadata": {"total_size": number}}), _change([number], number)],
        plan={"parameters": {"total": number}},
    )
    with database.read_session() as session:
        first, second = changes_of(session, "big/ints", sha)
        plan = plan_at(session, "big/ints", sha)
    assert type(first.old) is int and first.old == number
    assert first.new == {"metadata": {"total_size": number}}
    assert second.old == [number] and type(second.new) is int and second.new == number
    assert plan == {"parameters": {"total": number}}


def test_bloom_total_size_is_kept_as_the_integer_the_index_declares(database: Database) -> None:
    sha = _record(database, "bigscience/bloom", [_change(None, BLOOM_TOTAL_SIZE)])
    with database.read_session() as session:
        (change,) = changes_of(session, "bigscience/bloom", sha)
    assert change.new == BLOOM_TOTAL_SIZE and type(change.new) is int
    assert json.dumps(change.new) == "2567016670937576" + "0" * 56


@pytest.mark.parametrize(
    ("written", "read"),
    [
        (1.0, 1.0),
        (-0.0, -0.0),
        (1.5e300, 1.5e300),
        (float("nan"), "NaN"),
        (float("inf"), "Infinity"),
        (float("-inf"), "-Infinity"),
        ({"rope_theta": float("nan")}, {"rope_theta": "NaN"}),
        ([1e400, 2], ["Infinity", 2]),
        (10**5000, "1" + "0" * 5000),
    ],
    ids=["1.0", "-0.0", "1.5e300", "NaN", "inf", "-inf", "nested NaN", "1e400", "5001 digits"],
)
def test_numbers_json_cannot_carry_are_stored_as_their_text_on_both_backends(
    database: Database, written: Any, read: Any
) -> None:
    sha = _record(database, "odd/numbers", [_change(None, written)])
    with database.read_session() as session:
        (change,) = changes_of(session, "odd/numbers", sha)
    assert change.new == read and type(change.new) is type(read)
    if isinstance(read, float):
        assert repr(change.new) == repr(read)  # -0.0 keeps its sign


def test_only_bare_numbers_are_bound_as_bytes_on_sqlite() -> None:
    assert dumps_for_sqlite(10**71) == b"1" + b"0" * 71
    assert dumps_for_sqlite(-1.0) == b"-1.0"
    assert dumps_for_sqlite({"n": 10**71}) == '{"n": 1' + "0" * 71 + "}"
    assert dumps_for_sqlite("123") == '"123"'
    assert dumps_for_sqlite(None) == "null"
    assert dumps([float("nan")]) == '["NaN"]'


def test_the_stored_text_is_standard_json_on_both_backends(database: Database) -> None:
    _record(database, "odd/text", [_change(float("nan"), {"n": 2**64 + 1})])
    with database.read_session() as session:
        old, new = session.execute(
            text("SELECT CAST(old AS TEXT), CAST(new AS TEXT) FROM changes")
        ).one()
    assert (old, new) == ('"NaN"', '{"n": 18446744073709551617}')
    assert json.loads(old, parse_constant=pytest.fail) == "NaN"
