"""One serving engine's start-up on every card of the table, for the model page's card table.

``plan(..., engine=..., engine_on_every_card=True)`` asks the engine of ``engine`` with the
same flags on each card (``serving.cards`` in the JSON), so a page reads whether the engine
starts on each card, with what KV cache, and the largest ``max_model_len`` that does, without
planning per request. Each entry keeps what the card table shows, not the whole verdict
(20 engine error messages would make every stored plan kilobytes longer):
``serving.engine`` carries the full one (bytes, settings, the engine's error, sources) for
the workload's card. A card the engine model refuses is left out, so the page says it has
no verdict for it rather than guessing one.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

from estimator.architecture import Architecture
from estimator.cards import Card
from estimator.engines import EngineRequest
from estimator.engines.simulate import ENGINES, engine_input
from estimator.errors import EstimateError
from estimator.memory.states import ParameterSplit


@dataclass(frozen=True)
class CardEngineVerdict:
    """The engine on one card: whether it starts at ``max_model_len``, the KV cache it
    allocates, and the largest max_model_len that starts (0: none, the weights do not fit)."""

    card: str
    starts: bool
    kv_cache_tokens: int
    max_model_len: int
    max_model_len_that_starts: int


def on_every_card(
    arch: Architecture, split: ParameterSplit, request: EngineRequest, cards: tuple[Card, ...]
) -> tuple[CardEngineVerdict, ...]:
    """``request`` on each of ``cards`` (its card and card memory replaced), in table order.

    The model's serving shape does not depend on the card: it is computed once, and each
    card runs only the engine's own start-up (what ``simulate_engine`` runs after it), on a
    request per card built once for the table.
    """
    try:
        shape, request = engine_input(arch, split, request)
    except EstimateError:
        return ()
    simulate = ENGINES[request.engine]
    requests = _on_cards(request, tuple(card.name for card in cards))
    out = []
    for c, on_card in zip(cards, requests, strict=True):
        try:
            v = simulate(shape, on_card)
        except EstimateError:
            continue
        out.append(
            CardEngineVerdict(
                c.name, v.starts, v.kv_cache_tokens, v.max_model_len, v.max_model_len_that_starts
            )
        )
    return tuple(out)


@lru_cache(maxsize=16)
def _on_cards(request: EngineRequest, names: tuple[str, ...]) -> tuple[EngineRequest, ...]:
    """``request`` on each card of ``names``, its card memory dropped: built (and validated)
    once, as the daemon asks the same request on the same table for every revision."""
    return tuple(replace(request, card=name, card_memory_bytes=None) for name in names)


__all__ = ["CardEngineVerdict", "on_every_card"]
