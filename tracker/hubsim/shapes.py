"""Tensor shapes for synthesized weight headers, from the estimator.

The Hub knows each tensor's real shape; the emulator knows only config.json, so it asks
the estimator what transformers would instantiate. A config the estimator cannot
describe (an unsupported family, a field out of bounds) gets no shapes, and the shard
builder falls back to splitting the index's ``total_size`` over 1-D tensors: the
emulator must serve every recorded revision, including the ones a tracker will flag.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from estimator.errors import EstimateError
from estimator.families import describe


def estimator_tensor_shapes(config: Mapping[str, Any]) -> Mapping[str, Sequence[int]]:
    """transformers tensor name -> shape for ``config``, or {} when it cannot be described."""
    try:
        architecture = describe(dict(config))
    except EstimateError:
        return {}
    return {tensor.name: tuple(tensor.shape) for tensor in architecture.tensors}
