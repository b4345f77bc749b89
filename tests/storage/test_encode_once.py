"""A revision's JSON is encoded once: the one encoding must equal what checking, repairing
and then encoding (as storage did before) wrote, and a remembered manifest must be the
same JSON text, never merely an equal value."""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from storage import open_database, record_revision, snapshot_at
from storage.json_text import Encoded, dumps, dumps_for_sqlite, encoded_repaired
from storage.manifest_keys import ManifestKeys
from storage.storable import json_column, storable_revision
from storage.values import any_unstorable, holds_unstorable, storable_text
from tests.storage.builders import RECORDED_AT, revision, snapshot

# Every character, lone surrogates and NUL included: what upstream may commit.
TEXT = st.text(alphabet=st.characters(), max_size=12)
HOSTILE = st.sampled_from(["\x00", "\ud800", "a\udfffb", "\\u0000", "\U0001f600"])
SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | TEXT | HOSTILE
JSON: st.SearchStrategy[Any] = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.lists(inner, max_size=3).map(tuple)
        | st.dictionaries(TEXT | HOSTILE, inner, max_size=4)
    ),
    max_leaves=16,
)
STRUCTURES = st.one_of(
    st.lists(JSON, max_size=4), st.dictionaries(TEXT | HOSTILE, JSON, max_size=4)
)


@given(STRUCTURES)
def test_one_encoding_equals_the_check_then_repair_then_encode_it_replaces(value: Any) -> None:
    encoded, repaired = encoded_repaired(value)
    assert encoded.text == dumps(storable_text(value))
    assert repaired == holds_unstorable(value)
    assert dumps(encoded) == encoded.text
    assert dumps_for_sqlite(encoded) == dumps_for_sqlite(storable_text(value))


@given(JSON)
def test_a_change_value_binds_what_the_column_wrote_from_the_repaired_value(value: Any) -> None:
    assert dumps(json_column(value)) == dumps(storable_text(value))


def test_an_integer_past_the_digit_limit_is_flagged_as_the_check_flagged_it() -> None:
    """json cannot write it as it is, so the old check called the card unstorable: the
    revision keeps that finding, and the text stays the digits' string."""
    card = {"parameters": 10**5000, "license": "mit"}
    encoded, repaired = encoded_repaired(card)
    assert repaired is holds_unstorable(card) is True
    assert encoded.text == dumps(storable_text(card))
    assert json.loads(encoded.text)["parameters"] == "1" + "0" * 5000


def test_a_value_json_cannot_write_is_left_to_the_column_which_refuses_it() -> None:
    value = {"when": {1, 2}}
    assert json_column(value) == value
    with pytest.raises(TypeError):
        dumps(json_column(value))


@given(st.lists(TEXT | HOSTILE, max_size=6))
def test_paths_are_searched_joined_as_the_json_check_searched_them(paths: list[str]) -> None:
    assert any_unstorable(paths) == holds_unstorable(paths)


@given(JSON)
def test_a_rebuilt_manifest_has_the_digest_of_the_one_it_copies(value: Any) -> None:
    keys = ManifestKeys()
    assert keys.digest(copy.deepcopy(value)) == keys.digest(value)


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ({"a": 1}, {"a": 1.0}),
        ({"a": 1}, {"a": True}),
        ({"a": 0.0}, {"a": -0.0}),
        ({"a": 1, "b": 2}, {"b": 2, "a": 1}),
    ],
)
def test_values_python_calls_equal_but_json_writes_apart_have_different_digests(
    one: dict[Any, Any], other: dict[Any, Any]
) -> None:
    keys = ManifestKeys()
    assert one == other
    assert keys.digest(one) != keys.digest(other)


def test_a_value_marshal_cannot_write_has_no_digest_and_is_never_remembered() -> None:
    class Shape(list[int]):
        pass

    keys = ManifestKeys()
    digest = keys.digest({"shape": Shape([1, 2])})
    assert digest is None
    keys.remember(digest, "k", False)
    assert keys.get(digest) is None


def test_the_oldest_manifest_is_forgotten_past_the_size() -> None:
    keys = ManifestKeys(size=2)
    digests = [keys.digest({"n": n}) for n in range(3)]
    for n, digest in enumerate(digests):
        keys.remember(digest, f"key{n}", n == 1)
    assert [keys.get(digest) for digest in digests] == [None, ("key1", True), ("key2", False)]


def test_a_manifest_seen_before_takes_its_remembered_key_and_bytes_are_made_on_demand() -> None:
    manifest = {"tensors": {"seen.before": {"dtype": "BF16", "shape": [2, 3]}}, "weight_map": {}}
    taken = snapshot(revision("acme/remembered", 0), {})
    first = storable_revision(replace(taken, manifest=manifest), None).manifest
    again = storable_revision(replace(taken, manifest=copy.deepcopy(manifest)), None).manifest
    text = json.dumps(manifest)
    assert first is not None and first.data == text.encode()
    assert again is not None and again.data is None
    assert again.key == first.key == hashlib.sha256(text.encode()).hexdigest()
    assert again.stored_bytes() == text.encode()


def test_a_remembered_manifest_is_stored_in_a_database_that_lacks_its_blob(
    tmp_path: Path,
) -> None:
    """Two databases in one process: the second never saw the manifest's blob, which the
    first's encoding is remembered for, and must still be given its bytes."""
    manifest = {"tensors": {"lm_head.weight": {"dtype": "F16", "shape": [7, 11]}}}
    stored = []
    for name in ("one", "two"):
        database = open_database(f"sqlite:///{tmp_path / name}.db")
        database.migrate()
        rev = revision("acme/two-stores", 0)
        with database.session() as session:
            assert record_revision(
                session,
                replace(snapshot(rev, {}), manifest=copy.deepcopy(manifest)),
                [],
                None,
                processed_at=RECORDED_AT,
            )
        with database.read_session() as session:
            stored.append(snapshot_at(session, "acme/two-stores", rev.sha).manifest)
        database.close()
    assert stored == [manifest, manifest]


def test_encoded_text_is_bound_as_it_is() -> None:
    assert dumps(Encoded("[1]")) == "[1]"
    assert dumps_for_sqlite(Encoded("7")) == b"7"
