"""A plan's inputs straight from the Hub: ``ORG/NAME[@REV]`` or a Hub URL, nothing else read.

Users name a model the way the estimators they already know do (accelerate's
``estimate-memory`` and hf-mem take a repo id). A plan needs config.json and
the weight manifest, never a weight body, so a Hub source costs these
requests, all through huggingface_hub (``HF_ENDPOINT``, ``HF_TOKEN`` and the
HF cache honoured as the library does):

1. config.json with ``hf_hub_download``: first a dry run, a HEAD that
   resolves REV to its commit, says the file's size (and is where a gated or
   missing repo answers), so a file larger than the tracker reads
   (``tracker.artifacts.TEXT_LIMIT``) is refused before a byte of it is
   downloaded; then the download itself, a HEAD and a GET. None at all when
   the cache already holds the file at that commit.
2. model.safetensors.index.json the same way; huggingface_hub keeps a 404 in
   the cache as "no such file at this commit" (``_CACHED_NO_EXIST``, read
   with ``try_to_load_from_cache``), so it is asked once per commit.
3. Only when there is no index: the header of model.safetensors, by one range
   request, as ``HfApi.get_safetensors_metadata`` reads it (huggingface_hub
   2.4.0, hf_api.py ``parse_safetensors_file_metadata``: the first 100,000
   bytes, a second request only for a larger header). The cache does not
   hold headers, so this one is made again on a repeated plan.

That is six requests at most for a header under 100 kB; a repeated plan of
the same sha costs none for a sharded checkpoint and one for a single file.
A revision the local database already recorded (REV a full sha) costs none:
its config and manifest come from the blob store.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from huggingface_hub import (
    _CACHED_NO_EXIST,
    HfApi,
    hf_hub_download,
    parse_hf_uri,
    try_to_load_from_cache,
)
from huggingface_hub.errors import HfUriError

from estimator import WeightManifest
from estimator.errors import EstimateError
from storage import Database, get_blob, has_revision, snapshot_at
from tracker.artifacts import TEXT_LIMIT
from tracker.errors import FileGone, HubError
from tracker.hub import translate_hub_errors
from tracker.json_input import JsonInputError, read_json
from tracker.repo_id import validate_repo_id
from tracker.source_shape import could_be_hub_ref

CONFIG = "config.json"
INDEX = "model.safetensors.index.json"
SINGLE_FILE = "model.safetensors"
MAX_INPUT_BYTES = TEXT_LIMIT
"""The daemon reads no config or index larger than this, so neither does a plan.

