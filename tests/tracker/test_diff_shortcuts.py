"""The differs' shortcuts answer exactly what the long way answers."""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tracker.diff.files import suffix
from tracker.diff.special_tokens import TokenNames

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
