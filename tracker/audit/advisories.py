"""Where an audit reads advisories: the local database, or any OSV-compatible API.

Both give the same ``Published`` facts per repo: the advisory id, the
transition it reports (old sha -> new sha), its severity and summary. The
remote one speaks OSV.dev's protocol as pip-audit and osv-scanner do: one
``POST /v1/querybatch`` with a purl query per repo (repeated with
``page_token`` while a result carries ``next_page_token``), then
``GET /v1/vulns/{id}`` per advisory id for its transition and severity. So
it runs against a remote neurarch-trace, or any server that serves these
advisories. Withdrawn advisories are left out by both.

A server is as untrusted as a repo: each answer is read in chunks up to
``MAX_ANSWER_BYTES`` and parsed by ``read_json`` (depth and integer limits),
a whole answer must arrive within ``timeout`` seconds (a server that drips
a byte at a time is cut off, not waited on), and a repo whose pages keep
coming past ``MAX_PAGES``, or that hands back a token it already gave, is
refused rather than followed for ever.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import quote

import requests

from storage import Database, NotFound, RepoId, advisories, get_repo, revisions
from storage.records import Advisory, Severity
from tracker.errors import JsonInputError, TrackerError
from tracker.untrusted.json_input import read_json

PURL_PREFIX = "pkg:huggingface/"
MAX_BATCH = 1000
"""OSV.dev's limit of queries per /v1/querybatch."""
MAX_ANSWER_BYTES = 32 * 2**20
"""A querybatch of 1,000 repos names ids only (OSV.dev: about 100 bytes an id), and
one advisory document is a few kB; 32 MiB is far past both."""
MAX_PAGES = 1000
"""Pages followed per repo: at the 1,000 ids a page OSV.dev returns, a million advisories."""
CHUNK_BYTES = 64 * 1024


class AdvisoryServerError(TrackerError):
    """The advisory server cannot be reached or answered something that is not OSV."""


SECURITY_CHANGES = frozenset(
    {("code", "*"), ("remote_code", "*"), ("weights", "pickle_added"), ("repo", "unsafe_path")}
)
"""(artifact, change kind) pairs that are about what runs on the user's machine, not what a
model computes: code ``trust_remote_code`` would run (the repo's own or another repo's),
pickles that unpickle arbitrary code when loaded, names that could escape a directory."""


@dataclass(frozen=True)
class Published:
    """One advisory as an audit needs it: which transition of which repo, how severe, and
    which (artifact, kind) changes it reports."""

    id: str
    repo_id: str
    old_sha: str | None
    new_sha: str
    severity: Severity
    summary: str
    changes: tuple[tuple[str, str], ...] = ()

    @property
    def security_relevant(self) -> bool:
        """Whether any change it reports can run code or write files on a user's machine."""
        return any(
            (artifact, kind) in SECURITY_CHANGES or (artifact, "*") in SECURITY_CHANGES
            for artifact, kind in self.changes
        )


class AdvisorySource(Protocol):
    """Advisories per repo id, from wherever they are kept, and what they cannot speak for."""

    def for_repos(self, repo_ids: Iterable[str]) -> dict[str, list[Published]]:
        """The unwithdrawn advisories of each repo id, every id a key (an empty list: none).

        Raises AdvisoryServerError when a remote source cannot be read.
        """
        ...

    def gap(self, repo_id: str, after: Sequence[str]) -> str | None:
        """Why no advisory list from here can judge the revisions ``after`` a pin (main's,
        oldest first), or None when it can: an empty list then means "no finding"."""
        ...


