"""Repo ids checked against the Hub's own naming rules before any request is made.

The rule itself is ``storage.check_repo_id`` (huggingface_hub's
``validate_repo_id`` plus the ``org/name`` shape the tracker needs: exactly
one ``/``, each part of ``[A-Za-z0-9._-]``, no ``--`` or ``..``, no leading or
trailing ``.`` or ``-``, no ``.git`` ending, 96 characters at most), kept in
storage so the webhook receiver in feeds applies the same one. Here it raises
the tracker's RepoIdError: a bad id fails with the rule it breaks, not later
as a 404.
"""

from __future__ import annotations

from storage.repo_ids import MAX_REPO_ID_LENGTH, InvalidRepoId, check_repo_id
from tracker.errors import RepoIdError

MAX_LENGTH = MAX_REPO_ID_LENGTH


def validate_repo_id(repo_id: str) -> str:
    """Return ``repo_id`` unchanged if the Hub accepts it; raise RepoIdError naming the rule."""
    try:
        return check_repo_id(repo_id)
    except InvalidRepoId as exc:
        raise RepoIdError(str(exc)) from None


__all__ = ["MAX_LENGTH", "validate_repo_id"]
