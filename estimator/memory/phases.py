"""Memory as a few moments of a step, each affine in the batch size.

A training step peaks at one of a handful of moments (end of forward,
start of backward, late backward, optimizer step) holding different sets of
tensors. Every component is ``fixed + per_sample * batch``, so the peak at
any batch, and the largest batch under a limit, are exact closed forms
rather than a search: fitting ten cards costs ten divisions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import compress
from operator import itemgetter
from typing import Any, Final, NamedTuple

BREAKDOWN_KEYS: Final = (
    "weights",
    "gradients",
    "optimizer_state",
    "activations",
    "adapters",
    "kv_cache",
    "quantization_overhead",
    "framework_overhead",
)


class Term(NamedTuple):
    """One breakdown key's bytes at a moment: ``fixed + per_sample * batch``."""

    key: str
    fixed: float
    per_sample: float = 0.0


_KEY: Final = itemgetter(0)
_FIXED: Final = itemgetter(1)
_PER_SAMPLE: Final = itemgetter(2)


@dataclass(frozen=True, init=False)
class Phase:
    """A moment of the step and what is alive then."""

    name: str
    terms: tuple[Term, ...]
    # Summed once at construction: fitting reads them for every card and method.
    _fixed: float = field(init=False, repr=False, compare=False)
    _per_sample: float = field(init=False, repr=False, compare=False)

    def __init__(self, name: str, terms: tuple[Term, ...]) -> None:
        # The frozen instance's fields filled directly: a plan builds a score of phases,
        # and the generated __init__ with __post_init__ sets each through object.__setattr__.
        fields = self.__dict__
        fields["name"] = name
        fields["terms"] = terms
        fields["_fixed"] = sum(map(_FIXED, terms))
        fields["_per_sample"] = sum(map(_PER_SAMPLE, terms))

    def fixed(self) -> float:
        """Bytes alive at this moment whatever the batch."""
        return self._fixed

    def per_sample(self) -> float:
        """Bytes alive at this moment per sample of the batch."""
        return self._per_sample

    def at(self, batch: int) -> float:
        """Bytes alive at this moment at ``batch``."""
        return self.fixed() + self.per_sample() * batch

    def breakdown(self, batch: int) -> dict[str, int]:
        """Bytes per breakdown key at ``batch``, every key present (0 when absent), rounded."""
        out = dict.fromkeys(BREAKDOWN_KEYS, 0)
        for t in self.terms:
            out[t.key] += round(t.fixed + t.per_sample * batch)
        return out