class DatabaseAdvisories:
    """The advisories this installation published, read from its database."""

    def __init__(self, database: Database) -> None:
        self._database = database

    def gap(self, repo_id: str, after: Sequence[str]) -> str | None:
        """The repo is not known here, or revisions after the pin are not recorded yet.

        A recorded revision is published in its own transaction, so recorded
        means judged; an unrecorded one has published nothing yet.
        """
        with self._database.read_session() as session:
            try:
                # a pin's id is only a lookup key here: one storage never stored finds nothing
                key = RepoId(repo_id)
                tracked = get_repo(session, key).tracked
                recorded = {r.sha for r in revisions(session, key, include_off_main=True)}
            except NotFound:
                tracked, recorded = False, set()
        if not recorded and not tracked:
            return (
                f"{repo_id} is not tracked here, so no advisories are published for it: "
                f"run `neurarch-trace track {repo_id}`, or give --server URL of a "
                "neurarch-trace that tracks it"
            )
        missing = [sha for sha in after if sha not in recorded]
        if not missing:
            return None
        how = (
            "the daemon (`neurarch-trace serve`) records them on its next check, or "
            f"`neurarch-trace track --backfill {repo_id}` records them now"
            if tracked
            else f"{repo_id} is no longer tracked: `neurarch-trace track --backfill {repo_id}`"
        )
        return (
            f"nothing published yet for {len(missing)} of the {len(after)} revisions after "
            f"the pin (first: {missing[0][:12]}); {how}"
        )

    def for_repos(self, repo_ids: Iterable[str]) -> dict[str, list[Published]]:
        """The advisories this database published per repo, withdrawn ones left out."""
        found: dict[str, list[Published]] = {}
        with self._database.read_session() as session:
            for repo_id in dict.fromkeys(repo_ids):
                found[repo_id] = [
                    _published(a)
                    for a in advisories(session, repo_id=RepoId(repo_id))  # a lookup key only
                    if not a.withdrawn
                ]
        return found


class OsvServerAdvisories:
    """Advisories from an OSV-compatible API at ``base_url`` (e.g. a remote ``serve``)."""

    def __init__(
        self, base_url: str, session: requests.Session | None = None, timeout: float = 30.0
    ) -> None:
        self._base = base_url.rstrip("/")
        self._session = session or requests.Session()
        self._timeout = timeout

    def gap(self, repo_id: str, after: Sequence[str]) -> str | None:
        """None: the server's answer is taken as its judgement (OSV says nothing of what
        a server has not processed yet)."""
        return None

    def for_repos(self, repo_ids: Iterable[str]) -> dict[str, list[Published]]:
        """One querybatch per 1,000 repos, then one GET per advisory id: network I/O to the server.

        Raises AdvisoryServerError for an unreachable server, a non-OSV answer or endless pages.
        """
        wanted = list(dict.fromkeys(repo_ids))
        ids: dict[str, list[str]] = {repo_id: [] for repo_id in wanted}
        for start in range(0, len(wanted), MAX_BATCH):
            self._collect_ids(wanted[start : start + MAX_BATCH], ids)
        found: dict[str, list[Published]] = {}
        for repo_id, listed in ids.items():
            documents = (self._document(i) for i in dict.fromkeys(listed))
            found[repo_id] = [
                p for p in (_from_osv(d, repo_id) for d in documents) if p is not None
            ]
        return found

    def _collect_ids(self, repo_ids: list[str], into: dict[str, list[str]]) -> None:
        pending: dict[str, str | None] = {repo_id: None for repo_id in repo_ids}
        seen: dict[str, set[str]] = {repo_id: set() for repo_id in repo_ids}
        while pending:
            order = list(pending)
            queries = [_query(repo_id, pending[repo_id]) for repo_id in order]
            results = self._post("/v1/querybatch", {"queries": queries}).get("results", [])
            if not isinstance(results, list) or len(results) != len(order):
                raise AdvisoryServerError(
                    f"{self._base}: querybatch answered {len(order)} queries with {len(results) if isinstance(results, list) else 'no'} results"
                )
            pending = {}
            for repo_id, result in zip(order, results, strict=True):
                vulns = result.get("vulns", []) if isinstance(result, dict) else []
                into[repo_id].extend(
                    str(v["id"]) for v in vulns if isinstance(v, dict) and "id" in v
                )
                token = result.get("next_page_token") if isinstance(result, dict) else None
                if token:
                    pending[repo_id] = self._next_page(repo_id, str(token), seen[repo_id])

    def _next_page(self, repo_id: str, token: str, seen: set[str]) -> str:
        """``token``, unless it repeats or the pages run past ``MAX_PAGES``."""
        if token in seen:
            raise AdvisoryServerError(
                f"{self._base}: querybatch gave {repo_id} the page token {token[:40]!r} twice"
            )
        if len(seen) >= MAX_PAGES:
            raise AdvisoryServerError(
                f"{self._base}: querybatch kept paging {repo_id} past {MAX_PAGES:,} pages"
            )
        seen.add(token)
        return token

    def _document(self, advisory_id: str) -> Mapping[str, Any]:
        return self._request("GET", f"/v1/vulns/{quote(advisory_id, safe='')}", None)

    def _post(self, path: str, body: Mapping[str, Any]) -> Mapping[str, Any]:
        return self._request("POST", path, body)

    def _request(self, method: str, path: str, body: Mapping[str, Any] | None) -> Mapping[str, Any]:
        url = f"{self._base}{path}"
        try:
            with self._session.request(
                method, url, json=body, timeout=self._timeout, stream=True
            ) as response:
                raw = self._bounded_body(response, url)
        except requests.RequestException as exc:
            raise AdvisoryServerError(f"{url}: cannot reach the advisory server ({exc})") from exc
        if response.status_code != 200:
            excerpt = raw[:200].decode("utf-8", "replace")
            raise AdvisoryServerError(f"{url}: HTTP {response.status_code}: {excerpt}")
        try:
            document = read_json(raw)
        except JsonInputError as exc:
            raise AdvisoryServerError(f"{url}: the answer is not JSON ({exc})") from exc
        if not isinstance(document, dict):
            raise AdvisoryServerError(f"{url}: the answer is not a JSON object")
        return document

    def _bounded_body(self, response: requests.Response, url: str) -> bytes:
        """The body, refused past ``MAX_ANSWER_BYTES`` or when it takes over ``timeout`` seconds."""
        deadline = time.monotonic() + self._timeout
        body = bytearray()
        # read1 returns what has arrived, so the deadline is checked while a server drips.
        while chunk := response.raw.read1(CHUNK_BYTES, decode_content=True):
            body += chunk
            if len(body) > MAX_ANSWER_BYTES:
                raise AdvisoryServerError(
                    f"{url}: the answer passed {MAX_ANSWER_BYTES:,} bytes; not read further"
                )
            if time.monotonic() > deadline:
                raise AdvisoryServerError(
                    f"{url}: the answer took over {self._timeout:g} s; not read further"
                )
        return bytes(body)


