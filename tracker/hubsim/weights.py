"""Weight shards that exist only as headers: what the corpus's index files name.

The corpus holds no weights, but every weight index file (``model.safetensors.index.json``,
``pytorch_model.bin.index.json``) names each tensor and the shard holding it. For each
named shard the emulator lists a file of the size the real one would have:

- a safetensors shard is a valid safetensors file: the 8-byte little-endian header
  length, the header JSON (the index's tensor names, the config's dtype, shapes from the
  ``TensorShapes`` seam, contiguous ``data_offsets``), and then zeros up to the size
  those offsets declare. The zeros are generated while writing and never stored.
- a pickle (``.bin``) or other shard is an LFS file of zeros of the declared size: it is
  listed for what it says about the repo, never meant to be read.

The sha256 the Hub would report is the hash of the whole file; hashing gigabytes of
zeros per listing would take minutes, so a stand-in is used: the sha256 of the header
(or the tensor names) plus the size. It changes exactly when the shard's header would.

Shards are derived only for an upload: the commit that first holds an index file, or one
that commits that index file with new content (the corpus records weight uploads as index
changes; it holds nothing else about weights). Every other commit carries its parent's
shards unchanged, oid, size and header, whatever its config.json now says: a commit that
edits only config.json did not touch the weights on the Hub, so it must not look as if it
had (a dtype or shape read from an edited, or invalid, config is not the checkpoint's).
"""

from __future__ import annotations

import hashlib
import json
import struct
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import chain
from typing import Any

from tracker.hubsim.blobs import Blob, HeaderThenZeros, lfs_blob

TensorShapes = Callable[[Mapping[str, Any]], Mapping[str, Sequence[int]]]
"""config.json (parsed) -> transformers tensor name -> shape; the estimator's seam."""

INDEX_SUFFIXES = {
    ".safetensors.index.json": "safetensors",
    ".bin.index.json": "pickle",
    ".msgpack.index.json": "opaque",
}
DTYPES = {
    "float64": ("F64", 8),
    "float32": ("F32", 4),
    "float16": ("F16", 2),
    "bfloat16": ("BF16", 2),
    "int64": ("I64", 8),
    "int32": ("I32", 4),
    "int16": ("I16", 2),
    "int8": ("I8", 1),
    "uint8": ("U8", 1),
    "bool": ("BOOL", 1),
}
DEFAULT_DTYPE = "float32"
"""What transformers loads when a config names no dtype."""


IndexShards = Mapping[str, tuple[str, Mapping[str, Blob]]]
"""Index path -> (the index blob's oid when its shards were derived, shard path -> blob)."""


