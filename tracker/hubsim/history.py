"""The commit model: repos, commits with parents, refs, and the trees they hold.

A repo starts with the Hub's system "initial commit" (the default .gitattributes, as
the Hub writes it), then replays its recorded commits in date order. A commit's
committed files are its parent's with its own on top, minus its deletions; commits on
``main`` chain on ``main``, a pull request's commits chain on the main commit before
them (and on the pull request's earlier commits), and a commit reachable only by sha
hangs off the main commit before it.

Shas: the upstream sha where the corpus has one; otherwise a sha1 over the repo, the
parent, the date, the title and every path with its blob id, so the same history
always gets the same shas.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from tracker.hubsim.blobs import GITATTRIBUTES, Blob, regular_blob
from tracker.hubsim.corpus import MAIN, RecordedCommit

INITIAL_TITLE = "initial commit"
GatedMode = Literal[False, "auto", "manual"]


@dataclass(frozen=True)
class Commit:
    """One commit: identity, lineage, words, and the full committed tree."""

    sha: str
    parents: tuple[str, ...]
    date: datetime
    title: str
    message: str
    authors: tuple[str, ...]
    files: Mapping[str, Blob]


@dataclass
class Repo:
    """A model repo's mutable state; the emulator changes it only under its lock."""

    repo_id: str
    created_at: datetime
    commits: dict[str, Commit] = field(default_factory=dict)
    branches: dict[str, str] = field(default_factory=dict)
    pull_requests: dict[int, str] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    gated: GatedMode = False
    private: bool = False
    disabled: bool = False
    tokens: frozenset[str] = frozenset()
    """Tokens that may read it while it is private or gated."""

    @property
    def author(self) -> str:
        """The namespace part of the repo id, as the Hub's ``author`` field gives it."""
        return self.repo_id.split("/")[0]

    def history(self, head: str) -> list[Commit]:
        """First-parent history from ``head``, newest first."""
        chain = []
        sha: str | None = head
        while sha is not None:
            commit = self.commits[sha]
            chain.append(commit)
            sha = commit.parents[0] if commit.parents else None
        return chain

    def main(self) -> list[Commit]:
        """The default branch's first-parent history, newest first."""
        return self.history(self.branches[MAIN])

    def resolve(self, revision: str) -> Commit | None:
        """``HEAD``, a branch, ``refs/heads/B``, a tag, ``refs/tags/T``, ``refs/pr/N``, a full
        sha or a unique prefix of 7+.

        ``HEAD`` is the default branch: @huggingface/hub's modelInfo asks
        ``/revision/HEAD`` when no revision is given, and the Hub answers it as main.
        """
        if revision == "HEAD":
            revision = MAIN
        name = revision.removeprefix("refs/heads/")
        if name in self.branches:
            return self.commits[self.branches[name]]
        tag = revision.removeprefix("refs/tags/")
        if tag in self.tags:
            return self.commits[self.tags[tag]]
        if revision.startswith("refs/pr/") and revision[8:].isdigit():
            sha = self.pull_requests.get(int(revision[8:]))
            return self.commits[sha] if sha else None
        if revision in self.commits:
            return self.commits[revision]
        lowered = revision.lower()
        if len(lowered) >= 7 and all(c in "0123456789abcdef" for c in lowered):
            matches = [sha for sha in self.commits if sha.startswith(lowered)]
            if len(matches) == 1:
                return self.commits[matches[0]]
        return None


def apply_changes(
    base: Mapping[str, Blob], files: Mapping[str, bytes], deletions: Iterable[str]
) -> dict[str, Blob]:
    """The committed tree after writing ``files`` and removing ``deletions``."""
    tree = dict(base)
    for path in deletions:
        tree.pop(path, None)
    for path, content in files.items():
        tree[path] = regular_blob(path, content)
    return dict(sorted(tree.items()))


def synthetic_sha(
    repo_id: str, parent: str | None, date: datetime, title: str, tree: Mapping[str, Blob]
) -> str:
    """A deterministic sha for a commit whose upstream sha is not known."""
    digest = hashlib.sha1(f"{repo_id}\n{parent}\n{date.isoformat()}\n{title}\n".encode())
    for path, blob in tree.items():
        digest.update(f"{path}\0{blob.oid}\n".encode())
    return digest.hexdigest()


def make_commit(
    repo_id: str,
    parent: Commit | None,
    *,
    files: Mapping[str, bytes],
    deletions: Iterable[str] = (),
    title: str,
    author: str,
    date: datetime,
    message: str = "",
    sha: str | None = None,
) -> Commit:
    """A commit of ``files`` and ``deletions`` on top of ``parent`` (None: a first commit).

    ``sha`` keeps a recorded commit's real sha; without it one is derived from the content.
    """
    tree = apply_changes(parent.files if parent else {}, files, deletions)
    parent_sha = parent.sha if parent else None
    return Commit(
        sha=sha or synthetic_sha(repo_id, parent_sha, date, title, tree),
        parents=(parent_sha,) if parent_sha else (),
        date=date,
        title=title,
        message=message,
        authors=(author,),
        files=tree,
    )


def initial_commit(repo_id: str, date: datetime) -> Commit:
    """The commit the Hub itself makes when a repo is created."""
    return make_commit(
        repo_id,
        None,
        files={".gitattributes": GITATTRIBUTES},
        title=INITIAL_TITLE,
        author=repo_id.split("/")[0],
        date=date,
    )


def build_repo(repo_id: str, recorded: list[RecordedCommit]) -> Repo:
    """Replay a repo's recorded commits (oldest first) into a commit graph."""
    created = min(commit.date for commit in recorded)
    first = initial_commit(repo_id, created)
    repo = Repo(repo_id, created, commits={first.sha: first}, branches={MAIN: first.sha})
    main_at: list[Commit] = [first]
    for record in recorded:
        base = main_at[-1]
        if record.ref and record.ref != MAIN:
            number = int(record.ref.removeprefix("refs/pr/"))
            earlier = repo.pull_requests.get(number)
            base = repo.commits[earlier] if earlier else base
        commit = make_commit(
            repo_id,
            base,
            files=record.files,
            deletions=record.deletions,
            title=record.title,
            author=record.author,
            date=record.date,
            sha=record.sha,
        )
        repo.commits[commit.sha] = commit
        if record.ref == MAIN:
            main_at.append(commit)
            repo.branches[MAIN] = commit.sha
        elif record.ref:
            repo.pull_requests[int(record.ref.removeprefix("refs/pr/"))] = commit.sha
    return repo
