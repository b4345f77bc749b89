"""The differs' shortcuts answer exactly what the long way answers."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import PurePosixPath
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from storage.records import FileEntry, Revision, Snapshot
from tracker.diff.files import suffix
from tracker.diff.kept import KeptByIdentity
from tracker.diff.revision import RevisionContent, diff_revisions
from tracker.diff.special_tokens import TokenNames, token_names, token_table
from tracker.diff.token_listings import DECODER, merged_listings
from tracker.untrusted.artifacts import Parsed

NOW = datetime(2025, 1, 1, tzinfo=UTC)
INDEX = "model.safetensors.index.json"
PATH_PARTS = st.sampled_from(["", ".", "..", "a", "b.BIN", ".hidden", "x.", "m.safetensors"])


@given(st.lists(PATH_PARTS, max_size=4).map("/".join), st.booleans())
def test_suffix_is_pathlibs_lower_cased(path: str, trailing: bool) -> None:
    path += "/" if trailing else ""
    assert suffix(path) == PurePosixPath(path).suffix.lower()


def test_suffix_of_listed_files() -> None:
    assert [suffix(p) for p in ("model.BIN", "a/b/tokenizer.json", ".gitattributes", "README")] == [
        ".bin",
        ".json",
        "",
        "",
    ]


class CountingSide:
    """A side whose token files are counted as they are read."""

    def __init__(self) -> None:
        self.reads = 0

    def value(self, path: str) -> Any:
        self.reads += 1
        if path == "added_tokens.json":
            return {"<|en|>": 50259}
        return None


def test_token_names_are_read_on_the_first_lookup_only() -> None:
    side = CountingSide()
    names = TokenNames(side)  # type: ignore[arg-type]  # a side is whatever has value()
    assert side.reads == 0
    assert names[50259] == "<|en|>"
    reads = side.reads
    assert 50259 in names and len(names) == 1
    assert side.reads == reads
    assert dict(TokenNames(None)) == {}


def revision_side(texts: dict[str, bytes], label: str) -> RevisionContent:
    keys = {path: hashlib.sha1(data).hexdigest() for path, data in texts.items()}
    revision = Revision("acme/model", hashlib.sha1(label.encode()).hexdigest(), (), NOW, label)
    files = tuple(FileEntry(path, len(data), keys[path]) for path, data in texts.items())
    return RevisionContent(Snapshot(revision, files, keys), texts)


def emptied(document: dict[str, Any]) -> None:
    """Every dict of ``document`` cleared in place, the deepest first."""
    for value in document.values():
        if isinstance(value, dict):
            emptied(value)
    document.clear()


def test_a_change_keeps_its_values_as_written_when_the_parsed_document_is_rewritten() -> None:
    old_config = {"rope_scaling": {"factor": 8.0, "type": "llama3"}, "vocab_size": 32000}
    new_config = {"rope_scaling": {"factor": 16.0, "type": "llama3"}, "vocab_size": 32000}
    index = {"metadata": {"total_size": 10}, "weight_map": {"w": "model.safetensors"}}
    old = revision_side({"config.json": json.dumps(old_config).encode()}, "a")
    new = revision_side(
        {
            "config.json": json.dumps(new_config).encode(),
            "model.safetensors.index.json": json.dumps(index).encode(),
        },
        "b",
    )
    changes = diff_revisions(old, new)
    # later readers of the revision (transformers' config classes) rewrite dicts in place
    for side, path in ((old, "config.json"), (new, "config.json"), (new, INDEX)):
        emptied(side.value(path))
    assert {(c.path, c.kind): (c.old, c.new) for c in changes} == {
        ("config.json", "modified"): (
            {"factor": 8.0, "type": "llama3"},
            {"factor": 16.0, "type": "llama3"},
        ),
        (INDEX, "added"): (None, index),
    }


def test_kept_results_are_derived_once_per_object_and_dropped_oldest_first() -> None:
    kept: KeptByIdentity[int] = KeptByIdentity(2)
    derived: list[object] = []

    def derive(value: dict[str, int]) -> int:
        derived.append(value)
        return len(value)

    one, two, three = {"a": 1}, {"a": 1}, {"b": 2, "c": 3}
    assert [kept.get("x", (v,), lambda v=v: derive(v)) for v in (one, one, two, one)] == [1] * 4
    assert derived == [one, two]  # an equal value parsed anew is another object
    assert kept.get("y", (one,), lambda: derive(one)) == 1  # another label, derived again
    assert kept.get("x", (three,), lambda: derive(three)) == 2
    assert kept.get("x", (one,), lambda: derive(one)) == 1  # dropped: held two at most
    assert len(derived) == 5


def test_token_tables_are_shared_while_the_parse_cache_hands_the_same_value() -> None:
    config = json.dumps({"added_tokens_decoder": {"7": {"content": "<x>", "special": True}}})
    texts = {"tokenizer_config.json": config.encode()}
    cache: dict[tuple[str, str], Parsed] = {}
    first, second = revision_side(texts, "a"), revision_side(texts, "b")
    first.cache = second.cache = cache  # a walk's revisions share its parse cache
    table = token_table(first)
    assert token_table(second) is table and token_names(second) == {7: "<x>"}
    anew = revision_side(texts, "c")  # its own cache: the file parsed again
    assert token_table(anew) == table and token_table(anew) is not table


def merged_one_by_one(values: list[Any]) -> dict[str, Any]:
    """How listings were merged before ``merged_listings``: each into a new copy."""
    into: dict[str, Any] = {}
    for value in values:
        for key, item in (value if isinstance(value, dict) else {}).items():
            if key == DECODER and isinstance(item, dict):
                into[key] = {**into.get(key, {}), **item}
            else:
                into[key] = item
    return into


ENTRY = st.fixed_dictionaries({"content": st.sampled_from(["<s>", "</s>"])}) | st.integers(0, 3)
LISTING_VALUES = (
    st.none()
    | st.integers(0, 3)
    | st.dictionaries(
        st.sampled_from([DECODER, "<|en|>", "<s>"]),
        st.dictionaries(st.sampled_from(["0", "1", "2", "7"]), ENTRY, max_size=3)
        | st.integers(0, 9)
        | st.none(),
        max_size=3,
    )
)


def merged_as(merge: Any, values: list[Any]) -> object:
    """The merged mapping with every dict's key order, or the error merging raises."""
    try:
        return json.dumps(merge(values))
    except TypeError as exc:
        return type(exc)


@settings(max_examples=1000, deadline=None, derandomize=True)
@given(st.lists(LISTING_VALUES, max_size=8))
def test_merged_listings_are_the_listings_merged_one_by_one(values: list[Any]) -> None:
    assert merged_as(merged_listings, values) == merged_as(merged_one_by_one, values)
    if isinstance(merged_as(merged_listings, values), str):
        decoder = merged_listings(values).get(DECODER)
        if isinstance(decoder, dict):  # gathered in a dict of its own, none of the values'
            assert all(decoder is not v.get(DECODER) for v in values if isinstance(v, dict))
