"""Fit alerts of an engine subscription: does the serving engine still start on each card?

A subscription naming a serving ``engine`` is judged by that engine's
start-up (``estimator.plan(..., engine=...)``, its ``serving.engine``
verdict) instead of peak memory: a card flips when ``starts`` changes
between the previous and the new revision. A card that stops starting is
asked once more about twice the job's GPUs (tensor parallel over them), so
the alert can offer that as a way out only when it would work. Plans come
from the revision's ``PlanCache``, once per (config, workload, engine request).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from estimator.errors import EstimateError
from tracker.alerts.message import EngineFlip, EngineState
from tracker.alerts.spec import SubscriptionError, SubscriptionSpec

if TYPE_CHECKING:  # evaluate imports this module; the types only are needed here
    from tracker.alerts.plan_cache import ModelSide, PlanCache


def engine_flips(
    spec: SubscriptionSpec, old_side: ModelSide, new_side: ModelSide, plans: PlanCache
) -> list[EngineFlip]:
    """Every card of ``spec`` on which its engine's ``starts`` differs between the two sides.

    As for ``fit_flips``: an unchanged config.json cannot flip, and a side
    the estimator refuses gives no verdict to compare. Only a card that
    stops starting is asked about twice the job's GPUs (one more plan).
    """
    if old_side.key == new_side.key or spec.engine is None:
        return []
    try:
        old = {card: _engine_state(spec, old_side, card, plans) for card in spec.cards}
        new = {card: _engine_state(spec, new_side, card, plans) for card in spec.cards}
    except (EstimateError, SubscriptionError):
        return []
    flips = []
    for card in spec.cards:
        if old[card].starts == new[card].starts:
            continue
        after = new[card]
        if not after.starts:
            after = replace(after, wider_gpus=_wider_start(spec, new_side, card, plans))
        flips.append(EngineFlip(card=card, engine=spec.engine, before=old[card], after=after))
    return flips


def _engine_state(
    spec: SubscriptionSpec, side: ModelSide, card: str, plans: PlanCache, gpus: int | None = None
) -> EngineState:
    """The engine's start-up on ``card`` at the job's max_model_len (``gpus`` per card)."""
    context = side.context if spec.follow_context else None
    workload = spec.workload_on(card, context, side.model_type)
    request = spec.engine_on(card, context)
    if request is None:
        raise SubscriptionError(f"subscription {spec.name!r} names no engine")
    if gpus is not None:
        workload = replace(workload, gpus=gpus)
        request = replace(request, tensor_parallel=gpus)
    verdict = plans.plan(side, workload, request).engine
    if verdict is None:
        raise SubscriptionError(f"the estimator gave no {request.engine} verdict")
    return EngineState(
        starts=verdict.starts,
        max_model_len=verdict.max_model_len,
        kv_cache_tokens=verdict.kv_cache_tokens,
        max_model_len_that_starts=verdict.max_model_len_that_starts,
        error=verdict.error,
    )


def _wider_start(
    spec: SubscriptionSpec, side: ModelSide, card: str, plans: PlanCache
) -> int | None:
    """Twice the job's GPUs, if the engine starts there (tensor parallel over them)."""
    gpus = 2 * spec.gpus
    try:
        wider = _engine_state(spec, side, card, plans, gpus)
    except (EstimateError, SubscriptionError):
        return None
    return gpus if wider.starts else None


__all__ = ["engine_flips"]
