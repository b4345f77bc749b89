"""The one seam to the Hugging Face Hub: huggingface_hub's client, our types and errors.

Everything the tracker learns from the Hub comes through ``Hub``: the head
sha, the commit list, a revision's file list with sizes and content keys,
small text files read into memory under a byte limit, and safetensors
headers read with two range requests (8 bytes, then exactly the header) so a
weight body is never fetched. ``HF_ENDPOINT`` arrives through ``Settings``;
tests point it at the Hub emulator. Without a token in the settings
(``HF_TOKEN``) the token is huggingface_hub's to find, as the library does:
``HF_TOKEN``, the file ``HF_TOKEN_PATH`` names, or ``$HF_HOME/token`` that
``hf auth login`` writes. A legacy one-part id (``gpt2``) is resolved to the
ORG/NAME the Hub answers with (``resolve_legacy``). huggingface_hub's
exceptions are translated into ``tracker.errors.HubError`` subclasses with
``raise ... from``. Nothing here writes to disk: file names from the Hub are
only ever URL parts.

Every request goes through one ``tracker.hub.retry.Retrying``: a 5xx, a 429, a
reset, a timeout or a body cut short costs that one request another try,
never the whole check. The commit list is paged here, rather than by
``HfApi.list_repo_commits``, so that its pages are retried the same way
(huggingface_hub pages it through its own fixed 1-2-4-8 s ``http_backoff``).
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC
from functools import partial
from typing import Any, Protocol
from urllib.parse import quote

import httpx2
from huggingface_hub import HfApi, constants, hf_hub_url
from huggingface_hub.errors import (
    DisabledRepoError,
    GatedRepoError,
    HfHubHTTPError,
    LocalEntryNotFoundError,
    OfflineModeIsEnabled,
    RemoteEntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)
from huggingface_hub.utils import (  # type: ignore[attr-defined]  # lazily exported
    build_hf_headers,
    get_session,
    hf_raise_for_status,
    parse_datetime,
)

from storage.records import FileEntry, Revision
from tracker.errors import (
    FileGone,
    Gated,
    HeaderInvalid,
    HeaderTooLarge,
    HubError,
    HubUnavailable,
    OversizedFile,
    RateLimited,
    RepoGone,
    RevisionGone,
)
from tracker.hub.repo_id import RepoRef, validate_repo_id
from tracker.hub.retry import RETRY_STATUSES, Retrying, RetryPolicy
from tracker.untrusted.json_input import JsonInputError, read_json

MAX_HEADER_BYTES = 100 * 1024 * 1024
"""Largest safetensors header read; the Hub's own client stops at 25 MB."""
CHUNK = 64 * 1024


@dataclass(frozen=True)
class RepoFiles:
    """A revision's file list plus what the same API call says about the repo."""

    sha: str
    files: tuple[FileEntry, ...]
    gated: str | bool


class HubAccess(Protocol):
    """Where the Hub is and who asks: ``tracker.settings.HubSettings`` is one."""

    @property
    def endpoint(self) -> str: ...

    @property
    def token(self) -> str | None: ...


