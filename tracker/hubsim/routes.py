"""From a request to a response: routing, access rules, the Hub's errors, listings, Range.

Paths are split on the raw ``/`` before any unquoting, so a revision sent as
``refs%2Fpr%2F1`` stays one segment.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, unquote, urlencode

from tracker.hubsim import views
from tracker.hubsim.blobs import Blob, Body, InlineBody
from tracker.hubsim.errors import HubSimError
from tracker.hubsim.history import Commit, Repo
from tracker.hubsim.store import HubStore

DEFAULT_PAGES = {"commits": 50, "tree": 1000, "tree_expand": 50, "list_models": 1000}


@dataclass
class Request:
    method: str
    raw_path: str
    query: dict[str, list[str]]
    headers: Mapping[str, str]
    form: dict[str, list[str]] = field(default_factory=dict)
    base_url: str = ""

    @property
    def token(self) -> str | None:
        auth = self.headers.get("Authorization") or self.headers.get("authorization") or ""
        return auth.removeprefix("Bearer ").strip() or None

    def flag(self, name: str) -> bool:
        return any(v.lower() in ("1", "true") for v in self.query.get(name, []))

    def values(self, name: str) -> list[str]:
        return self.query.get(name, []) + self.query.get(name + "[]", [])


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: Body

    @classmethod
    def json(
        cls, data: Any, status: int = 200, headers: Mapping[str, str] | None = None
    ) -> Response:
        payload = json.dumps(data).encode()
        return cls(
            status,
            {"Content-Type": "application/json; charset=utf-8", **(headers or {})},
            InlineBody(payload),
        )


class ErrorAnswer(HubSimError):
    """An error answer, raised inside a route and rendered as the Hub renders it.

    Not the tracker's HubError (what a client concludes from such an answer):
    this is the emulator's side, carrying the Response it sends.
    """

    def __init__(self, status: int, code: str | None, message: str, **headers: str) -> None:
        super().__init__(message)
        self.response = Response.json({"error": message}, status, headers)
        self.response.headers["X-Error-Message"] = message
        if code:
            self.response.headers["X-Error-Code"] = code


def classify(raw_path: str) -> tuple[str, list[str]]:
    """Endpoint kind and raw segments (``api`` paths lose their ``/api/models`` prefix)."""
    parts = raw_path.split("?", 1)[0].strip("/").split("/")
    if parts[:2] == ["api", "models"]:
        rest = parts[2:]
        if not rest:
            return "list_models", rest
        kinds = {"revision": "model_info", "commits": "commits", "refs": "refs", "tree": "tree",
                 "paths-info": "paths_info", "safetensors-metadata": "safetensors_metadata"}  # fmt: skip
        if len(rest) == 2:
            return "model_info", rest
        return (kinds.get(rest[2], "other"), rest) if len(rest) > 2 else ("other", rest)
    if len(parts) >= 5 and parts[2] == "resolve":
        return "resolve", parts
    return "other", parts


class Router:
    def __init__(self, store: HubStore, page_size: int | None) -> None:
        self.store = store
        self.page_size = page_size
        self._routes: dict[str, Callable[[Request, list[str]], Response]] = {
            "model_info": self._model_info,
            "commits": self._commits,
            "refs": self._refs,
            "tree": self._tree,
            "paths_info": self._paths_info,
            "resolve": self._resolve,
            "list_models": self._list_models,
            "safetensors_metadata": self._safetensors_metadata,
        }

    def handle(self, kind: str, parts: list[str], request: Request) -> Response:
        route = self._routes.get(kind)
        if route is None and (legacy := self._legacy_redirect(request.raw_path)) is not None:
            return legacy
        if route is None:
            return Response.json(
                {"error": "Sorry, we can't find the page you are looking for."}, 404
            )
        try:
            with self.store.lock:
                return route(request, parts)
        except ErrorAnswer as error:
            return error.response

    def _legacy_redirect(self, raw_path: str) -> Response | None:
        """A legacy one-part id (``gpt2``) that names an alias answers 307 to ORG/NAME, as the Hub."""
        path, _, query = raw_path.partition("?")
        parts = path.strip("/").split("/")
        at = 2 if parts[:2] == ["api", "models"] else 0
        if len(parts) <= at or (at == 0 and parts[1:2] != ["resolve"]):
            return None
        new = self.store.moved.get(unquote(parts[at]))
        if new is None or "/" in unquote(parts[at]):
            return None
        location = "/" + "/".join([*parts[:at], quote(new), *parts[at + 1 :]])
        return ErrorAnswer(
            307,
            None,
            f"Repository moved to {new}",
            Location=location + (f"?{query}" if query else ""),
        ).response

    # -- access ----------------------------------------------------------------------
    def _repo(self, request: Request, org: str, name: str, *, files: bool = False) -> Repo:
        repo_id = f"{unquote(org)}/{unquote(name)}"
        if repo_id in self.store.moved:
            new = self.store.moved[repo_id]
            location = request.raw_path.replace(f"/{org}/{name}", "/" + quote(new), 1)
            raise ErrorAnswer(307, None, f"Repository moved to {new}", Location=location)
        repo = self.store.repos.get(repo_id)
        allowed = repo is not None and (not repo.private or request.token in repo.tokens)
        if repo is None or not allowed:
            status = 401 if request.token is None else 404
            raise ErrorAnswer(status, "RepoNotFound", "Repository not found")
        if repo.disabled:
            raise ErrorAnswer(403, None, "Access to this resource is disabled.")
        if files and repo.gated and not self._approved(repo, request.token):
            if request.token is None:
                message = (f"Access to model {repo_id} is restricted. You must have access to it "
                           "and be authenticated to access it. Please log in.")  # fmt: skip
                raise ErrorAnswer(401, "GatedRepo", message)
            message = (f"Access to model {repo_id} is restricted and you are not in the "
                       f"authorized list. Visit {request.base_url}/{repo_id} to ask for access.")  # fmt: skip
            raise ErrorAnswer(403, "GatedRepo", message)
        return repo

    @staticmethod
    def _approved(repo: Repo, token: str | None) -> bool:
        return token is not None and (repo.gated == "auto" or token in repo.tokens)

    @staticmethod
    def _commit(repo: Repo, raw_revision: str) -> Commit:
        revision = unquote(raw_revision)
        commit = repo.resolve(revision)
        if commit is None:
            raise ErrorAnswer(404, "RevisionNotFound", f"Invalid rev id: {revision}")
        return commit

    def _page(self, kind: str) -> int:
        default = DEFAULT_PAGES[kind]
        return min(default, self.page_size) if self.page_size else default

    def _paged(
        self,
        request: Request,
        items: Sequence[Any],
        size: int,
        render: Callable[[Any], Any] | None = None,
    ) -> Response:
        """One page of ``items`` from the cursor; only the page's rows are rendered."""
        start = int((request.query.get("cursor") or ["0"])[0] or 0)
        page = [render(i) if render else i for i in items[start : start + size]]
        headers: dict[str, str] = {}
        if start + size < len(items):
            query = {k: v for k, v in request.query.items() if k != "cursor"}
            query["cursor"] = [str(start + size)]
            path = request.raw_path.split("?", 1)[0]
            headers["Link"] = (
                f'<{request.base_url}{path}?{urlencode(query, doseq=True)}>; rel="next"'
            )
        return Response.json(page, headers=headers)

    # -- routes ----------------------------------------------------------------------
    def _model_info(self, request: Request, parts: list[str]) -> Response:
        repo = self._repo(request, parts[0], parts[1])
        commit = self._commit(repo, parts[3]) if len(parts) > 3 else repo.resolve("main")
        assert commit is not None
        tree = functools.partial(self.store.tree, commit)
        body = views.model_info(
            repo, commit, tree, blobs=request.flag("blobs"), expand=request.values("expand")
        )
        if request.flag("securityStatus"):
            body["securityRepoStatus"] = {"scansDone": True, "filesWithIssues": []}
        return Response.json(body)

    def _commits(self, request: Request, parts: list[str]) -> Response:
        repo = self._repo(request, parts[0], parts[1])
        commit = self._commit(repo, parts[3] if len(parts) > 3 else "main")
        formatted = "formatted" in request.values("expand")
        items = [views.commit_item(c, formatted) for c in repo.history(commit.sha)]
        return self._paged(request, items, self._page("commits"))

    def _refs(self, request: Request, parts: list[str]) -> Response:
        repo = self._repo(request, parts[0], parts[1])
        return Response.json(views.refs(repo, request.flag("include_prs")))

    def _tree(self, request: Request, parts: list[str]) -> Response:
        repo = self._repo(request, parts[0], parts[1])
        commit = self._commit(repo, parts[3] if len(parts) > 3 else "main")
        folder = unquote("/".join(parts[4:])).strip("/")
        tree = self.store.tree(commit)
        prefix = folder + "/" if folder else ""
        if folder and not any(p.startswith(prefix) for p in tree):
            raise ErrorAnswer(404, "EntryNotFound", f"{folder} does not exist on {commit.sha}",
                           **{"X-Repo-Commit": commit.sha})  # fmt: skip
        expand = request.flag("expand")
        paths = self._listing(tree, prefix, request.flag("recursive"))
        items = [self._entry(repo, commit, tree, p, expand) for p in paths]
        return self._paged(request, items, self._page("tree_expand" if expand else "tree"))

    @staticmethod
    def _listing(tree: Mapping[str, Blob], prefix: str, recursive: bool) -> list[str]:
        entries: set[str] = set()
        for path in tree:
            if not path.startswith(prefix):
                continue
            parts = path[len(prefix) :].split("/")
            depth = len(parts) if recursive else 1
            for level in range(1, min(depth, len(parts)) + 1):
                entries.add(prefix + "/".join(parts[:level]))
        return sorted(entries, key=lambda p: (p not in tree, p) if not recursive else ("", p))

    def _entry(
        self, repo: Repo, commit: Commit, tree: Mapping[str, Blob], path: str, expand: bool
    ) -> dict[str, Any]:
        last = self.store.last_commit(repo, commit, path) if expand else None
        if path in tree:
            return views.file_entry(path, tree[path], last)
        oid = self.store.entry_id(commit, path) or ""
        return views.folder_entry(path, oid, last)

    def _paths_info(self, request: Request, parts: list[str]) -> Response:
        repo = self._repo(request, parts[0], parts[1])
        commit = self._commit(repo, parts[3] if len(parts) > 3 else "main")
        tree = self.store.tree(commit)
        expand = any(v.lower() in ("1", "true") for v in request.form.get("expand", []))
        items = []
        for path in request.form.get("paths", []):
            path = path.strip("/")
            if path in tree or self.store.entry_id(commit, path) is not None:
                items.append(self._entry(repo, commit, tree, path, expand))
        return Response.json(items)

    def _list_models(self, request: Request, parts: list[str]) -> Response:
        rows = self.store.listing(
            sort=(request.query.get("sort") or ["lastModified"])[0],
            author=(request.query.get("author") or [""])[0],
            search=((request.query.get("search") or [""])[0]).lower(),
            token=request.token,
        )
        limit = int((request.query.get("limit") or ["0"])[0] or 0)
        size = min(limit, self._page("list_models")) if limit else self._page("list_models")
        full = request.flag("full")
        expand = request.values("expand")

        def item(row: tuple[Repo, Commit]) -> dict[str, Any]:
            repo, head = row
            tree = functools.partial(self.store.tree, head)
            return views.list_item(repo, head, tree, full=full, expand=expand)

        return self._paged(request, rows, size, item)

    def _safetensors_metadata(self, request: Request, parts: list[str]) -> Response:
        repo = self._repo(request, parts[0], parts[1], files=True)
        commit = self._commit(repo, "main")
        tree = self.store.tree(commit)
        filename = unquote("/".join(parts[3:]))
        index = tree.get(filename)
        if index is None or index.text() is None:
            raise ErrorAnswer(404, "EntryNotFound", f"{filename} does not exist on main",
                           **{"X-Repo-Commit": commit.sha})  # fmt: skip
        document = json.loads(index.text() or b"{}")
        folder = filename.rsplit("/", 1)[0] + "/" if "/" in filename else ""
        headers = {}
        for shard in sorted(set(document.get("weight_map", {}).values())):
            blob = tree.get(folder + shard)
            prefix = b"".join(blob.body.chunks(0, min(blob.size, 8))) if blob else b""
            if blob and len(prefix) == 8:
                length = int.from_bytes(prefix, "little")
                headers[shard] = json.loads(b"".join(blob.body.chunks(8, 8 + length)))
        return Response.json({"index": {"metadata": document.get("metadata")}, "headers": headers})

    def _resolve(self, request: Request, parts: list[str]) -> Response:
        repo = self._repo(request, parts[0], parts[1], files=True)
        commit = self._commit(repo, parts[3])
        path = unquote("/".join(parts[4:]))
        blob = self.store.tree(commit).get(path)
        if blob is None:
            raise ErrorAnswer(
                404, "EntryNotFound", "Entry not found", **{"X-Repo-Commit": commit.sha}
            )
        headers = {
            "X-Repo-Commit": commit.sha,
            "ETag": f'"{blob.etag}"',
            "Accept-Ranges": "bytes",
            "Content-Type": "application/octet-stream" if blob.lfs else "text/plain; charset=utf-8",
            "Content-Disposition": f"inline; filename*=UTF-8''{quote(path.rsplit('/', 1)[-1])}",
        }
        if blob.lfs:
            headers["X-Linked-Etag"] = f'"{blob.lfs.sha256}"'
            headers["X-Linked-Size"] = str(blob.size)
        return Response(200, headers, blob.body)