def _query(repo_id: str, page_token: str | None) -> dict[str, Any]:
    query: dict[str, Any] = {"package": {"purl": f"{PURL_PREFIX}{repo_id}"}}
    if page_token:
        query["page_token"] = page_token
    return query


def _published(advisory: Advisory) -> Published:
    return Published(
        advisory.id,
        advisory.repo_id,
        advisory.old_sha,
        advisory.new_sha,
        advisory.severity,
        advisory.summary,
        _changes(advisory.osv),
    )


def _from_osv(document: Mapping[str, Any], repo_id: str) -> Published | None:
    """Our fields of an OSV document, from ``database_specific`` or the affected versions."""
    if document.get("withdrawn"):
        return None
    specific = document.get("database_specific")
    specific = specific if isinstance(specific, dict) else {}
    new_sha = specific.get("new_sha") or _introduced(document)
    if not isinstance(new_sha, str):
        return None
    old_sha = specific.get("old_sha")
    try:
        severity = Severity.parse(str(specific.get("severity", "moderate")))
    except ValueError:
        severity = Severity.MODERATE
    return Published(
        str(document.get("id")),
        repo_id,
        old_sha if isinstance(old_sha, str) else None,
        new_sha,
        severity,
        str(document.get("summary", "")),
        _changes(document),
    )


def _changes(document: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """(artifact, kind) of each change ``database_specific`` lists; none from other databases."""
    specific = document.get("database_specific")
    listed = specific.get("changes") if isinstance(specific, dict) else None
    if not isinstance(listed, list):
        return ()
    return tuple(
        (str(c.get("artifact", "")), str(c.get("kind", ""))) for c in listed if isinstance(c, dict)
    )


def _introduced(document: Mapping[str, Any]) -> str | None:
    """The first affected version: the sha the transition introduced."""
    for affected in document.get("affected") or []:
        versions = affected.get("versions") if isinstance(affected, dict) else None
        if versions:
            return str(versions[0])
    return None


__all__ = [
    "AdvisoryServerError",
    "AdvisorySource",
    "DatabaseAdvisories",
    "OsvServerAdvisories",
    "Published",
]
