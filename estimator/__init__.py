"""config.json (+ optional weight manifest) -> Plan: parameters, structure, memory, cards, cost.

Pure Python, standard library only: no I/O beyond the package's own data
files, no network, no torch.
"""

from estimator.accuracy import Accuracy, measured_accuracy
from estimator.cards import Card, all_cards, card
from estimator.deltas import DeltaEntry, PlanDelta, delta
from estimator.engines import EngineRequest, EngineVerdict
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
