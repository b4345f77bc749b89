"""GPU cards, read from the package's ``data/cards.json``.

Prices are snapshots with their provider, date and source, because they
move and differ 2-5x between providers; a card without a stored price has
``price`` None and cost says so instead of inventing one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache, lru_cache

from estimator.data_files import data_text
from estimator.errors import WorkloadError


@dataclass(frozen=True)
class Price:
    """An hourly rental price as one provider listed it on ``date``; prices move, so it is dated."""

    usd_per_hour: float
    provider: str
    date: str
    source: str


@dataclass(frozen=True)
class Card:
    """One GPU. ``usable_bytes`` is the total the driver reports (below the nominal size)."""

    name: str
    aliases: tuple[str, ...]
    memory_gb: float
    usable_bytes: int
    bf16: bool
    dense_tflops: float
    bandwidth_gbs: float
    context_bytes: int
    spec_source: str
    price: Price | None
    # Why a card has no price (the card table says so instead of leaving it blank).
    price_note: str | None = None


@cache
def all_cards() -> tuple[Card, ...]:
    """Every card of ``data/cards.json`` in file order, read once per process."""
    raw = json.loads(data_text("cards.json"))
    cards = []
    for entry in raw["cards"]:
        price = entry["price"]
        cards.append(
            Card(
                name=entry["name"],
                aliases=tuple(entry["aliases"]),
                memory_gb=float(entry["memory_gb"]),
                usable_bytes=int(entry["usable_bytes"]),
                bf16=bool(entry["bf16"]),
                dense_tflops=float(entry["dense_tflops"]),
                bandwidth_gbs=float(entry["bandwidth_gbs"]),
                context_bytes=int(entry["context_bytes"]),
                spec_source=entry["spec_source"],
                price=None if price is None else Price(**price),
                price_note=entry.get("price_note"),
            )
        )
    return tuple(cards)


def _key(name: str) -> str:
    return "".join(ch for ch in name.lower() if ch.isalnum())


@cache
def _index() -> dict[str, Card]:
    index: dict[str, Card] = {}
    for card in all_cards():
        for name in (card.name, *card.aliases):
            index[_key(name)] = card
    return index


@lru_cache(maxsize=256)
def card(name: str) -> Card:
    """The card called ``name`` (case, spaces and dashes ignored).

    Remembered per name (a bounded few: names outside the table raise, and raising is
    not remembered): a plan with an engine looks up every card of the table by name.
    """
    found = _index().get(_key(name))
    if found is None:
        known = ", ".join(c.name for c in all_cards())
        raise WorkloadError(f"workload: unknown card {name!r} (known: {known})")
    return found
