"""``HubEmulator``: the store, the router and the server, started and scripted as one."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path

from tracker.hubsim.blobs import Blob
from tracker.hubsim.corpus import MAIN
from tracker.hubsim.errors import ScriptError
from tracker.hubsim.faults import FaultPlan
from tracker.hubsim.history import Commit, GatedMode
from tracker.hubsim.routes import Router
from tracker.hubsim.server import HubServer
from tracker.hubsim.stats import Stats
from tracker.hubsim.store import DEFAULT_TITLE, Change, HubStore
from tracker.hubsim.weights import TensorShapes


class HubEmulator:
    """A local Hub over a corpus directory (or empty with ``corpus_dir=None``)."""

    def __init__(
        self,
        corpus_dir: Path | None = None,
        *,
        tensor_shapes: TensorShapes | None = None,
        page_size: int | None = None,
        seed: int = 0,
        store: HubStore | None = None,
    ) -> None:
        """``store`` replaces the corpus replay (``tracker.hubsim.synthetic.SyntheticStore``)."""
        self.store = store or HubStore(corpus_dir, tensor_shapes)
        self.faults = FaultPlan(seed)
        self.stats = Stats()
        self._router = Router(self.store, page_size)
        self._server: HubServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------
    def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Serve in a background thread; returns the endpoint URL (``http://host:port``)."""
        if self._server is not None:
            raise ScriptError("the emulator is already serving")
        self._server = HubServer((host, port), self._router, self.faults, self.stats)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self.endpoint

    def serve_forever(
        self, host: str = "127.0.0.1", port: int = 0, announce: Callable[[str], None] | None = None
    ) -> None:
        """Serve in this thread until interrupted (the CLI); ``announce`` gets the URL once bound."""
        self._server = HubServer((host, port), self._router, self.faults, self.stats)
        if announce is not None:
            announce(self.endpoint)
        try:
            self._server.serve_forever()
        finally:
            self._server.server_close()

    @property
    def endpoint(self) -> str:
        """The URL to give ``HF_ENDPOINT``; ScriptError when the emulator is not serving."""
        if self._server is None:
            raise ScriptError("the emulator is not serving")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def stop(self) -> None:
        """Stop serving and cut open keep-alive connections; does nothing when not serving."""
        if self._server is None:
            return
        self._server.stopping.set()
        self._server.shutdown()
        self._server.close_open_connections()
        self._server.server_close()
        self._server = None

    def __enter__(self) -> HubEmulator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- reading (for tests' expectations) -------------------------------------------
    def repo_ids(self) -> list[str]:
        """Every repo id, sorted (N strings for a synthetic Hub of N repos)."""
        with self.store.lock:
            return sorted(self.store.repos)

    def history(self, repo_id: str, branch: str = MAIN) -> list[Commit]:
        """Commits on ``branch``, newest first, as list_repo_commits returns them."""
        with self.store.lock:
            repo = self.store.repo(repo_id)
            return repo.history(repo.branches[branch])

    def head(self, repo_id: str, branch: str = MAIN) -> str:
        """The sha ``branch`` points at now."""
        return self.history(repo_id, branch)[0].sha

    def tree(self, repo_id: str, revision: str = MAIN) -> dict[str, Blob]:
        """Every file at ``revision`` (committed and derived weight files)."""
        with self.store.lock:
            commit = self.store.repo(repo_id).resolve(revision)
            if commit is None:
                raise ScriptError(f"{repo_id}: no revision {revision!r}")
            return self.store.tree(commit)

    def pull_requests(self, repo_id: str) -> dict[int, str]:
        """The repo's pull requests: number -> the sha ``refs/pr/N`` serves."""
        with self.store.lock:
            return dict(self.store.repo(repo_id).pull_requests)

    # -- scripting -------------------------------------------------------------------
    def publish(
        self,
        repo_id: str,
        files: Mapping[str, bytes],
        *,
        deletions: Sequence[str] = (),
        title: str = DEFAULT_TITLE,
        author: str = "hubsim",
        date: datetime | None = None,
        message: str = "",
        branch: str = MAIN,
    ) -> str:
        """Commit files on ``branch`` (creating the repo if needed); returns the new sha."""
        change = Change(files, deletions, title, author, date, message)
        return self.store.publish(repo_id, change, branch).sha

    def force_push(
        self, repo_id: str, *, drop: int = 1, replace: Sequence[Change] = (), branch: str = MAIN
    ) -> str:
        """Drop the newest ``drop`` commits of ``branch``, commit ``replace``; returns the head."""
        return self.store.force_push(repo_id, drop=drop, replace=replace, branch=branch).sha

    def create_branch(self, repo_id: str, branch: str, *, revision: str = MAIN) -> str:
        """A new branch at ``revision`` (listed by refs, served by name); returns its sha."""
        return self.store.create_ref(repo_id, "branch", branch, revision).sha

    def create_tag(self, repo_id: str, tag: str, *, revision: str = MAIN) -> str:
        """A new tag at ``revision`` (``refs/tags/T`` or ``T``); returns its sha."""
        return self.store.create_ref(repo_id, "tag", tag, revision).sha

    def delete_repo(self, repo_id: str) -> None:
        """Remove the repo: every later request for it answers RepoNotFound."""
        self.store.delete_repo(repo_id)

    def set_gated(self, repo_id: str, gated: GatedMode, *, approved: Sequence[str] = ()) -> None:
        """Gate files: anonymous -> 401 GatedRepo; a token not approved -> 403 ("auto" approves all)."""
        self.store.set_access(repo_id, gated=gated, tokens=approved)

    def set_private(
        self, repo_id: str, private: bool = True, *, tokens: Sequence[str] = ()
    ) -> None:
        """Private repos answer RepoNotFound (401 anonymous, 404 with a token) except to ``tokens``."""
        self.store.set_access(repo_id, private=private, tokens=tokens)

    def set_disabled(self, repo_id: str, disabled: bool = True) -> None:
        """A disabled repo answers 403 "Access to this resource is disabled." to everyone."""
        self.store.set_access(repo_id, disabled=disabled)

    def move_repo(self, old: str, new: str) -> None:
        """Rename the repo: requests under ``old`` answer 307 to ``new``, as the Hub does."""
        self.store.move_repo(old, new)

    def alias_repo(self, legacy: str, repo_id: str) -> None:
        """Answer the legacy id ``legacy`` (``gpt2``) with a 307 to ``repo_id``."""
        self.store.alias_repo(legacy, repo_id)
