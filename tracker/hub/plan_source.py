"""A plan's inputs straight from the Hub: ``ORG/NAME[@REV]`` or a Hub URL, nothing else read.

Users name a model the way the estimators they already know do (accelerate's
``estimate-memory`` and hf-mem take a repo id). A plan needs config.json and
the weight manifest, never a weight body, so a Hub source costs these
requests, all through the one ``HfApi`` of the ``Hub`` it is given
(``HF_ENDPOINT``, ``HF_TOKEN`` and the HF cache honoured as the library does):

1. config.json: first its metadata (``get_hf_file_metadata``, a HEAD that
   resolves REV to its commit, says the file's size, and is where a gated or
   missing repo answers), so a file larger than the tracker reads
   (``tracker.untrusted.artifacts.TEXT_LIMIT``) is refused before a byte of it is
   downloaded; then ``hf_hub_download`` at REV itself (a HEAD and a GET), so
   the HF cache holds the file *and* ``refs/REV`` as huggingface_hub would
   leave them, and a later ``HF_HUB_OFFLINE=1`` plan finds them. None at all
   when the cache already holds the file at that commit.
2. model.safetensors.index.json the same way; huggingface_hub keeps a 404 in
   the cache as "no such file at this commit" (``_CACHED_NO_EXIST``, read
   with ``try_to_load_from_cache``), so it is asked once per commit.
3. Only when there is no index: the header of model.safetensors, by one range
   request of the first 100,000 bytes, as ``HfApi.get_safetensors_metadata``
   asks (huggingface_hub 2.5.0, hf_api.py ``parse_safetensors_file_metadata``),
   a second request only for a larger header; the framing and the caps are
   the daemon's (``tracker.untrusted.safetensors_header``). The cache does not
   hold headers, so this one is made again on a repeated plan.

A legacy one-part id (``gpt2``) costs one ``model_info`` first, whose ``id``
is the ORG/NAME the Hub moved it to (``tracker.hub.client.Hub.canonical``).

Retries are ``tracker.hub.retry``'s alone: the metadata HEAD and the header read
go through the Hub's ``Retrying``, whose policy bounds the total time, and the HEAD
is made without huggingface_hub's own backoff (``retry_on_errors=False``), so
an unreachable Hub costs a few seconds and one line, not two stacked layers.
When the Hub cannot be reached (or ``HF_HUB_OFFLINE`` is set) the HF cache
answers as huggingface_hub's does: ``refs/REV``, then the snapshot; a
manifest the cache does not hold is left out rather than failing the plan.

That is six requests at most for a header under 100 kB; a repeated plan of
the same sha costs none for a sharded checkpoint and one for a single file.
A revision the local database already recorded (REV a full sha) costs none:
its config and manifest come from the blob store.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from huggingface_hub import _CACHED_NO_EXIST, constants, hf_hub_url, try_to_load_from_cache
from huggingface_hub.errors import LocalEntryNotFoundError, RemoteEntryNotFoundError

from estimator import WeightManifest
from estimator.errors import EstimateError
from storage import Database, RepoId, get_blob, has_revision, snapshot_at
from tracker.errors import FileGone, HubError
from tracker.hub.client import Hub
from tracker.hub.repo_id import RepoRef, parse_repo_ref
from tracker.hub.retry import is_transient
from tracker.hub.source_shape import could_be_hub_ref
from tracker.hub.translate import translate_hub_errors
from tracker.untrusted.artifacts import TEXT_LIMIT
from tracker.untrusted.json_input import JsonInputError, read_json

CONFIG = "config.json"
INDEX = "model.safetensors.index.json"
SINGLE_FILE = "model.safetensors"
MAX_INPUT_BYTES = TEXT_LIMIT
"""The daemon reads no config or index larger than this, so neither does a plan.

