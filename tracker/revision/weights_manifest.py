"""A revision's weight manifest from its safetensors headers and index files, within caps.

A header is upstream data: one just under the reader's 100 MiB limit can list
millions of tiny tensors, and uncapped it would take the check process to
gigabytes and make every later revision carry and rewrite the whole manifest.
Caps bound what one file and one
revision may add: header bytes per file (refused before a byte of the header
is read), tensors per file, and header bytes and tensors per revision. A file
over a cap is listed in ``headers`` with the reason as its error and
``capped`` set, its tensors left out; the manifest differ reports it as
``header_refused`` once. A capped file whose content key is unchanged in a
later revision is not read again.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from storage.records import FileEntry, Revision, Snapshot
from tracker.diff.files import is_unsafe_path, suffix
from tracker.diff.registry import artifact_for
from tracker.errors import ArtifactError, HeaderTooLarge
from tracker.hub.client import Hub
from tracker.untrusted.artifacts import ArtifactParseError, parse_json
from tracker.untrusted.safetensors_header import MAX_HEADER_BYTES

HEADER_BYTES_PER_FILE: Final = 8 * 1024 * 1024
"""A real shard's header is kilobytes (DeepSeek-V3's largest, ~1,000 tensors, is under 200 kB)."""
TENSORS_PER_FILE: Final = 100_000
HEADER_BYTES_PER_REVISION: Final = 64 * 1024 * 1024
TENSORS_PER_REVISION: Final = 250_000
"""Well above the largest checkpoints published (under 100,000 tensors across all shards)."""


@dataclass(frozen=True)
class HeaderCaps:
    """What one file and one revision may add to the manifest."""

    bytes_per_file: int = HEADER_BYTES_PER_FILE
    tensors_per_file: int = TENSORS_PER_FILE
    bytes_per_revision: int = HEADER_BYTES_PER_REVISION
    tensors_per_revision: int = TENSORS_PER_REVISION


DEFAULT_CAPS: Final = HeaderCaps()


@dataclass
class _Spent:
    bytes: int = 0
    tensors: int = 0


Deadline = Callable[[], bool]
"""True once the revision's time budget is spent: headers not read by then are skipped."""


def build_manifest(
    hub: Hub,
    revision: Revision,
    files: tuple[FileEntry, ...],
    texts: Mapping[str, str],
    previous: Snapshot | None,
    load: Callable[[str], bytes],
    *,
    header_limit: int = MAX_HEADER_BYTES,
    caps: HeaderCaps = DEFAULT_CAPS,
    out_of_time: Deadline = lambda: False,
) -> tuple[Mapping[str, Any] | None, list[str]]:
    """The manifest, and the shards whose headers were skipped for time.

    Where the revision's index files and shards are its parent's, the parent's manifest
    is returned itself: rebuilding it would give an equal manifest, key for key in the
    same order, after parsing every index file and copying every tensor again (about
    1.3 ms a revision on the corpus, where three revisions in four leave the weights
    alone), and the recording finds an identical manifest's blob key by identity.
    """
    shards = [f for f in files if suffix(f.path) == ".safetensors" and not is_unsafe_path(f.path)]
    # The manifest this module wrote for the previous revision (see its shape above).
    old: Mapping[str, Any] = previous.manifest if previous is not None and previous.manifest else {}
    if previous is not None and _parent_manifest_holds(old, shards, texts, previous, caps):
        return old, []  # nothing mutates a manifest: it is the record's, as the parent's is
    weight_map = _weight_map(texts, load)
    if not weight_map and not shards:
        return None, []
    old_headers: Mapping[str, Any] = old.get("headers", {})
    old_by_file: dict[str, dict[str, Any]] = {}
    for name, tensor in old.get("tensors", {}).items():
        old_by_file.setdefault(tensor["file"], {})[name] = tensor
    tensors: dict[str, Any] = {}
    headers: dict[str, Any] = {}
    spent = _Spent()
    skipped: list[str] = []
    for shard in shards:
        before = old_headers.get(shard.path, {})
        if _header_holds(before, shard):
            kept = old_by_file.get(shard.path, {})
            if spent.tensors + len(kept) <= caps.tensors_per_revision:
                tensors.update(kept)
                spent.tensors += len(kept)
                headers[shard.path] = dict(before)
                continue
        if out_of_time():
            skipped.append(shard.path)
            continue
        headers[shard.path] = _read(hub, revision, shard, header_limit, caps, spent, tensors)
    return {"tensors": tensors, "weight_map": weight_map, "headers": headers}, skipped


