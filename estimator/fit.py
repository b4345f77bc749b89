"""Which cards a plan fits: largest batch per method, or the smallest layer split.

Limits are the card's reported memory divided by the headroom factor
(default 1.15), compared with device bytes (what nvidia-smi would show).
Serving additionally reports what an engine such as vLLM reserves up front
(``gpu_memory_utilization`` x total), next to the minimum to run.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from itertools import repeat
from typing import Final, NamedTuple

from estimator.cards import Card, all_cards
from estimator.memory import MethodModel
from estimator.memory.overhead import context_bytes

MAX_SPLIT: Final = 8
VLLM_UTILIZATION: Final = 0.9


class MethodFit(NamedTuple):
    """One method on one card: the largest batch, or if none fits, the fewest cards to split on."""

    method: str
    largest_batch: int
    fits: bool
    split_cards: int | None
    split_per_card_bytes: int | None


@dataclass(frozen=True)
class CardFit:
    """Every method on one card, what a serving engine reserves there, any precision caveat."""

    card: Card
    methods: tuple[MethodFit, ...]
    engine_reserved_bytes: int
    precision_note: str | None

    def method(self, name: str) -> MethodFit:
        """The fit of method ``name``; StopIteration when the plan did not compute it."""
        return next(m for m in self.methods if m.method == name)


def fit_method(model: MethodModel, card: Card, batch: int, gpus: int, headroom: float) -> MethodFit:
    """Fit under the card's memory / ``headroom``; split over up to MAX_SPLIT when batch 1 fails."""
    limit = card.usable_bytes / headroom
    context = context_bytes(card.context_bytes, gpus)
    largest = model.largest_batch(limit, context)
    split_cards: int | None = None
    split_bytes: int | None = None
    if largest == 0:
        found = model.smallest_split(limit, context, 1, MAX_SPLIT)
        if found is not None:
            split_cards, split_bytes = found[0], round(found[1])
    return MethodFit(model.method, largest, largest >= batch, split_cards, split_bytes)


def fit_card(
    models: dict[str, MethodModel],
    card: Card,
    batch: int,
    gpus: int,
    headroom: float,
    precision: str,
) -> CardFit:
    """Fit every method on ``card``; bf16 on a card without bf16 gets a precision note."""
    note = None
    if precision == "bf16" and not card.bf16:
        note = f"{card.name} has no bf16: estimated in fp16 (same widths, loss scaling needed)"
    return CardFit(
        card=card,
        methods=tuple(fit_method(m, card, batch, gpus, headroom) for m in models.values()),
        engine_reserved_bytes=round(VLLM_UTILIZATION * card.usable_bytes),
        precision_note=note,
    )


def fit_cards(
    models: dict[str, MethodModel],
    cards: tuple[Card, ...],
    batch: int,
    gpus: int,
    headroom: float,
    precision: str,
) -> tuple[CardFit, ...]:
    """``fit_card`` for every card, each model's lines and split terms read once for all cards.

    The same answers as ``fit_card`` per card (a test holds them equal).
    Whether batch 1 fits is one subtraction (rooms fall as fixed bytes grow,
    and floating-point subtraction is monotone, so the phase with the most
    fixed bytes decides), the largest batch one division per growing phase;
    a split reads the busiest card's bytes per card count from a memo. Cards
    are visited from the most free memory down, so the first card that no
    split fits marks every smaller one (``_Prepared.hopeless``); the answers
    keep the order of ``cards``. What depends on the cards alone (limits,
    contexts, that order, notes) is read once per headroom, GPU count and
    precision for the card table.
    """
    table = (
        _table_of_all_cards(headroom, gpus, precision)
        if cards is all_cards()
        else _CardTable(cards, headroom, gpus, precision)
    )
    columns = [_column(_Prepared(m), table, batch) for m in models.values()]
    out: list[CardFit] = [None] * len(cards)  # type: ignore[list-item]  # every slot is filled
    reserved, notes = table.reserved, table.notes
    per_group = zip(*columns, strict=True) if columns else [()] * len(table.groups)
    for (_, _, members), methods in zip(table.groups, per_group, strict=True):
        for i in members:
            out[i] = _card_fit(cards[i], methods, reserved[i], notes[i])
    return tuple(out)


def _column(p: _Prepared, table: _CardTable, batch: int) -> list[MethodFit]:
    """One method's fit on every group of alike cards, from the most free memory down."""
    new = tuple.__new__  # MethodFit's fields in order, without the keyword-parsing constructor
    method, top, unfit = p.method, p.top, p.unfit
    limits, contexts = table.limits, table.contexts
    # Per group the smallest quotient over the phases that can set the largest batch, taken
    # as the per-card loop takes it: 1 << 20, then each phase's quotient if smaller (min
    # keeps the first of equal values). Quotients of cards where batch 1 fails go unread.
    quotients = [
        [(limit - fixed - context) / slope for limit, context in zip(limits, contexts, strict=True)]
        for fixed, slope in p.slopes
    ]
    bests = map(min, repeat(1 << 20), *quotients) if quotients else repeat(1 << 20)
    out = []
    for limit, context, best in zip(limits, contexts, bests, strict=False):
        # Rooms fall as fixed bytes grow: if any phase leaves none, this one does.
        if limit - top - context >= 0:
            largest = int(best)
            if largest:
                out.append(new(MethodFit, (method, largest, largest >= batch, None, None)))
                continue
        found = None if limit - context <= p.hopeless else p.split(limit, context)
        out.append(
            unfit
            if found is None
            else new(MethodFit, (method, 0, False, found[0], round(found[1])))
        )
    return out


