"""One term of one phase of a training plan, for tests that pin a mechanism's bytes."""

from __future__ import annotations

from collections.abc import Mapping

from estimator import Workload
from estimator.families import describe
from estimator.memory.states import split_parameters
from estimator.memory.training import training_model


def activations_at(config: Mapping[str, object], w: Workload, phase_name: str) -> float:
    """The activation bytes of the whole micro-batch at ``phase_name``."""
    arch = describe(config)
    model = training_model(arch, split_parameters(arch), w, w.method, has_bf16=True)
    phase = next(p for p in model.phases if p.name == phase_name)
    term = next(t for t in phase.terms if t.key == "activations")
    return term.per_sample * w.batch
