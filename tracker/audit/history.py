"""Where a repo's main history comes from: the Hub, as it lists main now.

An audit places each pin and each advisory on main's first-parent history,
oldest first: an advisory affects a pin when its transition starts at or
after the pinned revision. A pin that is not on main (a PR ref, or a revision
a force-push removed) is said so, not guessed at.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from tracker.errors import HubError
from tracker.hub.client import Hub

FULL_SHA_LENGTH = 40


class MainHistory(Protocol):
    """Main's commit shas of a repo, oldest first; None when this source does not know the repo."""

    def shas(self, repo_id: str) -> list[str] | None:
        """None or empty when this source lacks the repo (``FirstKnown`` then asks the next).

        May raise HubError (a TrackerError) when the source cannot be read.
        """
        ...


class HubHistory:
    """Main as the Hub lists it now (one paged commit listing per repo)."""

    def __init__(self, hub: Hub) -> None:
        self._hub = hub

    def shas(self, repo_id: str) -> list[str] | None:
        """One paged commit listing of main from the Hub (network); raises HubError on failure."""
        return [r.sha for r in self._hub.commits(repo_id)]


class FirstKnown:
    """The first of several histories that knows the repo, each asked once per repo."""

    def __init__(self, sources: Sequence[MainHistory]) -> None:
        self._sources = sources
        self._known: dict[str, list[str]] = {}

    def shas(self, repo_id: str) -> list[str] | None:
        """The first source's non-empty history, cached per repo.

        Raises HubError when no source knows the repo: an empty main is never read as clean.
        """
        if repo_id not in self._known:
            for source in self._sources:
                found = source.shas(repo_id)
                if found:
                    self._known[repo_id] = found
                    break
            else:
                raise HubError(f"{repo_id}: no history found on main")
        return self._known[repo_id]


def locate(history: Sequence[str], revision: str) -> int | None:
    """The position of ``revision`` (a full sha or a unique prefix of 7+ hex digits) on main."""
    wanted = revision.lower()
    if len(wanted) == FULL_SHA_LENGTH:
        return history.index(wanted) if wanted in history else None
    if len(wanted) < 7:
        return None
    matches = [i for i, sha in enumerate(history) if sha.startswith(wanted)]
    return matches[0] if len(matches) == 1 else None


__all__ = ["FirstKnown", "HubHistory", "MainHistory", "locate"]