class WeightFiles:
    """Derives the shard files a tree's index files name, caching by index and config blob."""

    def __init__(self, tensor_shapes: TensorShapes | None = None) -> None:
        self._tensor_shapes = tensor_shapes
        self._cache: dict[tuple[str, str, str | None], dict[str, Blob]] = {}
        self._describable_cache: dict[str, bool] = {}

    def carry(
        self,
        files: Mapping[str, Blob],
        previous: IndexShards | None,
        later: Callable[[], Iterable[Mapping[str, Blob]]] = tuple,
    ) -> IndexShards:
        """The shards of ``files``: the parent's (``previous``) where an index is unchanged.

        An index file whose oid is the one its shards were derived under keeps them as
        they were; a new or re-committed index is an upload and gets shards derived from
        the config the weights were made for (``_upload_config``; ``later`` gives the trees
        of the commits after this one on its branch, oldest first). An index that is gone
        takes its shards with it.
        """
        carried: dict[str, tuple[str, Mapping[str, Blob]]] = {}
        for path, blob in files.items():
            kind = _index_kind(path)
            if kind is None:
                continue
            kept = previous.get(path) if previous else None
            if kept is not None and kept[0] == blob.oid:
                carried[path] = kept
                continue
            folder = path.rsplit("/", 1)[0] + "/" if "/" in path else ""
            config = self._upload_config(path, blob.oid, folder + "config.json", files, later)
            key = (path, blob.oid, config.oid if config else None)
            if key not in self._cache:
                self._cache[key] = self._shards(kind, folder, blob, config)
            carried[path] = (blob.oid, self._cache[key])
        return carried

    def _upload_config(
        self,
        index_path: str,
        index_oid: str,
        config_path: str,
        files: Mapping[str, Blob],
        later: Callable[[], Iterable[Mapping[str, Blob]]],
    ) -> Blob | None:
        """The config.json an upload's weights were made for.

        The one beside the index, unless it cannot be read or described (invalid JSON,
        a family the seam does not know): then the first describable one a later commit
        holds while the index is still this upload. Llama-2-7b-chat-hf's squashed upload
        committed an invalid config.json, fixed hours later without touching the
        weights; the checkpoint's shapes and dtype are the fixed config's, not 1-D F32.
        """
        beside = files.get(config_path)
        for tree in chain([files], later()):
            index = tree.get(index_path)
            if index is None or index.oid != index_oid:
                break
            config = tree.get(config_path)
            if config is not None and self._describable(config):
                return config
        return beside

    def _describable(self, config: Blob) -> bool:
        if config.oid not in self._describable_cache:
            document = _json_object(config.text())
            self._describable_cache[config.oid] = document is not None and (
                self._tensor_shapes is None or bool(self._tensor_shapes(document))
            )
        return self._describable_cache[config.oid]

    def _shards(self, kind: str, folder: str, index: Blob, config: Blob | None) -> dict[str, Blob]:
        document = _json_object(index.text())
        weight_map = document.get("weight_map") if document else None
        if not isinstance(weight_map, dict):
            return {}
        metadata = document.get("metadata") if document else None
        total_size = metadata.get("total_size") if isinstance(metadata, dict) else None
        config_document = _json_object(config.text() if config else None) or {}
        dtype, width = _dtype(config_document)
        names = sorted(str(name) for name in weight_map)
        shapes = self._shapes(config_document, names, total_size, width)
        by_shard: dict[str, list[str]] = {}
        for name in names:
            by_shard.setdefault(str(weight_map[name]), []).append(name)
        build = _safetensors_shard if kind == "safetensors" else _opaque_shard
        return {
            folder + shard: build(shard, tensors, shapes, dtype, width)
            for shard, tensors in by_shard.items()
        }

    def _shapes(
        self, config: Mapping[str, Any], names: list[str], total_size: object, width: int
    ) -> dict[str, list[int]]:
        described = self._tensor_shapes(config) if self._tensor_shapes and config else {}
        shapes = {name: [int(d) for d in described[name]] for name in names if name in described}
        unknown = [name for name in names if name not in shapes]
        if unknown:
            known_bytes = sum(_numel(shape) * width for shape in shapes.values())
            budget = total_size if isinstance(total_size, int) else 0
            each, extra = divmod(max(budget - known_bytes, 0) // width, len(unknown))
            for position, name in enumerate(unknown):
                shapes[name] = [each + (1 if position < extra else 0)]
        return shapes


def shard_files(files: Mapping[str, Blob], shards: IndexShards) -> dict[str, Blob]:
    """Shard path -> blob over every index (committed files win over derived ones)."""
    merged: dict[str, Blob] = {}
    for _oid, named in shards.values():
        merged.update(named)
    return {path: blob for path, blob in merged.items() if path not in files}


def _index_kind(path: str) -> str | None:
    for suffix, kind in INDEX_SUFFIXES.items():
        if path.endswith(suffix):
            return kind
    return None


def _json_object(content: bytes | None) -> dict[str, Any] | None:
    if content is None:
        return None
    try:
        document = json.loads(content)
    except (ValueError, RecursionError):  # not JSON, nested too deep, a 5,000-digit integer
        return None
    return document if isinstance(document, dict) else None


def _dtype(config: Mapping[str, Any]) -> tuple[str, int]:
    candidates = [config, config.get("text_config")]
    for section in candidates:
        if isinstance(section, dict):
            name = section.get("torch_dtype") or section.get("dtype")
            if isinstance(name, str) and name in DTYPES:
                return DTYPES[name]
    return DTYPES[DEFAULT_DTYPE]


def _numel(shape: Sequence[int]) -> int:
    count = 1
    for dim in shape:
        count *= dim
    return count


def safetensors_header(
    tensors: Sequence[str], shapes: Mapping[str, Sequence[int]], dtype: str, width: int
) -> tuple[bytes, int]:
    """The file prefix (length + padded JSON header) and the data size it declares."""
    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name in tensors:
        size = _numel(shapes[name]) * width
        header[name] = {
            "dtype": dtype,
            "shape": list(shapes[name]),
            "data_offsets": [offset, offset + size],
        }
        offset += size
    encoded = json.dumps(header, separators=(",", ":")).encode()
    encoded += b" " * (-len(encoded) % 8)
    return struct.pack("<Q", len(encoded)) + encoded, offset


def _safetensors_shard(
    shard: str, tensors: Sequence[str], shapes: Mapping[str, Sequence[int]], dtype: str, width: int
) -> Blob:
    prefix, data_size = safetensors_header(tensors, shapes, dtype, width)
    size = len(prefix) + data_size
    stand_in = hashlib.sha256(prefix + b"%d" % size).hexdigest()
    return lfs_blob(HeaderThenZeros(prefix, size), stand_in)


def _opaque_shard(
    shard: str, tensors: Sequence[str], shapes: Mapping[str, Sequence[int]], dtype: str, width: int
) -> Blob:
    size = sum(_numel(shapes[name]) * width for name in tensors)
    names = "\n".join(f"{name}:{shapes[name]}" for name in tensors).encode()
    stand_in = hashlib.sha256(shard.encode() + b"\0" + names + b"%d" % size).hexdigest()
    return lfs_blob(HeaderThenZeros(b"", size), stand_in)
