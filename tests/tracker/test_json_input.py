"""Upstream JSON of any depth or number size is a value or one JsonInputError, never a crash."""

from __future__ import annotations

import json
import math
import struct
import time
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storage import Database, changes_of, snapshot_at
from tests.storage.builders import recorded_at
from tracker.hub.api import connect
from tracker.hub.client import Hub
from tracker.hubsim import HubEmulator
from tracker.revision.backfill import backfill
from tracker.settings import HubSettings
from tracker.untrusted.artifacts import ArtifactParseError, parse_json
from tracker.untrusted.json_input import MAX_DEPTH, JsonInputError, JsonSyntaxError, read_json


def nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def test_nesting_up_to_the_limit_reads_and_one_more_level_is_refused() -> None:
    assert read_json(nested(MAX_DEPTH)) == json.loads(nested(MAX_DEPTH))
    with pytest.raises(JsonInputError, match=r"^nested more than 128 levels deep$"):
        read_json(nested(MAX_DEPTH + 1))


@pytest.mark.parametrize("depth", [200, 1_000, 100_000, 1_000_000])
def test_any_depth_is_one_error_naming_the_top_level_key(depth: int) -> None:
    document = b'{"ok": 1, "rope_scaling": ' + b'{"a":' * depth + b"1" + b"}" * depth + b"}"
    start = time.perf_counter()
    with pytest.raises(JsonInputError) as info:
        read_json(document)
    assert str(info.value) in (
        "rope_scaling is nested more than 128 levels deep",  # parsed, then measured
        "nested more than 128 levels deep",  # past the interpreter's stack while parsing
    )
    assert time.perf_counter() - start < 2.0


@pytest.mark.parametrize(
    ("document", "message"),
    [
        (b'{"hidden_size": ' + b"7" * 5000 + b"}", "hidden_size (a 5,000-digit integer)"),
        (b'{"a": {"b": [1, -' + b"9" * 4301 + b"]}}", "a.b[1] (a 4,301-digit integer)"),
        (b"1" * 10_000, "the document (a 10,000-digit integer)"),
    ],
)
def test_an_integer_too_long_to_convert_is_named_by_its_path(document: bytes, message: str) -> None:
    with pytest.raises(JsonInputError) as info:
        read_json(document)
    assert str(info.value) == f"{message} is not a plausible number"
    assert not isinstance(info.value, JsonSyntaxError)


def test_integers_up_to_the_limit_and_pythons_extensions_are_values() -> None:
    document = read_json(b'{"n": ' + b"9" * 4300 + b', "x": NaN, "y": 1e400, "z": -Infinity}')
    assert document["n"] == 10**4300 - 1
    assert math.isnan(document["x"]) and document["y"] == math.inf and document["z"] == -math.inf


@pytest.mark.parametrize(
    ("document", "message"),
    [
        (b'{"a": ,}', "invalid JSON at line 1 column 7: Expecting value"),
        (b'{"a": "\xff"}', "not UTF-8 at byte 7"),
    ],
)
def test_syntax_errors_say_where(document: bytes, message: str) -> None:
    with pytest.raises(JsonSyntaxError, match=f"^{message}$"):
        read_json(document)


def test_parse_json_turns_every_failure_into_artifact_parse_error() -> None:
    for bad in (nested(100_000), b'{"x": ' + b"1" * 5000 + b"}", b"{"):
        with pytest.raises(ArtifactParseError):
            parse_json(bad)


JSON_TEXT = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=10,
).map(json.dumps)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(text=JSON_TEXT, wraps=st.integers(0, 300), cut=st.integers(0, 50))
def test_any_json_wrapped_or_cut_is_a_value_or_one_error(text: str, wraps: int, cut: int) -> None:
    data = ("[" * wraps + text + "]" * wraps).encode()
    data = data[: len(data) - cut] if cut else data
    try:
        read_json(data)
    except JsonInputError as exc:
        assert str(exc)


@pytest.mark.parametrize("hub_emulator", [{"corpus": None}], indirect=True)
def test_a_safetensors_header_nested_100000_deep_is_a_recorded_header_error(
    hub_emulator: HubEmulator, database: Database
) -> None:
    header = nested(100_000)
    shard = struct.pack("<Q", len(header)) + header
    sha = hub_emulator.publish(
        "hostile/header",
        {"config.json": b"{}", "model.safetensors": shard},
        date=datetime(2026, 1, 1, tzinfo=UTC),
    )
    report = backfill(
        database,
        Hub(connect(HubSettings(hub_emulator.endpoint)), max_retries=0),
        "hostile/header",
        clock=recorded_at,
    )
    assert report.recorded == report.revisions
    with database.read_session() as session:
        manifest = snapshot_at(session, "hostile/header", sha).manifest
    assert manifest is not None
    error = manifest["headers"]["model.safetensors"]["error"]
    assert error.endswith("header is not JSON: nested more than 128 levels deep")


@pytest.mark.parametrize("hub_emulator", [{"corpus": None}], indirect=True)
def test_a_model_card_with_front_matter_nested_100000_deep_is_a_recorded_parse_error(
    hub_emulator: HubEmulator, database: Database
) -> None:
    readme = b"---\nlicense: " + nested(100_000) + b"\n---\n# card\n"
    sha = hub_emulator.publish(
        "hostile/card", {"README.md": readme}, date=datetime(2026, 1, 1, tzinfo=UTC)
    )
    report = backfill(
        database,
        Hub(connect(HubSettings(hub_emulator.endpoint)), max_retries=0),
        "hostile/card",
        clock=recorded_at,
    )
    assert report.recorded == report.revisions
    with database.read_session() as session:
        found = {(c.path, c.kind): c.message for c in changes_of(session, "hostile/card", sha)}
    assert "nested too deeply" in found["README.md", "parse_error"]
