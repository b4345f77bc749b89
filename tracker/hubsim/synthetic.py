"""A synthetic Hub of N repos that holds only what clients are reading right now.

``SyntheticStore`` stands where ``HubStore`` stands (the router cannot tell them apart).
At start-up it computes each repo's schedule once to sort the N heads by date (two
integer arrays: the listing); nothing else is kept for a repo nobody asked about.

- ``repos.get(repo_id)`` builds the repo's commit graph from its schedule (shas, dates,
  titles) with trees that fill in on first read (``LazyTree``), kept in a bounded LRU
  (``SKELETONS``);
- the first read of any tree of a repo generates the files of its whole history
  (``synthetic_history``) and a private ``HubStore`` over that one repo, which derives
  its weight shards and caches its trees; at most ``MATERIALIZED`` repos are held so.

A scripted repo (``publish``, ``force_push``, gating) is pinned: kept for good and listed
by its new head date. Deleting or moving synthetic repos is not supported.
"""

from __future__ import annotations

import bisect
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tracker.hubsim.blobs import Blob
from tracker.hubsim.corpus import MAIN
from tracker.hubsim.errors import CorpusError, ScriptError
from tracker.hubsim.history import Commit, Repo, apply_changes, initial_commit
from tracker.hubsim.store import HubStore
from tracker.hubsim.synthetic_history import HistoryGenerator, Schedule, templates_from
from tracker.hubsim.weights import TensorShapes

SKELETONS = 4096
"""Commit graphs kept: a few KB each, enough for every repo a listing page names."""
MATERIALIZED = 64
"""Repos whose files and trees are kept: the ones workers are reading now."""


class LazyTree(Mapping[str, Blob]):
    """A commit's committed files, generated when first read."""

    def __init__(self, store: SyntheticStore, repo_id: str, step: int) -> None:
        self._store, self._repo_id, self._step = store, repo_id, step

    def _files(self) -> Mapping[str, Blob]:
        return self._store.committed_files(self._repo_id, self._step)

    def __getitem__(self, path: str) -> Blob:
        return self._files()[path]

    def __iter__(self) -> Iterator[str]:
        return iter(self._files())

    def __len__(self) -> int:
        return len(self._files())


@dataclass
class _Materialized:
    trees: list[dict[str, Blob]]
    store: HubStore


@dataclass
class _Entry:
    schedule: Schedule
    repo: Repo
    pinned: bool = False
    materialized: _Materialized | None = None
    extra: list[Commit] = field(default_factory=list)
    """Commits scripted on top of the synthetic history (pinned repos only)."""


class SyntheticRepos(Mapping[str, Repo]):
    """repo id -> Repo over all N synthetic repos, built on demand."""

    def __init__(self, store: SyntheticStore) -> None:
        self._store = store

    def __getitem__(self, repo_id: str) -> Repo:
        return self._store.entry(repo_id).repo

    def __contains__(self, repo_id: object) -> bool:
        return isinstance(repo_id, str) and self._store.index_of(repo_id) is not None

    def __iter__(self) -> Iterator[str]:
        return (self._store.generator.repo_id(i) for i in range(self._store.generator.size))

    def __len__(self) -> int:
        return self._store.generator.size

    def __setitem__(self, repo_id: str, repo: Repo) -> None:
        raise ScriptError("a synthetic Hub cannot create repos")

    def __delitem__(self, repo_id: str) -> None:
        raise ScriptError("a synthetic Hub cannot delete repos")


