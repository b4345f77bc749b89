"""The one seam to the Hugging Face Hub: huggingface_hub's client, our types and errors.

Everything the tracker learns from the Hub comes through ``Hub``: the head
sha, the commit list, a revision's file list with sizes and content keys,
small text files read into memory under a byte limit, and safetensors
headers read with two range requests (8 bytes, then exactly the header) so a
weight body is never fetched (``tracker.untrusted.safetensors_header``). It
is built on the one ``HfApi`` of ``tracker.hub.api.connect`` (``HF_ENDPOINT``
and the token arrive through ``Settings``; tests point it at the Hub
emulator). A legacy one-part id (``gpt2``) is resolved to the ORG/NAME the
Hub answers with (``canonical``). huggingface_hub's exceptions become
``tracker.errors.HubError`` subclasses in ``tracker.hub.translate``. Nothing
here writes to disk: file names from the Hub are only ever URL parts.

Every request goes through one ``tracker.hub.retry.Retrying``: a 5xx, a 429, a
reset, a timeout or a body cut short costs that one request another try,
never the whole check. The commit list is paged here, rather than by
``HfApi.list_repo_commits``, so that its pages are retried the same way
(huggingface_hub pages it through its own fixed 1-2-4-8 s ``http_backoff``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC
from functools import partial
from typing import Any, TypeVar
from urllib.parse import quote

import httpx2
from huggingface_hub import HfApi, hf_hub_url
from huggingface_hub.utils import (  # type: ignore[attr-defined]  # lazily exported
    get_session,
    hf_raise_for_status,
    parse_datetime,
)

from storage.records import FileEntry, Revision
from tracker.errors import HubError, HubUnavailable, OversizedFile, RepoGone
from tracker.hub.api import HubAccess, RequestHeaders, connect
from tracker.hub.repo_id import RepoRef, validate_repo_id
from tracker.hub.retry import Retrying, RetryPolicy
from tracker.hub.translate import translate_hub_errors
from tracker.untrusted.safetensors_header import MAX_HEADER_BYTES, PREFIX, read_header

CHUNK = 64 * 1024
_Shape = TypeVar("_Shape", dict[str, Any], list[Any])
"""What a JSON answer must be: an object or a list."""


@dataclass(frozen=True)
class RepoFiles:
    """A revision's file list plus what the same API call says about the repo."""

    sha: str
    files: tuple[FileEntry, ...]
    gated: str | bool


