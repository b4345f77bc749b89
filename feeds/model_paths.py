"""The repo a ``/models/{org}/{name}`` URL names, checked once where the URL comes in.

A name the Hub would refuse is never tracked, so it gets the same 404 as an
untracked repo, and the readers behind the route take a checked ``RepoId``.
"""

from __future__ import annotations

from fastapi import HTTPException

from storage import InvalidRepoId, RepoId, repo_id


def path_repo_id(org: str, name: str) -> RepoId:
    """``ORG/NAME`` of a model URL; HTTP 404 (as for an untracked repo) if the Hub refuses it."""
    text = f"{org}/{name}"
    try:
        return repo_id(text)
    except InvalidRepoId:
        raise HTTPException(404, f"{text} is not tracked") from None