The corpus's largest config.json is 30 kB and its largest index 1.7 MB.
"""
FULL_SHA = re.compile(r"[0-9a-f]{40}")
FIRST_HEADER_READ = 100_000
"""Bytes of model.safetensors asked for at once: huggingface_hub 2.5.0, hf_api.py,
``parse_safetensors_file_metadata`` (its first range request)."""


HubRef = RepoRef
"""A model repo on the Hub and the revision asked for (tracker.hub.repo_id's ``RepoRef``)."""


@dataclass(frozen=True)
class PlanInputs:
    """What a plan reads from one revision, and where it came from (``hub`` or ``database``)."""

    ref: HubRef
    sha: str
    config: Any
    manifest: WeightManifest | None
    origin: str


def parse_hub_ref(text: str, endpoint: str | None = None) -> HubRef | None:
    """The Hub reference ``text`` names (tracker.hub.repo_id's one parser); None when not one.

    None only for what cannot be a reference (a path-like SOURCE); a reference
    that breaks a rule raises RepoIdError naming it.
    """
    if not could_be_hub_ref(text):
        return None
    return parse_repo_ref(text, endpoint)


class HubPlanSource:
    """Reads a revision's config.json and weight manifest from the Hub (see the module text)."""

    def __init__(self, hub: Hub, *, cache_dir: Path | None = None) -> None:
        """Requests go through ``hub``'s client, retries and timeout (a person waits on a plan:
        ``tracker.hub.retry.INTERACTIVE`` fits)."""
        self._hub = hub
        self._cache_dir = cache_dir
        self._cache_only = False
        """Set for the rest of a fetch once the cache had to answer (offline, or the Hub down)."""

    def fetch(self, ref: HubRef) -> PlanInputs:
        """config.json and the manifest at ``ref``; HubError subclasses on every Hub refusal."""
        ref = self._hub.canonical(ref)
        self._cache_only = bool(constants.HF_HUB_OFFLINE)
        config_path = self._download(ref, ref.revision, CONFIG)
        sha = config_path.parent.name  # hf_hub_download's snapshots/<commit>/<file> layout
        where = f"{ref.repo_id}@{sha[:12]}"
        config = _json_file(config_path, f"{where}:{CONFIG}")
        return PlanInputs(ref, sha, config, self._manifest(ref, sha, where), "hub")

    def _manifest(self, ref: HubRef, sha: str, where: str) -> WeightManifest | None:
        cached = self._cached(ref, sha, INDEX)
        if self._cache_only and not isinstance(cached, str):
            return None  # the Hub is out of reach: the cache's index or nothing (no header)
        if cached is not _CACHED_NO_EXIST:
            try:
                index = _json_file(self._download(ref, sha, INDEX), f"{where}:{INDEX}")
                return _checked(lambda: WeightManifest.from_index(index), f"{where}:{INDEX}")
            except FileGone:
                pass
        try:
            header = self._hub.header_at(
                ref.repo_id, sha, SINGLE_FILE, first_read=FIRST_HEADER_READ
            )
        except FileGone:
            return None
        return _checked(lambda: WeightManifest.from_headers([header]), f"{where}:{SINGLE_FILE}")

    def _cached(self, ref: HubRef, sha: str, filename: str) -> object:
        """huggingface_hub's cache entry: a path, ``_CACHED_NO_EXIST`` (a 404 it kept), or None."""
        return try_to_load_from_cache(
            ref.repo_id, filename, cache_dir=self._cache_dir, revision=sha
        )

    def _download(self, ref: HubRef, revision: str | None, filename: str) -> Path:
        """The cached file at ``revision``, its size checked before it is downloaded."""
        where = f"{ref.label}:{filename}"
        args = self._download_args(ref, revision, filename)
        if revision is not None and FULL_SHA.fullmatch(revision):
            cached = self._cached(ref, revision, filename)
            if isinstance(cached, str):  # a commit's file never changes: no request
                return _sized(Path(cached), where)
        hub = self._hub
        with translate_hub_errors(where):
            if self._cache_only:
                return _sized(self._download_file(args, local_files_only=True), where)
            url = hf_hub_url(ref.repo_id, filename, revision=revision, endpoint=hub.endpoint)
            try:
                metadata = hub.retrying.call(
                    partial(hub.api.get_hf_file_metadata, url=url, timeout=hub.timeout)
                )
            except RemoteEntryNotFoundError:
                self._download_file(args)  # raises it again; the cache keeps the 404 for this sha
                raise
            except Exception as exc:
                if not is_transient(exc):
                    raise
                path = self._from_cache(args, exc)  # the Hub is down: the cache answers
                self._cache_only = True
                return _sized(path, where)
            if metadata.size is not None and metadata.size > MAX_INPUT_BYTES:
                raise HubError(_too_large(where, metadata.size))
            return _sized(self._download_file(args), where)

    def _download_file(self, args: dict[str, Any], *, local_files_only: bool = False) -> Path:
        """``hf_hub_download`` through the Hub's client: the file's path in the HF cache."""
        return Path(self._hub.api.hf_hub_download(**args, local_files_only=local_files_only))

    def _from_cache(self, args: dict[str, Any], failure: Exception) -> Path:
        """The cache's copy (``refs/REV``, then the snapshot), or the Hub's failure if none."""
        try:
            return self._download_file(args, local_files_only=True)
        except LocalEntryNotFoundError:
            failure.add_note("the HF cache does not hold it")
            raise failure from None

    def _download_args(self, ref: HubRef, revision: str | None, filename: str) -> dict[str, Any]:
        return {
            "repo_id": ref.repo_id,
            "filename": filename,
            "revision": revision,
            "cache_dir": self._cache_dir,
            "etag_timeout": self._hub.timeout,
        }


def recorded_inputs(database: Database, ref: HubRef) -> PlanInputs | None:
    """The inputs of a revision the database recorded, when REV names it by full sha; else None."""
    sha = (ref.revision or "").lower()
    if not FULL_SHA.fullmatch(sha):
        return None
    with database.read_session() as session:
        repo = RepoId(ref.repo_id)  # a lookup key only: an id storage never stored finds nothing
        if not has_revision(session, repo, sha):
            return None
        snapshot = snapshot_at(session, repo, sha)
        key = snapshot.texts.get(CONFIG)
        if key is None:
            return None
        raw = get_blob(session, key)
    where = f"{ref.repo_id}@{sha[:12]}:{CONFIG}"
    config = _json_bytes(raw, where)
    manifest = snapshot.manifest or {}
    tensors = manifest.get("tensors")
    headers_ok = not any(
        isinstance(h, dict) and h.get("error") for h in _mapping(manifest.get("headers")).values()
    )
    weights = (
        _checked(lambda: WeightManifest.from_headers([tensors]), where)
        if isinstance(tensors, dict) and tensors and headers_ok
        else None
    )
    return PlanInputs(ref, sha, config, weights, "database")


def _mapping(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _sized(path: Path, where: str) -> Path:
    """``path`` unless the file grew past the limit (a server that lied about its size)."""
    size = path.stat().st_size
    if size > MAX_INPUT_BYTES:
        raise HubError(_too_large(where, size))
    return path


def _too_large(where: str, size: int) -> str:
    return f"{where}: {size:,} bytes, larger than the tracker reads ({MAX_INPUT_BYTES:,})"


def _json_file(path: Path, where: str) -> Any:
    return _json_bytes(path.read_bytes(), where)


def _json_bytes(raw: bytes, where: str) -> Any:
    try:
        return read_json(raw)
    except JsonInputError as exc:
        raise HubError(f"{where}: not valid JSON ({exc})") from exc


def _checked(build: Callable[[], WeightManifest], where: str) -> WeightManifest:
    try:
        return build()
    except EstimateError as exc:
        raise HubError(f"{where}: {exc}") from exc


__all__ = ["HubPlanSource", "HubRef", "PlanInputs", "parse_hub_ref", "recorded_inputs"]
