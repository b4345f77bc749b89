"""config.json (+ optional weight manifest) -> Plan: parameters, structure, memory, cards, cost.

Pure Python, the standard library and cattrs (Plan JSON): no I/O beyond the package's own data
files, no network, no torch.

Importing the package loads the plan and what every plan needs. Plan deltas,
the engine models and the measured accuracy are imported when one of their
names is first used (PEP 562 ``__getattr__``), and ``estimator.plan`` itself
imports the engines and the stack tables only for a plan that asks for an
engine, so a plain ``plan CONFIG`` does not pay for importing them.
(``plan`` is imported here, not on first use: importing the submodule
``estimator.plan`` binds the package attribute ``plan`` to the module.)
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Final

from estimator.cards import Card, all_cards, card
from estimator.errors import (
    ConfigError,
    EstimateError,
    ManifestError,
    PlanJsonError,
    WorkloadError,
)
from estimator.manifest import WeightManifest
from estimator.memory import MemoryEstimate
from estimator.plan import SCHEMA_VERSION, Plan, plan
from estimator.verifier import Finding
from estimator.workload import STATED_WORKLOAD, Workload

if TYPE_CHECKING:
    from estimator.accuracy import Accuracy, measured_accuracy
    from estimator.deltas import DeltaEntry, PlanDelta, delta
    from estimator.engines import EngineRequest, EngineVerdict

_ON_FIRST_USE: Final[dict[str, str]] = {
    "Accuracy": "estimator.accuracy",
    "DeltaEntry": "estimator.deltas",
    "EngineRequest": "estimator.engines",
    "EngineVerdict": "estimator.engines",
    "PlanDelta": "estimator.deltas",
    "delta": "estimator.deltas",
    "measured_accuracy": "estimator.accuracy",
}
"""The public names a plain plan does not need, and the module that defines each."""


def __getattr__(name: str) -> Any:
    """Import the module that defines ``name`` on first use and keep the name here."""
    home = _ON_FIRST_USE.get(name)
    if home is None:
        raise AttributeError(f"module 'estimator' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_ON_FIRST_USE})


__all__ = [
    "SCHEMA_VERSION",
    "STATED_WORKLOAD",
    "Accuracy",
    "Card",
    "ConfigError",
    "DeltaEntry",
    "EngineRequest",
    "EngineVerdict",
    "EstimateError",
    "Finding",
    "ManifestError",
    "MemoryEstimate",
    "Plan",
    "PlanDelta",
    "PlanJsonError",
    "WeightManifest",
    "Workload",
    "WorkloadError",
    "all_cards",
    "card",
    "delta",
    "measured_accuracy",
    "plan",
]