@dataclass(frozen=True)
class MethodModel:
    """Everything needed to evaluate one method at any batch on any card.

    ``reserve_static`` / ``reserve_dynamic``: the caching allocator's
    reserve as a fraction of the fixed and of the batch-proportional bytes
    (fragmentation comes from the transient, odd-sized activation blocks).
    ``layer_fraction``: share of the fixed bytes that belongs to the
    transformer layers (for splitting layers over cards).
    """

    method: str
    phases: tuple[Phase, ...]
    numerics: str
    num_layers: int
    layer_fraction: float
    notes: tuple[str, ...]
    assumptions: tuple[str, ...]
    reserve_static: float
    reserve_dynamic: float
    # Per-batch memos for fitting the same model on every card.
    _split_worst: dict[tuple[int, int], float] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    _split_terms_at: dict[int, tuple[tuple[float, float, float], ...]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    # Batch-independent sums (reserved lines, split parts), filled on first use.
    _memo: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    def peak_phase(self, batch: int) -> Phase:
        """The moment holding the most bytes at ``batch``."""
        # ``Phase.at`` inlined: one evaluation per phase of every plan and card.
        return max(self.phases, key=lambda p: p._fixed + p._per_sample * batch)

    def allocated(self, batch: int) -> int:
        """``torch.cuda.max_memory_allocated`` at ``batch``, in bytes."""
        return round(self.peak_phase(batch).at(batch))

    def reserved(self, batch: int) -> int:
        """``torch.cuda.max_memory_reserved`` at ``batch``: allocated plus allocator reserve."""
        static, dynamic = 1 + self.reserve_static, 1 + self.reserve_dynamic
        # ``_reserved_affine`` inlined, the same products in the same order.
        return round(
            max([p._fixed * static + p._per_sample * batch * dynamic for p in self.phases])
        )

    def _reserved_affine(self, phase: Phase, batch: int) -> float:
        return phase.fixed() * (1 + self.reserve_static) + phase.per_sample() * batch * (
            1 + self.reserve_dynamic
        )

    def largest_batch(self, limit: float, context: float) -> int:
        """Largest batch whose device bytes stay under ``limit``; 0 when batch 1 does not fit."""
        best: float = 1 << 20
        for reserved_fixed, slope in self.reserved_lines():
            fixed = reserved_fixed + context
            if fixed > limit:
                return 0
            if slope > 0:
                best = min(best, (limit - fixed) / slope)
        return int(best)

    def reserved_lines(self) -> tuple[tuple[float, float], ...]:
        """Per phase, reserved bytes as (fixed, per sample): computed once, used per card."""
        lines: tuple[tuple[float, float], ...] | None = self._memo.get("lines")
        if lines is None:
            static, dynamic = 1 + self.reserve_static, 1 + self.reserve_dynamic
            lines = self._memo["lines"] = tuple(
                [(p._fixed * static, p._per_sample * dynamic) for p in self.phases]
            )
        return lines

    def _split_parts(self) -> tuple[tuple[float, float, float, float], ...]:
        """Per phase: fixed bytes of the layers, other fixed bytes, activations, other per-sample."""
        parts: tuple[tuple[float, float, float, float], ...] | None = self._memo.get("split_parts")
        if parts is not None:
            return parts
        out = []
        fraction = self.layer_fraction
        for phase in self.phases:
            # The filtered sums in C (compress over the key tests): same terms, same order.
            terms = phase.terms
            states = sum(compress(map(_FIXED, terms), map(_IS_LAYER_STATE, map(_KEY, terms))))
            other = phase._fixed - states
            acts = sum(compress(map(_PER_SAMPLE, terms), map(_IS_ACTIVATIONS, map(_KEY, terms))))
            out.append(
                (states * fraction, other + states * (1 - fraction), acts, phase._per_sample - acts)
            )
        parts = self._memo["split_parts"] = tuple(out)
        return parts

    def split_peak(self, cards: int, batch: int, context: float) -> float:
        """Device bytes on the busiest card when layers are split contiguously over ``cards``.

        Each card holds its share of the layers' states and activations; the
        embeddings, head and loss are all charged to the busiest card. Only
        ``context`` differs between cards, so the rest is remembered per
        (cards, batch) for the next card.
        """
        key = (cards, batch)
        worst = self._split_worst.get(key)
        if worst is None:
            share = -(-self.num_layers // cards) / max(self.num_layers, 1)
            static, dynamic = 1 + self.reserve_static, 1 + self.reserve_dynamic
            worst = 0.0
            for layer_fixed, other_fixed, acts, other_dyn in self._split_parts():
                value = (layer_fixed * share + other_fixed) * static + (
                    acts * share + other_dyn
                ) * batch * dynamic
                if value > worst:
                    worst = value
            self._split_worst[key] = worst
        return worst + context

    def _split_terms(self, batch: int) -> tuple[tuple[float, float, float], ...]:
        """Per phase at ``batch``: reserved other-fixed bytes, other per-sample bytes, bytes per share."""
        terms = self._split_terms_at.get(batch)
        if terms is None:
            terms = self._split_terms_at[batch] = tuple(
                (
                    other_fixed * (1 + self.reserve_static),
                    other_dyn * batch * (1 + self.reserve_dynamic),
                    layer_fixed * (1 + self.reserve_static)
                    + acts * batch * (1 + self.reserve_dynamic),
                )
                for layer_fixed, other_fixed, acts, other_dyn in self._split_parts()
            )
        return terms

    def split_terms(self, batch: int) -> tuple[tuple[float, float, float], ...]:
        """``_split_terms`` for ``fit_cards``, which inlines ``smallest_split`` per card."""
        return self._split_terms(batch)

    def smallest_split(
        self, limit: float, context: float, batch: int, max_cards: int
    ) -> tuple[int, float] | None:
        """Fewest cards (2..max_cards) whose busiest card stays under ``limit``, and its peak.

        The busiest card's bytes are affine in its share of the layers, so the
        largest share that fits is one division per phase and the card count
        follows from it; the candidate is checked (and the next tried) so
        rounding at the boundary cannot disagree with ``split_peak``.
        """
        layers = max(self.num_layers, 1)
        share = float("inf")
        for other_fixed, other_dyn, per_share in self._split_terms(batch):
            room = limit - context - other_fixed - other_dyn
            if room < 0:
                return None
            if per_share > 0:
                candidate = room / per_share
                if candidate < share:
                    share = candidate
        per_card = int(min(share * layers, layers))
        if per_card < 1 and self.num_layers > 0:
            return None
        first = 2 if per_card < 1 else max(2, -(-self.num_layers // per_card))
        for cards in range(max(2, first - 1), min(first + 1, max_cards) + 1):
            peak = self.split_peak(cards, batch, context)
            if peak <= limit:
                return cards, peak
        return None


_LAYER_STATES: Final = frozenset(
    {"weights", "gradients", "optimizer_state", "adapters", "quantization_overhead"}
)
_IS_LAYER_STATE: Final = _LAYER_STATES.__contains__
_IS_ACTIVATIONS: Final = "activations".__eq__
