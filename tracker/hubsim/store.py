"""The emulator's state: every repo, their trees (with derived weight files), and the
scripting operations tests use to change them while the server runs.

All reads and writes take one re-entrant lock; bodies are immutable, so a response is
computed under the lock and streamed outside it.
"""

from __future__ import annotations

import functools
import hashlib
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from tracker.hubsim.blobs import Blob
from tracker.hubsim.corpus import MAIN, load_corpus
from tracker.hubsim.errors import ScriptError
from tracker.hubsim.history import Commit, GatedMode, Repo, build_repo, initial_commit, make_commit
from tracker.hubsim.parameters import safetensors_field
from tracker.hubsim.weights import IndexShards, TensorShapes, WeightFiles, shard_files

DEFAULT_TITLE = "Upload folder using huggingface_hub"


@dataclass(frozen=True)
class Change:
    """One commit a test writes: files to add or overwrite, paths to delete."""

    files: Mapping[str, bytes] = field(default_factory=dict)
    deletions: Sequence[str] = ()
    title: str = DEFAULT_TITLE
    author: str = "hubsim"
    date: datetime | None = None
    message: str = ""


class HubStore:
    """Repos by id, with a cache of full trees by commit sha."""

    def __init__(self, corpus_dir: Path | None, tensor_shapes: TensorShapes | None = None) -> None:
        self.lock = threading.RLock()
        recorded = load_corpus(corpus_dir) if corpus_dir is not None else {}
        self.repos: dict[str, Repo] = {rid: build_repo(rid, h) for rid, h in recorded.items()}
        self.moved: dict[str, str] = {}
        self._weights = WeightFiles(tensor_shapes)
        self._trees: dict[str, dict[str, Blob]] = {}
        self._parameters: dict[str, dict[str, Any] | None] = {}
        self._shards: dict[str, IndexShards] = {}
        self._commits: dict[str, Commit] = {}
        self._repo_of: dict[str, Repo] = {}
        for repo in self.repos.values():
            for commit in repo.commits.values():
                self._register(repo, commit)

    # -- reading ---------------------------------------------------------------------
    def tree(self, commit: Commit) -> dict[str, Blob]:
        """Committed files plus the weight shards their index files name, sorted by path."""
        with self.lock:
            if commit.sha not in self._trees:
                files = dict(commit.files)
                files.update(shard_files(commit.files, self._index_shards(commit)))
                self._trees[commit.sha] = dict(sorted(files.items()))
            return self._trees[commit.sha]

    def parameters(self, commit: Commit) -> dict[str, Any] | None:
        """model_info's ``safetensors`` field at ``commit``, read once per commit."""
        with self.lock:
            if commit.sha not in self._parameters:
                self._parameters[commit.sha] = safetensors_field(self.tree(commit))
            return self._parameters[commit.sha]

    def _index_shards(self, commit: Commit) -> IndexShards:
        """The commit's shards, carried down its first-parent line from the last upload.

        Walked oldest first without recursion, so a history of any length is fine.
        """
        pending: list[Commit] = []
        current: Commit | None = commit
        while current is not None and current.sha not in self._shards:
            pending.append(current)
            parent = current.parents[0] if current.parents else None
            current = self._commits.get(parent) if parent else None
        for step in reversed(pending):
            parent = step.parents[0] if step.parents else None
            previous = self._shards.get(parent) if parent else None
            later = functools.partial(self._later_trees, step)
            self._shards[step.sha] = self._weights.carry(step.files, previous, later)
        return self._shards[commit.sha]

    def _later_trees(self, commit: Commit) -> list[Mapping[str, Blob]]:
        """Committed files of the main commits after ``commit``, oldest first ([] off main)."""
        repo = self._repo_of.get(commit.sha)
        if repo is None or MAIN not in repo.branches:
            return []
        line = repo.main()
        shas = [c.sha for c in line]
        if commit.sha not in shas:
            return []
        return [c.files for c in reversed(line[: shas.index(commit.sha)])]

    def _register(self, repo: Repo, commit: Commit) -> None:
        self._commits[commit.sha] = commit
        self._repo_of[commit.sha] = repo

    def entry_id(self, commit: Commit, path: str) -> str | None:
        """The blob id of a file, or a stable id of a folder's contents, at ``commit``."""
        tree = self.tree(commit)
        if path in tree:
            return tree[path].oid
        prefix = path + "/"
        inside = [f"{p}\0{b.oid}" for p, b in tree.items() if p.startswith(prefix)]
        if not inside:
            return None
        return hashlib.sha1("\n".join(inside).encode()).hexdigest()

    def last_commit(self, repo: Repo, commit: Commit, path: str) -> Commit:
        """The newest first-parent ancestor that changed ``path`` (file or folder)."""
        with self.lock:
            wanted = self.entry_id(commit, path)
            last = commit
            for ancestor in repo.history(commit.sha)[1:]:
                if self.entry_id(ancestor, path) != wanted:
                    break
                last = ancestor
            return last

    def listing(
        self, *, sort: str, author: str, search: str, token: str | None
    ) -> Sequence[tuple[Repo, Commit]]:
        """Visible repos with their main heads, newest first (by ``createdAt`` if asked)."""
        with self.lock:
            rows = [
                (repo, repo.commits[repo.branches[MAIN]])
                for repo in self.repos.values()
                if (not repo.private or token in repo.tokens)
                and (not author or repo.author == author)
                and search in repo.repo_id.lower()
            ]
        if sort == "createdAt":
            rows.sort(key=lambda row: row[0].created_at, reverse=True)
        else:
            rows.sort(key=lambda row: row[1].date, reverse=True)
        return rows

    def repo(self, repo_id: str) -> Repo:
        """The repo ``repo_id``; ScriptError when the emulator has none of that id."""
        with self.lock:
            if repo_id not in self.repos:
                raise ScriptError(f"no repo {repo_id!r} in the emulator")
            return self.repos[repo_id]

    # -- scripting -------------------------------------------------------------------
    def publish(self, repo_id: str, change: Change, branch: str = MAIN) -> Commit:
        """Commit ``change`` on ``branch``, creating the repo if it does not exist."""
        with self.lock:
            date = change.date or datetime.now(UTC)
            if repo_id not in self.repos:
                first = initial_commit(repo_id, date)
                self.repos[repo_id] = Repo(
                    repo_id, date, commits={first.sha: first}, branches={MAIN: first.sha}
                )
                self._register(self.repos[repo_id], first)
            repo = self.repos[repo_id]
            head = repo.commits[repo.branches.get(branch, repo.branches[MAIN])]
            commit = self._commit(repo, head, change, date)
            repo.branches[branch] = commit.sha
            return commit

    def force_push(
        self, repo_id: str, *, drop: int = 0, replace: Sequence[Change] = (), branch: str = MAIN
    ) -> Commit:
        """Rewrite ``branch``: drop its newest ``drop`` commits, then commit ``replace``."""
        with self.lock:
            repo = self.repo(repo_id)
            history = repo.history(repo.branches[branch])
            if drop >= len(history):
                raise ScriptError(f"{repo_id}: cannot drop {drop} of {len(history)} commits")
            head = history[drop]
            for change in replace:
                head = self._commit(repo, head, change, change.date or datetime.now(UTC))
            repo.branches[branch] = head.sha
            return head

    def _commit(self, repo: Repo, parent: Commit, change: Change, date: datetime) -> Commit:
        missing = [p for p in change.deletions if p not in parent.files]
        if missing:
            raise ScriptError(f"{repo.repo_id}: cannot delete {missing}: not in {parent.sha[:12]}")
        commit = make_commit(
            repo.repo_id,
            parent,
            files=change.files,
            deletions=change.deletions,
            title=change.title,
            author=change.author,
            date=date,
            message=change.message,
        )
        repo.commits[commit.sha] = commit
        self._register(repo, commit)
        return commit

    def create_ref(
        self, repo_id: str, kind: Literal["branch", "tag"], name: str, revision: str
    ) -> Commit:
        """Point a new branch or tag at ``revision``, as the Hub's create_branch/create_tag do."""
        with self.lock:
            repo = self.repo(repo_id)
            commit = repo.resolve(revision)
            if commit is None:
                raise ScriptError(f"{repo_id}: no revision {revision!r}")
            refs = repo.branches if kind == "branch" else repo.tags
            if not name or name in repo.branches or name in repo.tags or name == "HEAD":
                raise ScriptError(f"{repo_id}: cannot create {kind} {name!r}: the name is taken")
            refs[name] = commit.sha
            return commit

    def delete_repo(self, repo_id: str) -> None:
        """Remove the repo; ScriptError when there is none."""
        with self.lock:
            self.repo(repo_id)
            del self.repos[repo_id]

    def set_access(
        self,
        repo_id: str,
        *,
        gated: GatedMode | None = None,
        private: bool | None = None,
        disabled: bool | None = None,
        tokens: Sequence[str] | None = None,
    ) -> None:
        """Change what is given (gated, private, disabled, the tokens let in); None leaves it."""
        with self.lock:
            repo = self.repo(repo_id)
            if gated is not None:
                repo.gated = gated
            if private is not None:
                repo.private = private
            if disabled is not None:
                repo.disabled = disabled
            if tokens is not None:
                repo.tokens = frozenset(tokens)

    def alias_repo(self, legacy: str, repo_id: str) -> None:
        """A legacy id the Hub still answers for (``gpt2``): it redirects (307) to ``repo_id``."""
        with self.lock:
            self.repo(repo_id)
            self.moved[legacy] = repo_id

    def move_repo(self, old: str, new: str) -> None:
        """Rename: the old id redirects (307) to the new one, as the Hub does."""
        with self.lock:
            repo = self.repo(old)
            if new in self.repos:
                raise ScriptError(f"cannot move {old!r} to {new!r}: it exists")
            repo.repo_id = new
            self.repos[new] = self.repos.pop(old)
            self.moved[old] = new
