"""Repo ids are checked with the Hub's rules before any request."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tracker.errors import RepoIdError
from tracker.hub.repo_id import validate_repo_id


@pytest.mark.parametrize(
    "repo_id", ["meta-llama/Llama-2-7b-hf", "a/b", "Org_1/name.v2", "x/" + "n" * 94]
)
def test_hub_style_ids_are_accepted(repo_id: str) -> None:
    assert validate_repo_id(repo_id) == repo_id


@pytest.mark.parametrize(
    ("repo_id", "rule"),
    [
        ("", "empty"),
        ("llama", "exactly one '/'"),
        ("a/b/c", "exactly one '/'"),
        ("a/b c", "only letters"),
        ("a/b--c", "'--' or '..'"),
        ("a/b..c", "'--' or '..'"),
        ("a/.b", "start or end"),
        ("a/b-", "start or end"),
        ("a/" + "n" * 95, "at most 96"),
        ("../etc", "'--' or '..'"),
        ("/b", "empty"),
    ],
)
def test_bad_ids_name_the_rule_they_break(repo_id: str, rule: str) -> None:
    with pytest.raises(RepoIdError, match=rule.replace("(", r"\(")):
        validate_repo_id(repo_id)


@given(st.text(max_size=120))
def test_validation_never_fails_with_anything_but_repo_id_error(text: str) -> None:
    with contextlib.suppress(RepoIdError):
        assert validate_repo_id(text) == text