class Hub:
    """Read-only access to model repos through huggingface_hub."""

    def __init__(
        self,
        endpoint: str,
        token: str | None = None,
        *,
        max_retries: int = 5,
        timeout: float = 30.0,
        retrying: Retrying | None = None,
    ) -> None:
        """``max_retries`` retries per request; ``retrying``, when given, replaces that policy."""
        self.endpoint = endpoint.rstrip("/")
        self._token = token  # None: huggingface_hub finds HF_TOKEN, HF_TOKEN_PATH, $HF_HOME/token
        self._api = HfApi(endpoint=self.endpoint, token=self._token)
        self.retrying = retrying or Retrying(RetryPolicy(attempts=max_retries + 1))
        self._timeout = timeout

    @classmethod
    def from_settings(cls, access: HubAccess, retrying: Retrying | None = None) -> Hub:
        """The client for the settings' ``hub`` section: the section alone, so the Hub wing
        does not stand on the whole configuration."""
        return cls(access.endpoint, access.token, retrying=retrying)

    def canonical(self, ref: RepoRef) -> RepoRef:
        """``ref`` with a legacy one-part id replaced by the ORG/NAME the Hub answers with."""
        if not ref.legacy:
            return ref
        return resolve_legacy(self._api, ref, self.retrying, self._timeout)

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
                    self._api.model_info,
                    repo_id,
                    revision=revision,
                    expand=["sha"],
                    timeout=self._timeout,
                )
            )
        if not info.sha:
            raise HubError(f"{repo_id}@{revision}: the Hub sent no commit sha")
        return info.sha

    def commits(self, repo_id: str, revision: str = "main") -> list[Revision]:
        """The history of ``revision``, oldest first; parents follow the listed order."""
        validate_repo_id(repo_id)
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
                    repo_id=repo_id,
                    sha=sha,
                    parents=parents,
                    date=date if date.tzinfo else date.replace(tzinfo=UTC),
                    title=title,
                    author=authors or None,
                )
            )
        return revisions

    def files(self, repo_id: str, sha: str) -> RepoFiles:
        """Every file of the revision with size, git blob id and LFS sha256 (one request)."""
        validate_repo_id(repo_id)
        with translate_hub_errors(f"{repo_id}@{sha}"):
            info = self.retrying.call(
                partial(
                    self._api.model_info,
                    repo_id,
                    revision=sha,
                    files_metadata=True,
                    timeout=self._timeout,
                )
            )
        entries = []
        for sibling in info.siblings or []:
            if sibling.blob_id is None:
                raise HubError(f"{repo_id}@{sha}: {sibling.rfilename!r} listed without a blob id")
            lfs = sibling.lfs
            entries.append(
                FileEntry(
                    path=sibling.rfilename,
                    size=int(sibling.size if sibling.size is not None else lfs.size if lfs else 0),
                    blob_id=sibling.blob_id,
                    lfs_sha256=lfs.sha256 if lfs else None,
                )
            )
        return RepoFiles(info.sha or sha, tuple(entries), info.gated or False)

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
        """A safetensors file's header JSON, read by range without touching the tensor data."""
        where = f"{repo_id}@{sha}:{entry.path}"
        url = hf_hub_url(repo_id, entry.path, revision=sha, endpoint=self.endpoint)
        prefix = self._get_range(where, url, 0, 7)
        if len(prefix) != 8:
            raise HeaderInvalid(f"{where}: file is shorter than the 8-byte header length")
        (length,) = struct.unpack("<Q", prefix)
        if length > limit:
            raise HeaderTooLarge(
                f"{where}: header declares {length:,} bytes, over the limit of {limit:,}; not read"
            )
        if entry.size and 8 + length > entry.size:
            raise HeaderInvalid(
                f"{where}: header declares {length:,} bytes but the file has {entry.size:,}"
            )
        raw = self._get_range(where, url, 8, 8 + length - 1) if length else b""
        if len(raw) != length:
            raise HubUnavailable(f"{where}: header range returned {len(raw):,} of {length:,} bytes")
        try:
            header = read_json(raw)
        except JsonInputError as exc:
            raise HeaderInvalid(f"{where}: header is not JSON: {exc}") from exc
        if not isinstance(header, dict):
            raise HeaderInvalid(f"{where}: header is not a JSON object")
        return header

    def _headers(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        headers: dict[str, str] = build_hf_headers(token=self._token)
        headers.update(extra or {})
        return headers

    def _get_page(self, where: str, url: str) -> tuple[list[Any], str | None]:
        """One page of a paged listing and the next page's URL (from ``Link``), if any."""
        response = get_session().get(url, headers=self._headers(), timeout=self._timeout)
        hf_raise_for_status(response)
        try:
            page = response.json()
        except ValueError as exc:
            raise HubUnavailable(f"{where}: the Hub's answer is not JSON: {exc}") from exc
        if not isinstance(page, list):
            raise HubError(f"{where}: the Hub sent a {type(page).__name__} where a list belongs")
        next_url = response.links.get("next", {}).get("url")
        return page, next_url if isinstance(next_url, str) else None

    def _get_range(self, where: str, url: str, start: int, end: int) -> bytes:
        headers = self._headers({"Range": f"bytes={start}-{end}", "Accept-Encoding": "identity"})

        def fetch() -> httpx2.Response:
            response = get_session().get(url, headers=headers, timeout=self._timeout)
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
        stream = get_session().stream("GET", url, headers=headers, timeout=self._timeout)
        with stream as response:
            if response.status_code >= 400:
                response.read()
                hf_raise_for_status(response)
            declared = response.headers.get("Content-Length")
            if declared and declared.isdigit() and int(declared) > limit:
                raise OversizedFile(f"{where} is {int(declared):,} bytes, over {limit:,}")
            return _read_capped(where, response.iter_bytes(CHUNK), limit)


def resolve_legacy(api: HfApi, ref: RepoRef, retrying: Retrying, timeout: float) -> RepoRef:
    """The ORG/NAME a legacy id (``gpt2``) now lives at: ``model_info``'s ``id`` (one request).

    The Hub redirects a legacy id to the repo it moved to and answers with that
    repo's id; a table of ours would go stale as the Hub moves more of them.
    """
    with translate_hub_errors(ref.repo_id):
        try:
            info = retrying.call(
                partial(api.model_info, ref.repo_id, expand=["sha"], timeout=timeout)
            )
        except HfHubHTTPError as exc:
            if exc.response is not None and exc.response.status_code == 404:
                raise RepoGone(f"{ref.repo_id}: the Hub knows no repo by this id") from exc
            raise
    if not isinstance(info.id, str) or "/" not in info.id:
        raise HubError(f"{ref.repo_id}: the Hub answered with no ORG/NAME id ({info.id!r})")
    return RepoRef(validate_repo_id(info.id), ref.revision)


def _read_capped(where: str, chunks: Iterator[bytes], limit: int) -> bytes:
    parts: list[bytes] = []
    size = 0
    for chunk in chunks:
        size += len(chunk)
        if size > limit:
            raise OversizedFile(f"{where} is over the limit of {limit:,} bytes; stopped reading")
        parts.append(chunk)
    return b"".join(parts)


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


@contextmanager
def translate_hub_errors(where: str) -> Iterator[None]:
    """huggingface_hub and transport exceptions as our HubError tree, cause kept."""
    try:
        yield
    except GatedRepoError as exc:
        raise Gated(
            f"{where}: repo is gated; accept its terms on the Hub, then set HF_TOKEN or run `hf auth login`"
        ) from exc
    except DisabledRepoError as exc:
        raise RepoGone(f"{where}: repo is disabled on the Hub") from exc
    except RepositoryNotFoundError as exc:
        raise RepoGone(f"{where}: repo not found (deleted, renamed, or private)") from exc
    except RevisionNotFoundError as exc:
        raise RevisionGone(f"{where}: revision not found (history rewritten?)") from exc
    except RemoteEntryNotFoundError as exc:
        raise FileGone(f"{where}: file not found at this revision") from exc
    except OfflineModeIsEnabled as exc:
        raise HubUnavailable(
            f"{where}: HF_HUB_OFFLINE is set and the HF cache does not hold it"
        ) from exc
    except LocalEntryNotFoundError as exc:
        cause = exc.__cause__ or exc.__context__
        if constants.HF_HUB_OFFLINE:
            reason = "HF_HUB_OFFLINE is set"
        elif cause is not None and not isinstance(cause, LocalEntryNotFoundError):
            reason = f"the Hub cannot be reached ({_reason(cause)})"
        else:
            reason = "the Hub cannot be reached"
        raise HubUnavailable(f"{where}: {reason} and the HF cache does not hold it") from exc
    except HfHubHTTPError as exc:
        raise _from_status(where, exc) from exc
    except httpx2.HTTPError as exc:
        raise HubUnavailable(f"{where}: {_reason(exc)}") from exc


def _reason(exc: BaseException) -> str:
    """An exception as one clause: its type, its text, and the retry's note if it gave up."""
    notes = "; ".join(getattr(exc, "__notes__", ()))
    text = f"{type(exc).__name__}: {exc}".splitlines()[0] if str(exc) else type(exc).__name__
    return f"{text} ({notes})" if notes else text


def _from_status(where: str, exc: HfHubHTTPError) -> HubError:
    response = exc.response
    status = response.status_code if response is not None else None
    if status == 429:
        hint = response.headers.get("Retry-After") if response is not None else None
        retry_after = float(hint) if hint and hint.replace(".", "", 1).isdigit() else None
        return RateLimited(f"{where}: rate limited by the Hub (HTTP 429)", retry_after)
    if status is not None and (status >= 500 or status in RETRY_STATUSES):
        notes = "; ".join(getattr(exc, "__notes__", ()))
        return HubUnavailable(
            f"{where}: the Hub answered HTTP {status}" + (f" ({notes})" if notes else "")
        )
    return HubError(f"{where}: the Hub answered HTTP {status}: {exc}")


__all__ = [
    "MAX_HEADER_BYTES",
    "Hub",
    "HubAccess",
    "RepoFiles",
    "resolve_legacy",
    "translate_hub_errors",
]
