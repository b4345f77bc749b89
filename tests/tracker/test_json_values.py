"""``json_equal`` answers what comparing JSON texts answered; ``json_copy`` copies as deepcopy did.

The token listings compared entries by their ``json.dumps(..., sort_keys=True)`` texts
and the JSON differ copied values with ``copy.deepcopy``; both are compared here with
their replacements over generated values built to reach the corners (numbers of three
JSON types, NaN, ``-0.0``, infinities, keys that are not strings, tuples: whatever JSON
can write) and over every consecutive pair of versions of a JSON file in the recorded hub corpus.
"""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from tracker.diff.common import json_copy, json_equal
from tracker.hubsim.corpus import load_corpus
from tracker.untrusted.artifacts import ArtifactParseError, parse_json


def texts_equal(a: Any, b: Any) -> bool:
    """How the token listings compared two values before ``json_equal``."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-2, 2)
    | st.sampled_from([0.0, -0.0, 1.0, 2.0, 1e16, math.inf, -math.inf])
    | st.builds(float, st.just("nan"))
    | st.sampled_from(["", "1", "true", "null", "NaN", "é", "\ud800"])
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.lists(inner, max_size=3).map(tuple)
        | st.dictionaries(st.sampled_from(["a", "b", "content", "1"]), inner, max_size=4)
        | st.dictionaries(st.sampled_from([1, "1", "2"]), inner, max_size=2)
    ),
    max_leaves=12,
)


def alike(value: Any) -> Any:
    """A value that ``==`` or the JSON text may take for ``value``."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return float(value)
    if isinstance(value, float) and math.isfinite(value):
        return -value if value == 0 else value
    if isinstance(value, list):
        return tuple(alike(v) for v in value)
    if isinstance(value, dict):
        return {k: alike(v) for k, v in reversed(value.items())}
    return value


@st.composite
def pairs(draw: st.DrawFn) -> tuple[Any, Any]:
    a = draw(VALUES)
    b = draw(st.sampled_from([a, copy.deepcopy(a), alike(a)]) | VALUES)
    return (a, b) if draw(st.booleans()) else (b, a)


def writable(value: Any) -> bool:
    """Whether ``json.dumps(..., sort_keys=True)`` writes it (keys of mixed types do not
    sort); parsed JSON and the listings made of it always are."""
    try:
        json.dumps(value, sort_keys=True)
    except TypeError:
        return False
    return True


@settings(max_examples=2000, deadline=None, derandomize=True)
@given(pairs())
def test_json_equal_is_the_texts_compared(pair: tuple[Any, Any]) -> None:
    a, b = pair
    assume(writable(a) and writable(b))
    assert json_equal(a, b) == texts_equal(a, b)


def test_json_equal_on_the_corners() -> None:
    nan = float("nan")
    assert json_equal(nan, float("nan")) and not json_equal(0.0, -0.0)
    assert not json_equal(1, True) and not json_equal(1, 1.0) and not json_equal(None, "null")
    assert json_equal({"a": [1, {"b": nan}]}, {"a": [1, {"b": nan}]})
    assert json_equal([1, 2], (1, 2)) and json_equal({1: "x"}, {"1": "x"})


JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=2), inner),
    max_leaves=12,
)


def containers(value: Any) -> list[int]:
    """The identities of every dict and list in ``value``."""
    if isinstance(value, dict):
        return [id(value), *(i for v in value.values() for i in containers(v))]
    if isinstance(value, list):
        return [id(value), *(i for v in value for i in containers(v))]
    return []


@settings(max_examples=500, deadline=None, derandomize=True)
@given(JSON_VALUES)
def test_json_copy_is_deepcopy_of_parsed_json(value: Any) -> None:
    copied = json_copy(value)
    assert json.dumps(copied) == json.dumps(copy.deepcopy(value))
    assert not set(containers(copied)) & set(containers(value))


def test_json_equal_and_copy_over_every_corpus_file_history(corpus_dir: Path) -> None:
    versions = json_versions(corpus_dir)
    for _, before, after in versions:
        assert json_equal(before, after) == texts_equal(before, after)
        assert json.dumps(json_copy(after)) == json.dumps(after)
        if isinstance(before, dict) and isinstance(after, dict):
            for key in before.keys() & after.keys():
                assert json_equal(before[key], after[key]) == texts_equal(before[key], after[key])


def json_versions(corpus_dir: Path) -> list[tuple[str, Any, Any]]:
    """(path, previous version, next version) of every JSON file each repo's commits rewrote."""
    found = []
    for history in load_corpus(corpus_dir).values():
        last: dict[str, Any] = {}
        for commit in history:
            for path, data in commit.files.items():
                if not path.endswith(".json"):
                    continue
                try:
                    value = parse_json(data)
                except ArtifactParseError:
                    continue
                if path in last:
                    found.append((path, last[path], value))
                last[path] = value
    return found