class Hub:
    """Read-only access to model repos through huggingface_hub."""

    def __init__(
        self,
        api: HfApi,
        *,
        max_retries: int = 5,
        timeout: float = 30.0,
        retrying: Retrying | None = None,
    ) -> None:
        """``api`` from ``tracker.hub.api.connect``; ``max_retries`` retries per request;
        ``retrying``, when given, replaces that policy."""
        self.api = api
        self.endpoint = api.endpoint
        self.retrying = retrying or Retrying(RetryPolicy(attempts=max_retries + 1))
        self.timeout = timeout
        self._request_headers = RequestHeaders(api)

    @classmethod
    def from_settings(cls, access: HubAccess, retrying: Retrying | None = None) -> Hub:
        """The client for the settings' ``hub`` section: the section alone, so the Hub wing
        does not stand on the whole configuration."""
        return cls(connect(access), retrying=retrying)

    def canonical(self, ref: RepoRef) -> RepoRef:
        """``ref`` with a legacy one-part id (``gpt2``) replaced by the ORG/NAME it now lives at.

        That is ``model_info``'s ``id`` (one request): the Hub redirects a legacy
        id to the repo it moved to and answers with that repo's id; a table of
        ours would go stale as the Hub moves more of them.
        """
        if not ref.legacy:
            return ref
        with translate_hub_errors(ref.repo_id):
            info = self.retrying.call(
                partial(self.api.model_info, ref.repo_id, expand=["sha"], timeout=self.timeout)
            )
        if not isinstance(info.id, str) or "/" not in info.id:
            raise HubError(f"{ref.repo_id}: the Hub answered with no ORG/NAME id ({info.id!r})")
        return RepoRef(validate_repo_id(info.id), ref.revision)

    def known_id(self, legacy_id: str) -> str | None:
        """The ORG/NAME a legacy id resolves to, or None when the Hub knows no such repo."""
        try:
            return self.canonical(RepoRef(legacy_id)).repo_id
        except RepoGone:
            return None

    def head_sha(self, repo_id: str, revision: str = "main") -> str:
        """The commit ``revision`` points at now (one API request)."""
        validate_repo_id(repo_id)
        with translate_hub_errors(f"{repo_id}@{revision}"):
            info = self.retrying.call(
                partial(
                    self.api.model_info,
                    repo_id,
                    revision=revision,
                    expand=["sha"],
                    timeout=self.timeout,
                )
            )
        if not info.sha:
            raise HubError(f"{repo_id}@{revision}: the Hub sent no commit sha")
        return info.sha

    def commits(self, repo_id: str, revision: str = "main") -> list[Revision]:
        """The history of ``revision``, oldest first; parents follow the listed order."""
        repo = validate_repo_id(repo_id)
        where = f"{repo_id}@{revision}"
        # The path HfApi.list_repo_commits pages (huggingface_hub 2.4.0, hf_api.py).
        url: str | None = f"{self.endpoint}/api/models/{repo_id}/commits/{quote(revision, safe='')}"
        listed: list[Any] = []
        with translate_hub_errors(where):
            while url is not None:
                page, url = self.retrying.call(partial(self._get_page, where, url))
                listed.extend(page)
        oldest_first = [_commit_fields(where, item) for item in reversed(listed)]
        revisions = []
        for index, (sha, date, title, authors) in enumerate(oldest_first):
            parents = (oldest_first[index - 1][0],) if index else ()
            revisions.append(
                Revision(
                    repo_id=repo,
                    sha=sha,
                    parents=parents,
                    date=date if date.tzinfo else date.replace(tzinfo=UTC),
                    title=title,
                    author=authors or None,
                )
            )
        return revisions

    def files(self, repo_id: str, sha: str) -> RepoFiles:
        """Every file of the revision with size, git blob id and LFS sha256 (one request).

        The request is ``HfApi.model_info(revision=sha, files_metadata=True)``'s (huggingface_hub
        2.5, hf_api.py), sent on its session with its headers, and its JSON read straight into
        file entries: ``ModelInfo`` would build every field of the answer, and its validators and
        parsing cost more than the request itself, once per revision.
        """
        validate_repo_id(repo_id)
        where = f"{repo_id}@{sha}"
        # the query in the text: httpx parses a URL again for each ``params`` merged into it
        url = f"{self.endpoint}/api/models/{repo_id}/revision/{quote(sha, safe='')}?blobs=true"
        with translate_hub_errors(where):
            info = self.retrying.call(partial(self._get_object, where, url))
        siblings = info.get("siblings") or []
        try:
            entries = tuple(_file_entry(where, sibling) for sibling in siblings)
        except (KeyError, TypeError, ValueError) as exc:
            raise HubError(f"{where}: a file in the Hub's listing is malformed ({exc!r})") from exc
        listed_sha = info.get("sha")
        return RepoFiles(
            listed_sha if isinstance(listed_sha, str) and listed_sha else sha,
            entries,
            info.get("gated") or False,
        )

    def read_text(self, repo_id: str, sha: str, entry: FileEntry, limit: int) -> bytes:
        """The bytes of a small file, checked against its content key.

        Refuses with OversizedFile before reading if the listing or the
        response says it is over ``limit``, and stops reading at ``limit``
        if neither did. A body whose hash is not the listed key (truncated,
        corrupted) is fetched again, as any transient failure is.
        """
        where = f"{repo_id}@{sha}:{entry.path}"
        if entry.size > limit:
            raise OversizedFile(f"{where} is {entry.size:,} bytes, over the limit of {limit:,}")
        url = hf_hub_url(repo_id, entry.path, revision=sha, endpoint=self.endpoint)

        def fetch() -> bytes:
            data = self._get_body(where, url, limit)
            if _content_key(entry, data) != entry.content_key:
                raise HubUnavailable(
                    f"{where}: body of {len(data):,} bytes does not match its content key "
                    f"{entry.content_key} (truncated?)"
                )
            return data

        with translate_hub_errors(where):
            return self.retrying.call(fetch)

    def safetensors_header(
        self, repo_id: str, sha: str, entry: FileEntry, limit: int = MAX_HEADER_BYTES
    ) -> dict[str, Any]:
        """A listed safetensors file's header JSON: two range requests (8 bytes, then exactly
        the header), never the tensor data."""
        return self.header_at(repo_id, sha, entry.path, size=entry.size, limit=limit)

    def header_at(
        self,
        repo_id: str,
        revision: str,
        path: str,
        *,
        size: int = 0,
        limit: int = MAX_HEADER_BYTES,
        first_read: int = PREFIX,
    ) -> dict[str, Any]:
        """The header of the safetensors file at ``path`` (``size`` 0: not known), by range.

        ``first_read`` bytes are asked for first (``read_header``), so a caller that
        expects small headers can read one in a single request.
        """
        where = f"{repo_id}@{revision}:{path}"
        url = hf_hub_url(repo_id, path, revision=revision, endpoint=self.endpoint)

        def read(offset: int, length: int) -> bytes:
            data = self._get_range(where, url, offset, offset + length - 1)
            if len(data) < length and size and offset + len(data) < size:
                raise HubUnavailable(
                    f"{where}: range at {offset:,} returned {len(data):,} of {length:,} bytes"
                )
            return data

        return read_header(read, where, size=size, limit=limit, first_read=first_read)

    def _headers(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        return self._request_headers(extra)

    def _get_object(self, where: str, url: str) -> dict[str, Any]:
        """One JSON object from the Hub, as ``HfApi``'s own calls read it."""
        found, _ = self._get_json(where, url, dict, "an object")
        return found

    def _get_page(self, where: str, url: str) -> tuple[list[Any], str | None]:
        """One page of a paged listing and the next page's URL (from ``Link``), if any."""
        page, response = self._get_json(where, url, list, "a list")
        next_url = response.links.get("next", {}).get("url")
        return page, next_url if isinstance(next_url, str) else None

    def _get_json(
        self, where: str, url: str, shape: type[_Shape], named: str
    ) -> tuple[_Shape, httpx2.Response]:
        """The answer's JSON, which must be a ``shape``, and the response it came in."""
        response = get_session().get(url, headers=self._headers(), timeout=self.timeout)
        hf_raise_for_status(response)
        try:
            found = response.json()
        except ValueError as exc:
            raise HubUnavailable(f"{where}: the Hub's answer is not JSON: {exc}") from exc
        if not isinstance(found, shape):
            raise HubError(f"{where}: the Hub sent a {type(found).__name__} where {named} belongs")
        return found, response

    def _get_range(self, where: str, url: str, start: int, end: int) -> bytes:
        headers = self._headers({"Range": f"bytes={start}-{end}", "Accept-Encoding": "identity"})

        def fetch() -> httpx2.Response:
            response = get_session().get(url, headers=headers, timeout=self.timeout)
            hf_raise_for_status(response)
            return response

        with translate_hub_errors(where):
            response = self.retrying.call(fetch)
        data = response.content
        if response.status_code != 206 and len(data) > end - start + 1:
            # A server that ignores Range would send the whole body: keep only the slice.
            data = data[start : end + 1]
        return data

    def _get_body(self, where: str, url: str, limit: int) -> bytes:
        """One try at a body; errors stay huggingface_hub's and httpx's for the retry to sort."""
        headers = self._headers({"Accept-Encoding": "identity"})
        stream = get_session().stream("GET", url, headers=headers, timeout=self.timeout)
        with stream as response:
            if response.status_code >= 400:
                response.read()
                hf_raise_for_status(response)
            declared = response.headers.get("Content-Length")
            if declared and declared.isdigit() and int(declared) > limit:
                raise OversizedFile(f"{where} is {int(declared):,} bytes, over {limit:,}")
            return _read_capped(where, response.iter_bytes(CHUNK), limit)


def _read_capped(where: str, chunks: Iterator[bytes], limit: int) -> bytes:
    parts: list[bytes] = []
    size = 0
    for chunk in chunks:
        size += len(chunk)
        if size > limit:
            raise OversizedFile(f"{where} is over the limit of {limit:,} bytes; stopped reading")
        parts.append(chunk)
    return b"".join(parts)


def _file_entry(where: str, sibling: Any) -> FileEntry:
    """One ``siblings`` item of a ``blobs=true`` listing, read as ``RepoSibling`` reads it."""
    path = sibling["rfilename"]
    blob_id = sibling.get("blobId")
    if blob_id is None:
        raise HubError(f"{where}: {path!r} listed without a blob id")
    lfs = sibling.get("lfs")
    size = sibling.get("size")
    return FileEntry(
        path=path,
        size=int(size if size is not None else lfs["size"] if lfs else 0),
        blob_id=blob_id,
        lfs_sha256=lfs["sha256"] if lfs else None,
    )


def _commit_fields(where: str, item: Any) -> tuple[str, Any, str, str]:
    """(sha, date, title, authors) of one commit-list item, read as HfApi reads it."""
    try:
        authors = ", ".join(str(author["user"]) for author in item["authors"])
        return str(item["id"]), parse_datetime(item["date"]), str(item["title"] or ""), authors
    except (KeyError, TypeError, ValueError) as exc:
        raise HubError(f"{where}: a commit in the Hub's list is malformed ({exc!r})") from exc


def _content_key(entry: FileEntry, data: bytes) -> str:
    if entry.is_lfs:
        return hashlib.sha256(data).hexdigest()
    return hashlib.sha1(b"blob %d\x00" % len(data) + data).hexdigest()


__all__ = ["Hub", "RepoFiles"]