class SyntheticStore(HubStore):
    """``size`` generated repos (seed ``seed``) from the corpus at ``corpus_dir``'s templates."""

    def __init__(
        self,
        size: int,
        seed: int,
        corpus_dir: Path,
        tensor_shapes: TensorShapes | None = None,
    ) -> None:
        super().__init__(None, tensor_shapes)
        corpus = HubStore(corpus_dir)
        heads = {
            rid: {p: b.text() or b"" for p, b in repo.main()[0].files.items() if b.text()}
            for rid, repo in corpus.repos.items()
        }
        templates = templates_from(heads)
        if not templates:
            raise CorpusError(f"{corpus_dir}: no repo with a config.json to take as a template")
        self.generator = HistoryGenerator(size, seed, templates)
        self._tensor_shapes = tensor_shapes
        self._skeletons: OrderedDict[str, _Entry] = OrderedDict()
        self._pinned: dict[str, _Entry] = {}
        self._materialized: list[_Entry] = []
        self._created_order: list[int] | None = None
        self._by_id = {self.generator.repo_id(i): i for i in range(size)}
        stamps = [(self.generator.schedule(i).head.date.timestamp(), i) for i in range(size)]
        stamps.sort(reverse=True)
        self._order = [i for _, i in stamps]
        self._rank = [0] * size
        for position, index in enumerate(self._order):
            self._rank[index] = position
        self._order_stamps = [-s for s, _ in stamps]
        """Head dates negated, ascending: where a pinned repo falls in the listing (bisect)."""
        self.repos = SyntheticRepos(self)  # type: ignore[assignment]

    # -- repos -----------------------------------------------------------------------
    def index_of(self, repo_id: str) -> int | None:
        """The generator index of ``repo_id``; None when it is not a synthetic repo."""
        return self._by_id.get(repo_id)

    def entry(self, repo_id: str) -> _Entry:
        """The repo's commit graph, built on first use and kept in a bounded cache.

        Raises KeyError for an id the generator never made.
        """
        with self.lock:
            if repo_id in self._pinned:
                return self._pinned[repo_id]
            if repo_id in self._skeletons:
                self._skeletons.move_to_end(repo_id)
                return self._skeletons[repo_id]
            index = self.index_of(repo_id)
            if index is None:
                raise KeyError(repo_id)
            entry = self._build(self.generator.schedule(index))
            self._skeletons[repo_id] = entry
            if len(self._skeletons) > SKELETONS:
                self._skeletons.popitem(last=False)
            return entry

    def _build(self, schedule: Schedule) -> _Entry:
        """The commit graph of a schedule: real shas and dates, trees generated later."""
        repo_id = schedule.repo_id
        first = schedule.steps[0]
        repo = Repo(repo_id, first.date)
        parent: str | None = None
        for k, step in enumerate(schedule.steps):
            commit = Commit(
                sha=step.sha,
                parents=(parent,) if parent else (),
                date=step.date,
                title=step.title,
                message="",
                authors=(repo.author,),
                files=LazyTree(self, repo_id, k),
            )
            repo.commits[commit.sha] = commit
            parent = commit.sha
        repo.branches[MAIN] = schedule.head.sha
        return _Entry(schedule, repo)

    def committed_files(self, repo_id: str, step: int) -> Mapping[str, Blob]:
        """The files committed at ``step`` of the repo's main, generated on demand."""
        return self._materialize(self.entry(repo_id)).trees[step]

    def _materialize(self, entry: _Entry) -> _Materialized:
        with self.lock:
            if entry.materialized is None:
                entry.materialized = self._generate(entry)
                held = self._materialized
                held.append(entry)
                while len(held) > MATERIALIZED:
                    evicted = next((e for e in held if not e.pinned), None)
                    if evicted is None:
                        break
                    held.remove(evicted)
                    evicted.materialized = None
            return entry.materialized

    def _generate(self, entry: _Entry) -> _Materialized:
        schedule = entry.schedule
        written = self.generator.files(schedule)
        start = initial_commit(schedule.repo_id, schedule.steps[0].date).files
        trees = [dict(start)]
        for change in written[1:]:
            trees.append(apply_changes(trees[-1], change, ()))
        store = HubStore(None, self._tensor_shapes)
        frozen = Repo(entry.repo.repo_id, entry.repo.created_at)
        for k, step in enumerate(schedule.steps):
            commit = entry.repo.commits[step.sha]
            concrete = Commit(
                commit.sha, commit.parents, commit.date, commit.title, commit.message,
                commit.authors, trees[k],
            )  # fmt: skip
            frozen.commits[commit.sha] = concrete
        for commit in entry.extra:
            frozen.commits[commit.sha] = commit
        frozen.branches = entry.repo.branches
        store.repos[frozen.repo_id] = frozen
        for commit in frozen.commits.values():
            store._register(frozen, commit)
        return _Materialized(trees, store)

    # -- reading (the router's calls) --------------------------------------------------
    def tree(self, commit: Commit) -> dict[str, Blob]:
        """Every file at ``commit``, derived weights included; generated on demand."""
        with self.lock:
            repo_id = self._owner(commit)
            materialized = self._materialize(self.entry(repo_id))
            inner = materialized.store.repos[repo_id].commits[commit.sha]
            return materialized.store.tree(inner)

    def _owner(self, commit: Commit) -> str:
        files = commit.files
        if isinstance(files, LazyTree):
            return files._repo_id
        for repo_id, entry in self._pinned.items():
            if commit.sha in entry.repo.commits:
                return repo_id
        raise ScriptError(f"commit {commit.sha[:12]} is not one of the synthetic Hub's")

    def listing(
        self, *, sort: str, author: str, search: str, token: str | None
    ) -> Sequence[tuple[Repo, Commit]]:
        """Every visible repo with its head, newest first, built only for the rows read.

        The plain newest-first listing costs nothing per page; a filter (author,
        search, a private pinned repo) or ``sort=createdAt`` scans the N ids once.
        """
        hidden = {
            r for r, e in self._pinned.items() if e.repo.private and token not in e.repo.tokens
        }
        if sort != "createdAt" and not author and not search and not hidden:
            return _Listing(self, None)
        order = self._created() if sort == "createdAt" else self._order
        ids = [self.generator.repo_id(i) for i in order]
        chosen = [
            rid for rid in ids
            if rid not in hidden and (not author or rid.split("/")[0] == author)
            and search in rid.lower()
        ]  # fmt: skip
        return _Listing(self, chosen)

    def _created(self) -> list[int]:
        if self._created_order is None:
            stamps = [(self.generator.schedule(i).steps[0].date, i) for i in range(len(self._rank))]
            self._created_order = [i for _, i in sorted(stamps, reverse=True)]
        return self._created_order

    def listed_index(self, position: int) -> str:
        """The repo id at ``position`` of the newest-first listing, pinned repos merged in.

        O(pinned) per row: the static order is an array, and pinned repos (scripted by
        a test) are few.
        """
        placed = self._pinned_positions()
        before = 0
        for at, repo_id in placed:
            if at == position:
                return repo_id
            before += at < position
        static = position - before
        for rank in sorted(self._rank[self._by_id[r]] for r in self._pinned):
            static += rank <= static
        return self.generator.repo_id(self._order[static])

    def _pinned_positions(self) -> list[tuple[int, str]]:
        """Where each pinned repo sits in the merged newest-first listing."""
        heads = sorted(
            (-e.repo.commits[e.repo.branches[MAIN]].date.timestamp(), rid)
            for rid, e in self._pinned.items()
        )
        ranks = [self._rank[self._by_id[rid]] for rid in self._pinned]
        placed = []
        for rank, (negated, repo_id) in enumerate(heads):
            newer = bisect.bisect_left(self._order_stamps, negated)
            newer -= sum(1 for r in ranks if r < newer)
            placed.append((newer + rank, repo_id))
        return placed

    # -- scripting -------------------------------------------------------------------
    def _pin(self, repo_id: str) -> _Entry:
        entry = self.entry(repo_id)
        entry.pinned = True
        self._pinned[repo_id] = entry
        self._skeletons.pop(repo_id, None)
        return entry

    def _register(self, repo: Repo, commit: Commit) -> None:
        if not isinstance(self.repos, SyntheticRepos):  # HubStore.__init__, before repos exist
            super()._register(repo, commit)
            return
        entry = self._pin(repo.repo_id)
        entry.extra.append(commit)
        if entry.materialized is not None:
            inner = entry.materialized.store.repos[repo.repo_id]
            inner.commits[commit.sha] = commit
            entry.materialized.store._register(inner, commit)

    def set_access(self, repo_id: str, **changes: Any) -> None:
        """As ``HubStore.set_access``; the repo is then pinned in memory for good."""
        with self.lock:
            self._pin(repo_id)
            super().set_access(repo_id, **changes)

    def delete_repo(self, repo_id: str) -> None:
        """Always raises ScriptError: generated repos cannot be deleted."""
        raise ScriptError("a synthetic Hub cannot delete repos")

    def move_repo(self, old: str, new: str) -> None:
        """Always raises ScriptError: generated repos cannot be moved."""
        raise ScriptError("a synthetic Hub cannot move repos")


class _Listing(Sequence[tuple[Repo, Commit]]):
    """Listing rows by position: the merged newest-first order, or a filtered id list."""

    def __init__(self, store: SyntheticStore, ids: Sequence[str] | None) -> None:
        self._store, self._ids = store, ids

    def __len__(self) -> int:
        return self._store.generator.size if self._ids is None else len(self._ids)

    def __getitem__(self, position: Any) -> Any:
        if isinstance(position, slice):
            return [self[i] for i in range(*position.indices(len(self)))]
        ids = self._ids
        repo_id = self._store.listed_index(position) if ids is None else ids[position]
        repo = self._store.entry(repo_id).repo
        return repo, repo.commits[repo.branches[MAIN]]


__all__ = ["LazyTree", "SyntheticRepos", "SyntheticStore"]
