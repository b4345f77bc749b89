"""From a request to a response: routing, access rules, the Hub's errors, listings, Range.

Paths are split on the raw ``/`` before any unquoting, so a revision sent as
``refs%2Fpr%2F1`` stays one segment.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import quote, unquote, urlencode

from tracker.hubsim import compare, views
from tracker.hubsim.blobs import Blob, InlineBody, lfs_pointer
from tracker.hubsim.history import Commit, Repo
from tracker.hubsim.messages import ErrorAnswer, Request, Response
from tracker.hubsim.store import HubStore

DEFAULT_PAGES = {"commits": 50, "tree": 1000, "tree_expand": 50, "list_models": 1000}
MAX_COMMITS_PAGE = 1000
"""The largest ``limit`` the Hub takes on the commits listing (huggingface.js list-commits.ts)."""
API_KINDS = {
    "revision": "model_info", "commits": "commits", "refs": "refs", "tree": "tree",
    "paths-info": "paths_info", "safetensors-metadata": "safetensors_metadata",
    "compare": "compare",
}  # fmt: skip
FILE_KINDS = {"resolve": "resolve", "raw": "raw"}

__all__ = ["ErrorAnswer", "Request", "Response", "Router", "classify"]


def classify(raw_path: str) -> tuple[str, list[str]]:
    """Endpoint kind and raw segments (``api`` paths lose their ``/api/models`` prefix)."""
    parts = raw_path.split("?", 1)[0].strip("/").split("/")
    if parts[:2] == ["api", "models"]:
        rest = parts[2:]
        if not rest:
            return "list_models", rest
        if len(rest) == 2:
            return "model_info", rest
        return (API_KINDS.get(rest[2], "other"), rest) if len(rest) > 2 else ("other", rest)
    if len(parts) >= 5 and parts[2] in FILE_KINDS:
        return FILE_KINDS[parts[2]], parts
    return "other", parts


class Router:
    """Dispatches each endpoint kind (``classify``) to its route, under the store's lock."""

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
            "raw": self._raw,
            "compare": self._compare,
            "list_models": self._list_models,
            "safetensors_metadata": self._safetensors_metadata,
        }

    def handle(self, kind: str, parts: list[str], request: Request) -> Response:
        """The answer to ``request``: a route's, an ErrorAnswer's, a legacy-id 307, or a 404."""
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
        # The clients read a refusal differently (huggingface_hub maps any 401 on a repo
        # URL to RepositoryNotFoundError, @huggingface/hub reports the status and the
        # body's "error"); the Hub answers one way for both, so this does: 401 to an
        # anonymous caller and 404 to a token without access, the same for a private repo
        # as for none, so a repo's existence is not revealed (Hub docs, "Repository not
        # found"; ../shared HUB-NOTES section B, Errors).
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
        *,
        page_param: str = "cursor",
    ) -> Response:
        """One page of ``items``; only the page's rows are rendered.

        ``cursor`` is an offset (tree, models); ``p`` a page number (commits, as the Hub's
        own Link header writes it). Clients follow ``Link: <...>; rel="next"`` verbatim.
        """
        number = request.number(page_param, 0)
        start = number * size if page_param == "p" else number
        page = [render(i) if render else i for i in items[start : start + size]]
        headers: dict[str, str] = {}
        if start + size < len(items):
            query = {k: v for k, v in request.query.items() if k != page_param}
            query[page_param] = [str(number + 1 if page_param == "p" else start + size)]
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
            repo,
            commit,
            tree,
            blobs=request.flag("blobs"),
            expand=_expand(request),
            safetensors=functools.partial(self.store.parameters, commit),
        )
        if request.flag("securityStatus"):
            body["securityRepoStatus"] = {"scansDone": True, "filesWithIssues": []}
        return Response.json(body)

    def _commits(self, request: Request, parts: list[str]) -> Response:
        repo = self._repo(request, parts[0], parts[1])
        commit = self._commit(repo, parts[3] if len(parts) > 3 else "main")
        formatted = "formatted" in request.values("expand")
        history = repo.history(commit.sha)
        size = min(request.number("limit", 0), MAX_COMMITS_PAGE) or self._page("commits")
        response = self._paged(
            request, history, size, lambda c: views.commit_item(c, formatted), page_param="p"
        )
        # @huggingface/hub's countCommits reads the total from here (count-commits.ts).
        response.headers["X-Total-Count"] = str(len(history))
        return response

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
        fields = request.fields()
        expand = any(v.lower() in ("1", "true") for v in fields.get("expand", []))
        items = []
        for path in fields.get("paths", []):
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
        expand = _expand(request)

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

    def _file(self, request: Request, parts: list[str]) -> tuple[Commit, str, Blob]:
        repo = self._repo(request, parts[0], parts[1], files=True)
        commit = self._commit(repo, parts[3])
        path = unquote("/".join(parts[4:]))
        blob = self.store.tree(commit).get(path)
        if blob is None:
            raise ErrorAnswer(
                404, "EntryNotFound", "Entry not found", **{"X-Repo-Commit": commit.sha}
            )
        return commit, path, blob

    def _resolve(self, request: Request, parts: list[str]) -> Response:
        """The file's content; LFS files also say their pointer's target (X-Linked-*).

        The Hub redirects an LFS resolve to its CDN; the emulator serves it in place,
        which huggingface_hub accepts (it reads X-Linked-Etag/-Size on either answer).
        """
        commit, path, blob = self._file(request, parts)
        headers = _file_headers(commit, path, blob.etag, lfs=blob.lfs is not None)
        if blob.lfs:
            headers["X-Linked-Etag"] = f'"{blob.lfs.sha256}"'
            headers["X-Linked-Size"] = str(blob.size)
        return _conditional(request, Response(200, headers, blob.body))

    def _raw(self, request: Request, parts: list[str]) -> Response:
        """The file as git stores it: an LFS file's pointer, any other file's content.

        @huggingface/hub's fileExists sends HEAD here (file-exists.ts); downloadFile with
        ``raw`` reads the pointer.
        """
        commit, path, blob = self._file(request, parts)
        if blob.lfs is None:
            body = blob.body
        else:
            body = InlineBody(lfs_pointer(blob.lfs.sha256, blob.lfs.size))
        headers = _file_headers(commit, path, blob.oid, lfs=False)
        return _conditional(request, Response(200, headers, body))

    def _compare(self, request: Request, parts: list[str]) -> Response:
        repo = self._repo(request, parts[0], parts[1], files=True)
        spec = unquote("/".join(parts[3:]))
        first, dots, second = spec.partition("..")
        if not dots or not first or not second:
            raise ErrorAnswer(400, None, f"Invalid compare spec {spec!r}: expected A..B")
        old = self.store.tree(self._commit(repo, first))
        new = self.store.tree(self._commit(repo, second))
        if request.flag("raw"):
            return Response.text(compare.raw_diff(old, new))
        return Response.text(compare.unified_diff(old, new))


