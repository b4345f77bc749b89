"""storage.repo_id is the one repo-id rule every room applies (the Hub's own rules)."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from storage import InvalidRecord, InvalidRepoId, repo_id

HOSTILE = [
    "../../etc",
    "a/b/c",
    "acme/mo\x00del",
    "acme/" + "n" * 10_000,
    "<script>alert(1)</script>",
    "acme/<script>",
    "acme/model.git",
    "acme/..",
    "acme\\model",
    "acme/mödel",
    "acme/model%2F..",
    " acme/model",
    "acme/model\n",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_ids_are_refused_with_a_short_message(text: str) -> None:
    with pytest.raises(InvalidRepoId) as caught:
        repo_id(text)
    message = str(caught.value)
    assert "\n" not in message.replace("\\n", "")
    assert len(message) < 200
    assert isinstance(caught.value, InvalidRecord) and isinstance(caught.value, ValueError)


def test_a_long_id_is_cut_short_in_the_message() -> None:
    with pytest.raises(InvalidRepoId, match=r"is 10005 characters; at most 96") as caught:
        repo_id("acme/" + "n" * 10_000)
    assert "n" * 61 not in str(caught.value)


@pytest.mark.parametrize("text", ["meta-llama/Llama-2-7b-hf", "a/b", "Org_1/name.v2"])
def test_hub_ids_pass_unchanged(text: str) -> None:
    assert repo_id(text) == text


@given(st.text(max_size=120))
def test_only_invalid_repo_id_is_ever_raised(text: str) -> None:
    with contextlib.suppress(InvalidRepoId):
        assert repo_id(text) == text
