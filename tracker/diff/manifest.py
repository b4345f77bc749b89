"""Weight manifest changes at tensor level, read from safetensors headers and index files.

A manifest is JSON (it is stored as the snapshot's ``manifest``)::

    {"tensors":    {name: {"dtype": "BF16", "shape": [4096, 4096], "file": shard}},
     "weight_map": {name: shard},                 # union of the index files
     "headers":    {shard: {"content_key": key, "error": null | message}}}

The differ names tensors added, removed, reshaped or recast, the change in
total scalars, shards the weight map newly names, shards it names that the
revision does not have, headers that could not be read, and the weight map's
own entries: tensors it moved to another shard (tensor: old shard -> new
shard, summarised by shard pair when many) and names it gained or lost that
no header accounts for.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from typing import Any

from storage.records import Change, Severity
from tracker.artifacts import Side

ARTIFACT = "weights"
MAX_NAMES = 200
MAX_MOVE_LINES = 5
"""Up to this many tensors moved between shards are named one by one; more, by shard pair."""


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
    changes = _header_errors(old, new)
    changes += _tensors(old.get("tensors", {}), new.get("tensors", {}))
    changes += _shards(old.get("weight_map", {}), new.get("weight_map", {}), new_paths)
    changes += _map_entries(old, new)
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


def _map_entries(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Change]:
    before: Mapping[str, str] = old.get("weight_map", {})
    after: Mapping[str, str] = new.get("weight_map", {})
    if not before:
        return []
    moved = sorted(t for t in set(before) & set(after) if before[t] != after[t])
    changes = [_moves(moved, before, after)] if moved else []
    with_headers = set(old.get("tensors", {})) | set(new.get("tensors", {}))
    for kind, names, side in (
        ("weight_map_added", sorted(set(after) - set(before) - with_headers), after),
        ("weight_map_removed", sorted(set(before) - set(after) - with_headers), before),
    ):
        if names:
            verb = "now names" if kind == "weight_map_added" else "no longer names"
            shown = ", ".join(f"{n} ({side[n]})" for n in names[:3])
            more = f" and {len(names) - 3} more" if len(names) > 3 else ""
            values = {n: side[n] for n in names[:MAX_NAMES]}
            changes.append(
                Change(
                    ARTIFACT,
                    side[names[0]],
                    kind,
                    None if kind == "weight_map_added" else values,
                    values if kind == "weight_map_added" else None,
                    Severity.MODERATE,
                    f"the weight map {verb} {len(names)} tensors: {shown}{more}",
                )
            )
    return changes


def _moves(moved: list[str], before: Mapping[str, str], after: Mapping[str, str]) -> Change:
    """Tensors the index now places in another shard; loaders follow the index, so only
    a download of selected shards (``allow_patterns``) sees a difference."""
    if len(moved) <= MAX_MOVE_LINES:
        detail = "; ".join(f"{t}: {before[t]} -> {after[t]}" for t in moved)
    else:
        pairs: dict[tuple[str, str], list[str]] = {}
        for tensor in moved:
            pairs.setdefault((before[tensor], after[tensor]), []).append(tensor)
        ranked = sorted(pairs.items(), key=lambda item: (-len(item[1]), item[0]))
        detail = "; ".join(f"{len(ts)} {a} -> {b} (e.g. {ts[0]})" for (a, b), ts in ranked[:3])
        if len(ranked) > 3:
            detail += f"; and {len(ranked) - 3} more shard pairs"
    return Change(
        ARTIFACT,
        after[moved[0]],
        "weight_map_moved",
        {t: before[t] for t in moved},  # every tensor: a weight map is small next to weights
        {t: after[t] for t in moved},
        Severity.LOW,
        f"the weight map moves {len(moved)} tensors to other shards: {detail}",
    )


def diff_weights(kind: str, old: Side | None, new: Side) -> list[Change]:
    """The weights row's differ: the snapshots' manifests (headers and index files)."""
    return diff_manifests(
        old.snapshot.manifest if old is not None else None,
        new.snapshot.manifest,
        {f.path for f in new.snapshot.files},
    )


__all__ = ["diff_manifests", "diff_weights", "total_scalars"]