def _card_fit(
    card: Card, methods: tuple[MethodFit, ...], reserved: int, note: str | None
) -> CardFit:
    """``CardFit(card, methods, reserved, note)`` filling the frozen instance's fields directly."""
    fit = object.__new__(CardFit)
    fields = fit.__dict__
    fields["card"] = card
    fields["methods"] = methods
    fields["engine_reserved_bytes"] = reserved
    fields["precision_note"] = note
    return fit


class _CardTable:
    """What fitting needs of the cards alone, for one headroom, GPU count and precision.

    ``groups``: cards of equal memory and context (their method fits are the
    same), as (limit, context, positions in the table), from the most free
    memory down, with their ``limits`` and ``contexts`` as columns;
    ``reserved`` and ``notes`` per card, in table order.
    """

    __slots__ = ("contexts", "groups", "limits", "notes", "reserved")

    def __init__(self, cards: tuple[Card, ...], headroom: float, gpus: int, precision: str) -> None:
        limits = [c.usable_bytes / headroom for c in cards]
        contexts = [context_bytes(c.context_bytes, gpus) for c in cards]
        order = sorted(((limits[i] - contexts[i], i) for i in range(len(cards))), reverse=True)
        groups: dict[tuple[int, int], tuple[float, int, list[int]]] = {}
        for _, i in order:
            c = cards[i]
            key = (c.usable_bytes, c.context_bytes)
            if key not in groups:
                groups[key] = (limits[i], contexts[i], [])
            groups[key][2].append(i)
        self.groups = tuple((limit, ctx, tuple(at)) for limit, ctx, at in groups.values())
        self.limits = tuple(limit for limit, _, _ in self.groups)
        self.contexts = tuple(ctx for _, ctx, _ in self.groups)
        self.reserved = tuple(round(VLLM_UTILIZATION * c.usable_bytes) for c in cards)
        self.notes = tuple(
            f"{c.name} has no bf16: estimated in fp16 (same widths, loss scaling needed)"
            if precision == "bf16" and not c.bf16
            else None
            for c in cards
        )


@lru_cache(maxsize=64)
def _table_of_all_cards(headroom: float, gpus: int, precision: str) -> _CardTable:
    return _CardTable(all_cards(), headroom, gpus, precision)


class _Prepared:
    """One model's card-independent fitting inputs, read once per ``fit_cards`` call."""

    __slots__ = (
        "hopeless",
        "layers",
        "method",
        "model",
        "slopes",
        "terms",
        "top",
        "unfit",
        "worst",
    )

    def __init__(self, model: MethodModel) -> None:
        self.model = model
        self.method = model.method
        # The fit of a card that holds neither batch 1 nor a split (immutable: shared).
        self.unfit = MethodFit(model.method, 0, False, None, None)
        lines = model.reserved_lines()
        # Reserved fixed bytes of the fullest phase: batch 1 fits only if it leaves room.
        self.top = max((fixed for fixed, _ in lines), default=float("-inf"))
        # Phases that can set the largest batch: growing with it, and not matched or
        # exceeded in both fixed and per-sample bytes by another (that one's room is
        # no larger and its divisor no smaller, so its quotient is never larger).
        self.slopes = []
        steepest = 0.0
        for fixed, slope in sorted(lines, reverse=True):
            if slope > steepest:
                self.slopes.append((fixed, slope))
                steepest = slope
        self.terms: tuple[tuple[float, float, float], ...] | None = None
        self.layers = model.num_layers
        # Busiest card's bytes without the context, per card count (batch 1).
        self.worst: dict[int, float] = {}
        # The most free bytes (memory less context) seen with no split possible.
        self.hopeless = float("-inf")

    def split(self, limit: float, context: float) -> tuple[int, float] | None:
        """``model.smallest_split(limit, context, 1, MAX_SPLIT)``, inlined for the card loop."""
        free = limit - context
        # Rooms, the share and the layers per card only grow with ``free``: below a
        # card that no split could fit for these reasons, none can.
        if free <= self.hopeless:
            return None
        terms = self.terms
        if terms is None:
            terms = self.terms = self.model.split_terms(1)
        share = float("inf")
        for other_fixed, other_dyn, per_share in terms:
            room = free - other_fixed - other_dyn
            if room < 0:
                self.hopeless = free
                return None
            if per_share > 0:
                candidate = room / per_share
                if candidate < share:
                    share = candidate
        layers = self.layers
        per_card = int(min(share * max(layers, 1), max(layers, 1)))
        if per_card < 1 and layers > 0:
            self.hopeless = free
            return None
        first = 2 if per_card < 1 else max(2, -(-layers // per_card))
        if first > MAX_SPLIT + 1:
            self.hopeless = free  # more cards than MAX_SPLIT: no count to try
            return None
        worst = self.worst
        for cards in range(max(2, first - 1), min(first + 1, MAX_SPLIT) + 1):
            w = worst.get(cards)
            if w is None:
                # split_peak adds the context to the busiest card's bytes: at 0.0, those bytes.
                w = worst[cards] = self.model.split_peak(cards, 1, 0.0)
            peak = w + context
            if peak <= limit:
                return cards, peak
        return None