def _expand(request: Request) -> list[str]:
    """The ``expand`` keys asked for; an unknown one is refused with 400 as the Hub does."""
    keys = request.values("expand")
    unknown = [key for key in keys if key not in views.EXPANDABLE]
    if unknown:
        allowed = ", ".join(sorted(views.EXPANDABLE))
        raise ErrorAnswer(400, None, f'"expand" must be one of [{allowed}] (got {unknown[0]!r})')
    return keys


def _file_headers(commit: Commit, path: str, etag: str, *, lfs: bool) -> dict[str, str]:
    """The headers of a file answer. ETags are quoted, as HTTP (RFC 9110 8.8.3) and the Hub
    write them: huggingface_hub strips the quotes, @huggingface/hub's fileDownloadInfo
    returns the header as sent; the emulator follows the Hub rather than either client."""
    return {
        "X-Repo-Commit": commit.sha,
        "ETag": f'"{etag}"',
        "Accept-Ranges": "bytes",
        "Content-Type": "application/octet-stream" if lfs else "text/plain; charset=utf-8",
        "Content-Disposition": f"inline; filename*=UTF-8''{quote(path.rsplit('/', 1)[-1])}",
    }


def _conditional(request: Request, response: Response) -> Response:
    """304 with no body when ``If-None-Match`` names the file's ETag (or ``*``)."""
    wanted = request.header("If-None-Match")
    if not wanted:
        return response
    tags = {t.strip().removeprefix("W/") for t in wanted.split(",")}
    current = {response.headers["ETag"], response.headers.get("X-Linked-Etag", "")}
    if "*" in tags or tags & current:
        return Response(304, dict(response.headers), InlineBody(b""))
    return response
