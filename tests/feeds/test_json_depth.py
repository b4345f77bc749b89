"""The depth scan agrees with the parser on every JSON document, and parse_json never recurses."""

from __future__ import annotations

import contextlib
import json
import time
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from feeds.limits import JsonInvalid, JsonTooDeep, RequestRefused, json_depth, parse_json

TRICKY_TEXT = st.text(alphabet='[]{}"\\:, ab\u225b\U0001f600', max_size=12)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | TRICKY_TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TRICKY_TEXT, inner, max_size=4),
    max_leaves=40,
)


def depth(value: Any) -> int:
    """The nesting depth as the definition reads (recursive: fine for the small test values)."""
    if isinstance(value, list):
        return 1 + max((depth(item) for item in value), default=0)
    if isinstance(value, dict):
        return 1 + max((depth(item) for item in value.values()), default=0)
    return 0


@given(JSON_VALUES, st.sampled_from(["utf-8", "utf-16-le", "utf-16-be", "utf-32"]), st.booleans())
def test_the_scan_counts_what_the_parser_nests(value: Any, encoding: str, ascii_only: bool) -> None:
    body = json.dumps(value, ensure_ascii=ascii_only).encode(encoding)
    assert json_depth(body) == depth(value)


@given(st.text(alphabet='[]{}"\\:,1 a', max_size=300))
def test_parse_json_never_raises_anything_but_a_refusal(text: str) -> None:
    with contextlib.suppress(RequestRefused):
        parse_json(text.encode(), max_depth=8)


@pytest.mark.parametrize(
    ("body", "error", "message"),
    [
        (b"[" * 100_000 + b"]" * 100_000, JsonTooDeep, "nests 100000 levels deep; at most 64"),
        ('["\u225b", ['.encode("utf-16-le") * 40_000, JsonTooDeep, "nests 80000 levels"),
        (b'{"a": NaN}', JsonInvalid, "NaN is not a JSON number"),
        (b"\xff", JsonInvalid, "not UTF-8 JSON"),
        (b'{"a": 1', JsonInvalid, "not valid JSON: Expecting ',' delimiter at line 1 column 8"),
    ],
)
def test_hostile_bodies_become_typed_refusals(
    body: bytes, error: type[RequestRefused], message: str
) -> None:
    with pytest.raises(error, match=message):
        parse_json(body)
    assert error.status == 400


def test_a_megabyte_of_brackets_is_scanned_in_linear_time() -> None:
    small, large = b"[" * 65_536, b"[" * (16 * 65_536)
    started = time.perf_counter()
    assert json_depth(small) == 65_536
    small_seconds = time.perf_counter() - started
    started = time.perf_counter()
    assert json_depth(large) == 16 * 65_536
    large_seconds = time.perf_counter() - started
    assert large_seconds < 1.0
    assert large_seconds < 64 * max(small_seconds, 1e-4)
