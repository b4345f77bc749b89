"""The plans one revision's alerts need, computed once per (config, workload, engine request).

Fit alerts ask the estimator about both sides of a transition under every
subscriber's workload; subscriptions and cards often repeat the same
question, and the estimator is pure, so one answer per question serves them
all for the length of one revision.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import estimator
from estimator.errors import EstimateError

Config = Mapping[str, Any]


@dataclass(frozen=True)
class ModelSide:
    """One side of a transition as fit alerts read it: the parsed config.json, its content
    key (the same file gives the same plans) and the context length its stored plan states."""

    key: str
    config: Config
    context: int | None

    @property
    def model_type(self) -> str | None:
        """The config's ``model_type``, which a stack's per-type mechanisms read."""
        value = self.config.get("model_type")
        return value if isinstance(value, str) else None


def stated_context(recorded: estimator.Plan | None) -> int | None:
    """The context length a side's recorded Plan states; None when the revision has no
    plan (the estimator refused its config) or its config states none."""
    if recorded is None:
        return None
    value = dict(recorded.model).get("max_position_embeddings")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


PlanKey = tuple[str, estimator.Workload, estimator.EngineRequest | None]


class PlanCache:
    """The plans one revision's alerts need, each computed once per (config, workload, engine).

    Several subscriptions (and cards) often ask for the same workload on the
    same config; the estimator is pure, so one answer serves them all. A
    refusal is remembered too and raised again for the next asker.
    """

    def __init__(self) -> None:
        self._plans: dict[PlanKey, estimator.Plan | EstimateError] = {}

    def plan(
        self,
        side: ModelSide,
        workload: estimator.Workload,
        engine: estimator.EngineRequest | None = None,
    ) -> estimator.Plan:
        """The estimator's plan for ``side`` under ``workload``, computed on first ask.

        Raises the EstimateError the estimator raised, again on every later ask.
        """
        key = (side.key, workload, engine)
        if key not in self._plans:
            try:
                self._plans[key] = estimator.plan(side.config, workload, engine=engine)
            except EstimateError as exc:
                self._plans[key] = exc
        found = self._plans[key]
        if isinstance(found, EstimateError):
            raise found
        return found

    def __len__(self) -> int:
        return len(self._plans)


__all__ = ["Config", "ModelSide", "PlanCache", "PlanKey", "stated_context"]
