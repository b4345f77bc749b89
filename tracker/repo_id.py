"""Repo ids checked against the Hub's own naming rules before any request is made.

The rules are huggingface_hub's ``validate_repo_id`` plus the ``org/name``
shape the tracker needs: exactly one ``/``, each part of ``[A-Za-z0-9._-]``,
no ``--`` or ``..``, no leading or trailing ``.`` or ``-``, 96 characters at
most. A bad id fails here with the rule it breaks, not later as a 404.
"""

from __future__ import annotations

import re

from tracker.errors import RepoIdError

MAX_LENGTH = 96
_PART = re.compile(r"[A-Za-z0-9._-]+")


def validate_repo_id(repo_id: str) -> str:
    """Return ``repo_id`` unchanged if the Hub accepts it; raise RepoIdError naming the rule."""
    if not repo_id:
        raise RepoIdError("repo id is empty; expected ORG/NAME")
    if len(repo_id) > MAX_LENGTH:
        raise RepoIdError(f"repo id {repo_id!r} is {len(repo_id)} characters; at most {MAX_LENGTH}")
    parts = repo_id.split("/")
    if len(parts) != 2:
        raise RepoIdError(f"repo id {repo_id!r} must have the form ORG/NAME (exactly one '/')")
    for part in parts:
        _check_part(repo_id, part)
    return repo_id


def _check_part(repo_id: str, part: str) -> None:
    if not part:
        raise RepoIdError(f"repo id {repo_id!r} has an empty ORG or NAME")
    if not _PART.fullmatch(part):
        bad = sorted({c for c in part if not _PART.fullmatch(c)})
        raise RepoIdError(
            f"repo id {repo_id!r} contains {''.join(bad)!r}; only letters, digits, '.', '_', '-'"
        )
    if "--" in part or ".." in part:
        raise RepoIdError(f"repo id {repo_id!r} must not contain '--' or '..'")
    if part[0] in ".-" or part[-1] in ".-":
        raise RepoIdError(
            f"repo id {repo_id!r}: ORG and NAME must not start or end with '.' or '-'"
        )


__all__ = ["MAX_LENGTH", "validate_repo_id"]
