"""Which repos a subscription's patterns name, and the keys its rows are found by.

A pattern is shell-style and case-sensitive (``fnmatch.fnmatchcase``):
``org/name``, ``org/*``, ``org/llama-*``, ``*``. Matching every subscription's
patterns against each recorded revision's repo would read them all inside
that revision's transaction, so each pattern is also stored as one key
(``subscription_repo_keys``, indexed) that a repo id can be looked up by:

- a pattern without ``*``, ``?`` or ``[`` is the repo id it names;
- one whose part before the first ``/`` has none is ``ORG/``: it can only
  name repos of that org (no repo id ends in ``/``);
- any other is ``*``: it may name any repo.

A revision of ``org/name`` reads only the rows keyed ``org/name``, ``org/``
or ``*`` (``lookup_keys``), then confirms each with ``names_repo``.
"""

from __future__ import annotations

from collections.abc import Iterable
from fnmatch import fnmatchcase
from typing import Final

from storage.repo_ids import RepoId

ANY_REPO: Final = "*"
_GLOB = frozenset("*?[")


def repo_key(pattern: str) -> str:
    """The key ``pattern`` is stored under (see the module docstring)."""
    if not _GLOB.intersection(pattern):
        return pattern
    org, slash, _ = pattern.partition("/")
    return f"{org}/" if slash and not _GLOB.intersection(org) else ANY_REPO


def lookup_keys(repo_id: RepoId) -> tuple[str, ...]:
    """The keys under which a pattern naming ``repo_id`` can be stored."""
    org, slash, _ = repo_id.partition("/")
    return (repo_id, f"{org}/", ANY_REPO) if slash else (repo_id, ANY_REPO)


def names_repo(patterns: Iterable[str], repo_id: RepoId) -> bool:
    """True if one of ``patterns`` names ``repo_id``."""
    return any(fnmatchcase(repo_id, pattern) for pattern in patterns)


__all__ = ["ANY_REPO", "lookup_keys", "names_repo", "repo_key"]