The corpus's largest config.json is 30 kB and its largest index 1.7 MB.
"""
FULL_SHA = re.compile(r"[0-9a-f]{40}")


@dataclass(frozen=True)
class HubRef:
    """A model repo on the Hub and the revision asked for (None: its default branch)."""

    repo_id: str
    revision: str | None = None

    @property
    def label(self) -> str:
        return f"{self.repo_id}@{self.revision}" if self.revision else self.repo_id


@dataclass(frozen=True)
class PlanInputs:
    """What a plan reads from one revision, and where it came from (``hub`` or ``database``)."""

    ref: HubRef
    sha: str
    config: Any
    manifest: WeightManifest | None
    origin: str


def parse_hub_ref(text: str, endpoint: str | None = None) -> HubRef | None:
    """``ORG/NAME``, ``ORG/NAME@REV``, ``hf://...`` or a model page URL; None when none of these.

    URLs on ``endpoint`` count as Hub URLs too, so a mirror's (or the emulator's)
    page URLs work. Dataset, space and bucket URIs are refused with a reason.
    """
    if not could_be_hub_ref(text):
        return None
    uri = text if "://" in text else f"hf://{text}"
    try:
        parsed = parse_hf_uri(uri, endpoint=endpoint)
    except HfUriError as exc:
        if uri.startswith("hf://") or "huggingface.co" in uri:
            raise HubError(f"{text}: not a model repo reference ({exc})") from exc
        return None
    if parsed.type != "model":
        raise HubError(f"{text}: a {parsed.type}, not a model repo")
    return HubRef(validate_repo_id(parsed.id), parsed.revision or None)


class HubPlanSource:
    """Reads a revision's config.json and weight manifest from the Hub (see the module text)."""

    def __init__(
        self,
        endpoint: str,
        token: str | None = None,
        *,
        cache_dir: Path | None = None,
        timeout: float = 30.0,
    ) -> None:
        self._endpoint = endpoint.rstrip("/")
        self._token: str | bool = token or False
        self._cache_dir = cache_dir
        self._timeout = timeout
        self._api = HfApi(endpoint=self._endpoint, token=self._token)

    def fetch(self, ref: HubRef) -> PlanInputs:
        """config.json and the manifest at ``ref``; HubError subclasses on every Hub refusal."""
        config_path = self._download(ref, ref.revision, CONFIG)
        sha = config_path.parent.name  # hf_hub_download's snapshots/<commit>/<file> layout
        where = f"{ref.repo_id}@{sha[:12]}"
        config = _json_file(config_path, f"{where}:{CONFIG}")
        return PlanInputs(ref, sha, config, self._manifest(ref, sha, where), "hub")

    def _manifest(self, ref: HubRef, sha: str, where: str) -> WeightManifest | None:
        if self._cached(ref, sha, INDEX) is not _CACHED_NO_EXIST:
            try:
                index = _json_file(self._download(ref, sha, INDEX), f"{where}:{INDEX}")
                return _checked(lambda: WeightManifest.from_index(index), f"{where}:{INDEX}")
            except FileGone:
                pass
        try:
            with translate_hub_errors(f"{where}:{SINGLE_FILE}"):
                metadata = self._api.parse_safetensors_file_metadata(
                    ref.repo_id, SINGLE_FILE, revision=sha, timeout=self._timeout
                )
        except FileGone:
            return None
        header = {
            name: {"dtype": info.dtype, "shape": list(info.shape)}
            for name, info in metadata.tensors.items()
        }
        return _checked(lambda: WeightManifest.from_headers([header]), f"{where}:{SINGLE_FILE}")

    def _cached(self, ref: HubRef, sha: str, filename: str) -> object:
        """huggingface_hub's cache entry: a path, ``_CACHED_NO_EXIST`` (a 404 it kept), or None."""
        return try_to_load_from_cache(
            ref.repo_id, filename, cache_dir=self._cache_dir, revision=sha
        )

    def _download(self, ref: HubRef, revision: str | None, filename: str) -> Path:
        """The cached file at ``revision``, its size checked before it is downloaded."""
        where = f"{ref.label}:{filename}"
        with translate_hub_errors(where):
            probe = hf_hub_download(**self._download_args(ref, revision, filename), dry_run=True)
            if probe.will_download and (probe.file_size or 0) > MAX_INPUT_BYTES:
                raise HubError(_too_large(where, probe.file_size or 0))
            path = hf_hub_download(**self._download_args(ref, probe.commit_hash, filename))
            return _sized(Path(path), where)

    def _download_args(self, ref: HubRef, revision: str | None, filename: str) -> dict[str, Any]:
        return {
            "repo_id": ref.repo_id,
            "filename": filename,
            "revision": revision,
            "endpoint": self._endpoint,
            "token": self._token,
            "cache_dir": self._cache_dir,
            "etag_timeout": self._timeout,
        }


def recorded_inputs(database: Database, ref: HubRef) -> PlanInputs | None:
    """The inputs of a revision the database recorded, when REV names it by full sha; else None."""
    sha = (ref.revision or "").lower()
    if not FULL_SHA.fullmatch(sha):
        return None
    with database.read_session() as session:
        if not has_revision(session, ref.repo_id, sha):
            return None
        snapshot = snapshot_at(session, ref.repo_id, sha)
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
