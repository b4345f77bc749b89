"""Weight manifests: what a checkpoint stores, from its safetensors header(s) or index.

A safetensors header names every tensor with dtype and shape, so the
checkpoint's scalar count is exact; an index (``model.safetensors.index.json``)
names tensors and the total byte size only, so the count is the size over
the declared dtype's width. The delta against the parameters transformers
would build is explained by name: saved buffers (``position_ids``,
``inv_freq``), a head the checkpoint lacks, a tied head stored twice.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from estimator.errors import ManifestError

DTYPE_BYTES: Final[dict[str, float]] = {
    "F64": 8,
    "F32": 4,
    "F16": 2,
    "BF16": 2,
    "I64": 8,
    "I32": 4,
    "I16": 2,
    "I8": 1,
    "U8": 1,
    "BOOL": 1,
    "F8_E4M3": 1,
    "F8_E5M2": 1,
    "float32": 4,
    "float16": 2,
    "bfloat16": 2,
}
BUFFER_SUFFIXES: Final = ("position_ids", "inv_freq", "masked_bias", "attn.bias", "_float_tensor")


@dataclass(frozen=True)
class WeightManifest:
    """Tensor names, their dtypes and (from headers) scalar counts."""

    names: tuple[str, ...]
    dtypes: tuple[tuple[str, int], ...]  # dtype -> scalars (headers) or tensor count (index)
    scalars: int | None
    total_size: int | None

    @property
    def main_dtype(self) -> str | None:
        """The dtype holding most scalars (headers) or tensors (index); None when empty."""
        return max(self.dtypes, key=lambda d: d[1])[0] if self.dtypes else None

    def checkpoint_scalars(self, declared_dtype: str | None) -> int | None:
        """Scalars stored: exact from headers, else index bytes / dtype width; None if unknown."""
        if self.scalars is not None:
            return self.scalars
        width = DTYPE_BYTES.get(declared_dtype or "")
        if self.total_size is None or not width:
            return None
        return int(self.total_size // width)

    @classmethod
    def from_headers(cls, headers: list[Mapping[str, object]]) -> WeightManifest:
        """One or more safetensors headers (the JSON at the start of each shard)."""
        names: list[str] = []
        by_dtype: dict[str, int] = {}
        scalars = 0
        for header in headers:
            if not isinstance(header, Mapping):
                raise ManifestError("safetensors header: expected a JSON object")
            for name, entry in header.items():
                if name == "__metadata__":
                    continue
                if not isinstance(entry, Mapping):
                    raise ManifestError(f"safetensors header: {name} is not an object")
                dtype, shape = entry.get("dtype"), entry.get("shape")
                if (
                    not isinstance(dtype, str)
                    or not isinstance(shape, list)
                    or not all(
                        isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape
                    )
                ):
                    raise ManifestError(f"safetensors header: {name} needs a dtype and a shape")
                n = 1
                for d in shape:
                    n *= d
                names.append(name)
                scalars += n
                by_dtype[dtype] = by_dtype.get(dtype, 0) + n
        return cls(tuple(names), tuple(by_dtype.items()), scalars, None)

    @classmethod
    def from_index(cls, index: Mapping[str, object]) -> WeightManifest:
        """A ``model.safetensors.index.json``: tensor names and the total byte size."""
        if not isinstance(index, Mapping):
            raise ManifestError("safetensors index: expected a JSON object")
        weight_map = index.get("weight_map")
        if not isinstance(weight_map, Mapping):
            raise ManifestError("safetensors index: weight_map must be an object")
        metadata = index.get("metadata")
        total = metadata.get("total_size") if isinstance(metadata, Mapping) else None
        if total is not None and (isinstance(total, bool) or not isinstance(total, (int, float))):
            raise ManifestError("safetensors index: metadata.total_size must be a number")
        return cls(
            tuple(str(k) for k in weight_map), (), None, None if total is None else int(total)
        )


@dataclass(frozen=True)
class ManifestComparison:
    """How the checkpoint's scalar count differs from the parameters and why, by name."""

    checkpoint_scalars: int | None
    delta_percent: float | None
    explanations: tuple[str, ...]


def compare(
    manifest: WeightManifest, total: int, tied: bool, declared: str | None, head_name: str | None
) -> ManifestComparison:
    """Compare the checkpoint with ``total`` parameters and name each explainable difference."""
    scalars = manifest.checkpoint_scalars(declared)
    delta = None if scalars is None or total == 0 else 100.0 * (scalars - total) / total
    notes: list[str] = []
    buffers = [n for n in manifest.names if n.endswith(BUFFER_SUFFIXES)]
    if buffers:
        notes.append(f"{len(buffers)} saved buffers ({buffers[0]}, ...) are not parameters")
    has_head = any(n.endswith("lm_head.weight") for n in manifest.names)
    if tied and has_head:
        notes.append("tied head stored twice: lm_head.weight duplicates the embedding")
    if head_name is not None and not tied and not has_head and manifest.names:
        notes.append(f"the checkpoint lacks the head ({head_name}); it is initialised at load")
    if scalars is None:
        notes.append("index without a declared dtype: scalar count unknown")
    elif manifest.scalars is None:
        notes.append("count from the index's total_size over the declared dtype width")
    return ManifestComparison(scalars, delta, tuple(notes))
