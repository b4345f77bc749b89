"""The ``safetensors`` field of model_info: parameter counts read from the weight headers.

The Hub counts parameters per dtype from the safetensors headers of a repo's main
weights (``model.safetensors``, or the shards ``model.safetensors.index.json`` names),
the same files huggingface_hub's ``get_safetensors_metadata`` and @huggingface/hub's
``parseSafetensorsMetadata`` read, so all three agree on a repo. Headers are read from
the bodies' first bytes (a generated shard's header is its prefix; nothing else is read).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from tracker.hubsim.blobs import Blob

SINGLE = "model.safetensors"
INDEX = "model.safetensors.index.json"
MAX_HEADER = 25_000_000
"""Both clients refuse a larger header (SAFETENSORS_MAX_HEADER_LENGTH, MAX_HEADER_LENGTH)."""


def safetensors_field(tree: Mapping[str, Blob]) -> dict[str, Any] | None:
    """``{"parameters": {dtype: count}, "total": count}``; None without readable weights."""
    counts: dict[str, int] = {}
    for path in _weight_files(tree):
        header = _header(tree[path])
        if header is None:
            return None
        for name, tensor in header.items():
            if name == "__metadata__" or not isinstance(tensor, dict):
                continue
            shape = tensor.get("shape")
            if not isinstance(shape, list) or not all(isinstance(d, int) for d in shape):
                return None
            dtype = str(tensor.get("dtype"))
            counts[dtype] = counts.get(dtype, 0) + math.prod(shape)
    if not counts:
        return None
    return {"parameters": counts, "total": sum(counts.values())}


def _weight_files(tree: Mapping[str, Blob]) -> list[str]:
    if SINGLE in tree:
        return [SINGLE]
    index = tree.get(INDEX)
    content = index.text() if index else None
    try:
        document = json.loads(content) if content else None
    except (ValueError, RecursionError):
        return []
    weight_map = document.get("weight_map") if isinstance(document, dict) else None
    if not isinstance(weight_map, dict):
        return []
    shards = sorted({str(v) for v in weight_map.values()})
    return shards if all(s in tree for s in shards) else []


def _header(blob: Blob) -> dict[str, Any] | None:
    prefix = b"".join(blob.body.chunks(0, min(blob.size, 8)))
    if len(prefix) != 8:
        return None
    length = int.from_bytes(prefix, "little")
    if length > MAX_HEADER or 8 + length > blob.size:
        return None
    try:
        header = json.loads(b"".join(blob.body.chunks(8, 8 + length)))
    except (ValueError, RecursionError):
        return None
    return header if isinstance(header, dict) else None
