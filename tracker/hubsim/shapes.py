"""Tensor shapes for synthesized weight headers, from the estimator.

The Hub knows each tensor's real shape; the emulator knows only config.json, so it asks
the estimator what transformers would instantiate. A config the estimator cannot
describe (an unsupported family, invalid JSON committed upstream) gets no shapes, and
the shard builder falls back to splitting the index's ``total_size`` over 1-D tensors.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from typing import Any

from estimator.errors import EstimateError


def estimator_tensor_shapes(config: Mapping[str, Any]) -> Mapping[str, Sequence[int]]:
    """transformers tensor name -> shape for ``config``, or {} when it cannot be described."""
    try:
        families = importlib.import_module("estimator.families")
    except ImportError:
        return {}
    describe = getattr(families, "describe", None)
    if describe is None:
        return {}
    try:
        architecture = describe(dict(config))
    except (EstimateError, ValueError, TypeError, KeyError):
        return {}
    return {tensor.name: tuple(tensor.shape) for tensor in architecture.tensors}
