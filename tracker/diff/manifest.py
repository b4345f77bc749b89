"""Weight manifest changes at tensor level, read from safetensors headers and index files.

A manifest is JSON (it is stored as the snapshot's ``manifest``)::

    {"tensors":    {name: {"dtype": "BF16", "shape": [4096, 4096], "file": shard}},
     "weight_map": {name: shard},                 # union of the index files
     "headers":    {shard: {"content_key": key, "error": null | message}}}

The differ names tensors added, removed, reshaped or recast, the change in
total scalars, shards the weight map newly names, shards it names that the
revision does not have, and headers that could not be read. Tensors are only
"removed" when every safetensors file of the new revision was read: a header
that could not be read makes the weights not readable at this revision (one
line, nothing compared), and a revision with no safetensors file left is one
line saying so, not three (format, tensors, scalars). The weight map's
own entries (tensors moved to another shard, names gained or lost) are named
per index file, as written, by ``tracker.diff.weight_index``.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from typing import Any

from storage.records import Change, Severity
from tracker.diff.common import format_value
from tracker.untrusted.artifacts import Side

ARTIFACT = "weights"
MAX_NAMES = 200
MAX_ERROR_CHARS = 100
"""The part of a header's read error a line quotes (the change holds it whole)."""


def total_scalars(manifest: Mapping[str, Any] | None) -> int:
    """Scalars over every tensor whose shape the headers gave."""
    if not manifest:
        return 0
    return sum(math.prod(t["shape"]) for t in manifest.get("tensors", {}).values())


def diff_manifests(
    old: Mapping[str, Any] | None, new: Mapping[str, Any] | None, new_paths: Collection[str]
) -> list[Change]:
    """Changes between two manifests; ``new_paths`` are the files of the new revision."""
    old, new = old or {}, new or {}
    unread = {s: i["error"] for s, i in sorted(new.get("headers", {}).items()) if i.get("error")}
    old_tensors, new_tensors = old.get("tensors", {}), new.get("tensors", {})
    gone = sorted(set(old_tensors) - set(new_tensors))
    changes = _shards(old.get("weight_map", {}), new.get("weight_map", {}), new_paths)
    if gone and (unread or not new.get("headers")):
        # the old tensors are not known to be removed: either a header could not be read,
        # or no safetensors file is left to hold them (the file list says which files went)
        return [_not_compared(old_tensors, gone, unread), *changes]
    changes = _header_errors(old, new) + _tensors(old_tensors, new_tensors) + changes
    before, after = total_scalars(old), total_scalars(new)
    if old.get("tensors") and before != after:
        changes.append(
            Change(
                ARTIFACT,
                "",
                "scalars_changed",
                before,
                after,
                Severity.HIGH,
                f"total scalars in the weights {before:,} -> {after:,}",
            )
        )
    return changes


def _not_compared(
    old_tensors: Mapping[str, Any], gone: list[str], unread: Mapping[str, str]
) -> Change:
    """Tensors of the previous revision that this one cannot be compared on."""
    files = sorted({old_tensors[n]["file"] for n in gone})
    scalars = sum(math.prod(old_tensors[n]["shape"]) for n in gone)
    held = f"{len(gone)} tensors ({scalars:,} scalars) of {_names(files)}"
    if unread:
        shard, error = next(iter(unread.items()))
        error = format_value(error.rpartition(f":{shard}: ")[2], MAX_ERROR_CHARS)
        more = f" and {len(unread) - 1} more files" if len(unread) > 1 else ""
        return Change(
            ARTIFACT,
            shard,
            "weights_unreadable",
            gone[:MAX_NAMES],
            unread,
            Severity.HIGH,
            f"weights not readable at this revision ({shard}{more}: header not read: "
            f"{error}); the previous revision's {held} are not compared",
        )
    return Change(
        ARTIFACT,
        files[0],
        "tensors_removed",
        gone[:MAX_NAMES],
        None,
        Severity.HIGH,
        f"no safetensors weights at this revision: the previous revision's {held} are gone "
        "with their files",
    )


def _names(names: list[str]) -> str:
    return ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")


def _header_errors(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Change]:
    changes = []
    old_headers = old.get("headers", {})
    for shard, info in sorted(new.get("headers", {}).items()):
        error = info.get("error")
        if error and old_headers.get(shard, {}).get("error") != error:
            changes.append(
                Change(
                    ARTIFACT,
                    shard,
                    "header_refused",
                    None,
                    error,
                    Severity.HIGH,
                    f"{shard}: safetensors header not read: {error}",
                )
            )
    return changes


def _tensors(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Change]:
    changes = []
    added = sorted(set(new) - set(old))
    removed = sorted(set(old) - set(new))
    both = sorted(set(old) & set(new))
    reshaped = [n for n in both if list(old[n]["shape"]) != list(new[n]["shape"])]
    recast = [n for n in both if old[n]["dtype"] != new[n]["dtype"]]
    if old and added:
        changes.append(
            Change(
                ARTIFACT,
                new[added[0]]["file"],
                "tensors_added",
                None,
                added[:MAX_NAMES],
                Severity.HIGH,
                f"{len(added)} tensors added: {_names(added)}",
            )
        )
    if removed:
        changes.append(
            Change(
                ARTIFACT,
                old[removed[0]]["file"],
                "tensors_removed",
                removed[:MAX_NAMES],
                None,
                Severity.HIGH,
                f"{len(removed)} tensors removed: {_names(removed)}",
            )
        )
    if reshaped:
        first = reshaped[0]
        changes.append(
            Change(
                ARTIFACT,
                new[first]["file"],
                "tensors_reshaped",
                {n: old[n]["shape"] for n in reshaped[:MAX_NAMES]},
                {n: new[n]["shape"] for n in reshaped[:MAX_NAMES]},
                Severity.HIGH,
                f"{len(reshaped)} tensors reshaped, e.g. {first} {old[first]['shape']} -> "
                f"{new[first]['shape']}",
            )
        )
    if recast:
        first = recast[0]
        changes.append(
            Change(
                ARTIFACT,
                new[first]["file"],
                "dtype_changed",
                {n: old[n]["dtype"] for n in recast[:MAX_NAMES]},
                {n: new[n]["dtype"] for n in recast[:MAX_NAMES]},
                Severity.HIGH,
                f"{len(recast)} tensors changed dtype, e.g. {first} {old[first]['dtype']} -> "
                f"{new[first]['dtype']}",
            )
        )
    return changes


def _shards(
    old: Mapping[str, str], new: Mapping[str, str], new_paths: Collection[str]
) -> list[Change]:
    changes = []
    old_shards, new_shards = set(old.values()), set(new.values())
    if old_shards:
        for shard in sorted(new_shards - old_shards):
            changes.append(
                Change(
                    ARTIFACT,
                    shard,
                    "shard_added",
                    None,
                    shard,
                    Severity.MODERATE,
                    f"the weight map now names a new file {shard}",
                )
            )
    for shard in sorted(s for s in new_shards if s not in new_paths):
        changes.append(
            Change(
                ARTIFACT,
                shard,
                "shard_missing",
                None,
                shard,
                Severity.HIGH,
                f"the weight map names {shard}, which the revision does not have: "
                "loading fails on the missing shard",
            )
        )
    return changes


def diff_weights(kind: str, old: Side | None, new: Side) -> list[Change]:
    """The weights row's differ: the snapshots' manifests (headers and index files)."""
    return diff_manifests(
        old.snapshot.manifest if old is not None else None,
        new.snapshot.manifest,
        {f.path for f in new.snapshot.files},
    )


__all__ = ["diff_manifests", "diff_weights", "total_scalars"]