def _parent_manifest_holds(
    old: Mapping[str, Any],
    shards: list[FileEntry],
    texts: Mapping[str, str],
    previous: Snapshot,
    caps: HeaderCaps,
) -> bool:
    """Whether building the manifest would give ``old`` again: the same index files (by
    content key), the same shards in the same order, each with its parent's content key
    and read whole then (or refused by a cap, which a re-read would meet again), and the
    tensors within the revision's cap that keeps them."""
    headers: Mapping[str, Any] = old.get("headers", {})
    if not old or list(headers) != [shard.path for shard in shards]:
        return False
    if _index_keys(texts) != _index_keys(previous.texts):
        return False
    if len(old.get("tensors", {})) > caps.tensors_per_revision:
        return False
    return all(_header_holds(headers[shard.path], shard) for shard in shards)


def _header_holds(before: Mapping[str, Any], shard: FileEntry) -> bool:
    """Whether the parent's header entry stands for ``shard`` without reading it again: the
    same content, read whole then or refused by a cap that a re-read would meet again."""
    return before.get("content_key") == shard.content_key and (
        not before.get("error") or bool(before.get("capped"))
    )


def _index_keys(texts: Mapping[str, str]) -> dict[str, str]:
    """The content keys of the revision's weight index files, by path."""
    return {path: key for path, key in texts.items() if _is_index(path)}


def _is_index(path: str) -> bool:
    kind = artifact_for(path)
    return kind is not None and kind.name == "weight_index"


def _read(
    hub: Hub,
    revision: Revision,
    shard: FileEntry,
    header_limit: int,
    caps: HeaderCaps,
    spent: _Spent,
    tensors: dict[str, Any],
) -> dict[str, Any]:
    """One shard's header entry, its tensors added to ``tensors`` unless a cap stops them."""
    left = caps.bytes_per_revision - spent.bytes
    limit = min(header_limit, caps.bytes_per_file, max(left, 0))
    try:
        header = hub.safetensors_header(revision.repo_id, revision.sha, shard, limit)
        entries = _tensor_entries(shard.path, header)
    except HeaderTooLarge as exc:
        if limit == header_limit:
            return {"content_key": shard.content_key, "error": str(exc)}
        if limit < caps.bytes_per_file:
            return _capped(
                shard, f"the revision's {caps.bytes_per_revision:,} header bytes are spent"
            )
        return _capped(shard, f"{exc} (the manifest's cap per file)")
    except ArtifactError as exc:
        return {"content_key": shard.content_key, "error": str(exc)}
    spent.bytes += len(json.dumps(header, separators=(",", ":")))
    if len(entries) > caps.tensors_per_file:
        return _capped(
            shard, f"{len(entries):,} tensors, over the manifest's cap of {caps.tensors_per_file:,}"
        )
    if spent.tensors + len(entries) > caps.tensors_per_revision:
        return _capped(
            shard,
            f"{len(entries):,} more tensors would pass the revision's cap of "
            f"{caps.tensors_per_revision:,}",
        )
    spent.tensors += len(entries)
    tensors.update(entries)
    return {"content_key": shard.content_key, "error": None}


def _capped(shard: FileEntry, reason: str) -> dict[str, Any]:
    return {"content_key": shard.content_key, "error": reason, "capped": True}


def _weight_map(texts: Mapping[str, str], load: Callable[[str], bytes]) -> dict[str, str]:
    """tensor -> repo path of its shard, over every index file (shards relative to the index)."""
    out: dict[str, str] = {}
    for path, key in sorted(texts.items()):
        if not _is_index(path):
            continue
        try:
            document = parse_json(load(key))
        except ArtifactParseError:
            continue  # reported as the index file's parse_error
        mapping = document.get("weight_map") if isinstance(document, dict) else None
        if not isinstance(mapping, dict):
            continue
        folder = posixpath.dirname(path)
        for tensor, shard in mapping.items():
            if isinstance(shard, str):
                out[str(tensor)] = posixpath.join(folder, shard) if folder else shard
    return out


def _tensor_entries(path: str, header: Mapping[str, Any]) -> dict[str, Any]:
    entries: dict[str, Any] = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype = info.get("dtype") if isinstance(info, dict) else None
        shape = info.get("shape") if isinstance(info, dict) else None
        valid_shape = isinstance(shape, list) and all(
            isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape
        )
        if not isinstance(dtype, str) or not valid_shape:
            raise ArtifactError(f"{path}: tensor {name!r} has no valid dtype and shape")
        entries[name] = {"dtype": dtype, "shape": shape, "file": path}
    return entries


__all__ = ["DEFAULT_CAPS", "Deadline", "HeaderCaps", "build_manifest"]
