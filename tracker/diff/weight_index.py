"""A weight index file's changes, its ``weight_map`` entries named tensor by tensor.

The index (``model.safetensors.index.json``, ``pytorch_model.bin.index.json``)
maps every tensor to the shard holding it. Its other keys (``metadata``) are
plain JSON fields; its weight map is compared here, per index file as written,
so two indexes of one revision (safetensors and .bin) are each named: tensors
moved to another shard (tensor: old shard -> new shard, summarised by shard
pair when many), tensors the map gained or lost. An index that appears or
goes away is one change holding the whole document, the map included.

Values sit at the file's own key path, ``{"weight_map": {tensor: shard}}``,
with every entry: a weight map is small next to the weights it indexes.
What the tensors themselves are (shapes, dtypes, headers) is the weights
row's business (``tracker.diff.manifest``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from storage.records import Change, Severity
from tracker.diff.common import json_copy
from tracker.diff.json_diff import diff_json_file
from tracker.diff.shapes import MAX_LINE_CHARS
from tracker.untrusted.artifacts import Side

MAX_MOVE_LINES = 5
"""Up to this many tensors moved between shards are named one by one; more, by shard pair."""
SHOWN = 3


def diff_weight_index_file(
    kind: str, path: str, old: Any, new: Any, sides: tuple[Side, Side]
) -> list[Change]:
    """One index file's changes: its plain fields, then its weight map's entries."""
    changes = diff_json_file(kind, path, old, new, sides)
    before, after = _weight_map(old), _weight_map(new)
    if old is None or new is None:
        return [_whole_file(change, old, new, before or after) for change in changes]
    return changes + _map_entries(kind, path, before, after)


def _weight_map(document: Any) -> dict[str, str]:
    mapping = document.get("weight_map") if isinstance(document, dict) else None
    if not isinstance(mapping, dict):
        return {}
    return {str(tensor): shard for tensor, shard in mapping.items() if isinstance(shard, str)}


def _whole_file(change: Change, old: Any, new: Any, mapping: Mapping[str, str]) -> Change:
    """The file that came or went, with its whole document and how many tensors it maps.

    The document is copied, as ``diff_json_file`` copies what its changes hold."""
    old, new = json_copy(old), json_copy(new)
    if not mapping:
        return replace(change, old=old, new=new)
    shards = len(set(mapping.values()))
    verb = "maps" if new is not None else "mapped"
    return replace(
        change,
        old=old,
        new=new,
        message=f"{change.message}; its weight map {verb} {len(mapping)} tensors to "
        f"{shards} shards",
    )


def _map_entries(
    artifact: str, path: str, before: Mapping[str, str], after: Mapping[str, str]
) -> list[Change]:
    moved = sorted(t for t in set(before) & set(after) if before[t] != after[t])
    changes = [_moves(artifact, path, moved, before, after)] if moved else []
    for kind, names, side in (
        ("weight_map_added", sorted(set(after) - set(before)), after),
        ("weight_map_removed", sorted(set(before) - set(after)), before),
    ):
        if not names:
            continue
        verb = "now names" if kind == "weight_map_added" else "no longer names"
        shown = ", ".join(f"{n} ({side[n]})" for n in names[:SHOWN])
        more = f" and {len(names) - SHOWN} more" if len(names) > SHOWN else ""
        values = {"weight_map": {n: side[n] for n in names}}
        changes.append(
            Change(
                artifact,
                path,
                kind,
                None if kind == "weight_map_added" else values,
                values if kind == "weight_map_added" else None,
                Severity.LOW,
                f"{path}: the weight map {verb} {len(names)} tensors: {shown}{more}",
            )
        )
    return changes


def _moves(
    artifact: str, path: str, moved: list[str], before: Mapping[str, str], after: Mapping[str, str]
) -> Change:
    """Tensors the index now places in another shard; loaders follow the index, so only
    a download of selected shards (``allow_patterns``) sees a difference."""
    if len(moved) <= MAX_MOVE_LINES:
        detail = "; ".join(f"{t}: {before[t]} -> {after[t]}" for t in moved)
    else:
        pairs: dict[tuple[str, str], list[str]] = {}
        for tensor in moved:
            pairs.setdefault((before[tensor], after[tensor]), []).append(tensor)
        ranked = sorted(pairs.items(), key=lambda item: (-len(item[1]), item[0]))
        said = [f"{len(ts)} {a} -> {b} (e.g. {ts[0]})" for (a, b), ts in ranked]
        kept = said[:1]
        for part in said[1:3]:  # as many pairs as the line holds
            if len(path) + sum(len(k) + 2 for k in kept) + len(part) > MAX_LINE_CHARS - 110:
                break
            kept.append(part)
        detail = "; ".join(kept)
        if len(ranked) > len(kept):
            detail += f"; and {len(ranked) - len(kept)} more shard pairs"
    return Change(
        artifact,
        path,
        "weight_map_moved",
        {"weight_map": {t: before[t] for t in moved}},
        {"weight_map": {t: after[t] for t in moved}},
        Severity.LOW,
        f"{path}: the weight map moves {len(moved)} tensors to other shards: {detail}",
    )


__all__ = ["diff_weight_index_file"]
