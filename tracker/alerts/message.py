"""How an alert reads: one line a subscriber can act on without opening a page.

The fit line names the job, the card, both memory figures and what the
subscriber can still do ("largest batch now 2", "needs a split over 2
cards"); the changes line names the artifacts, the revision and the most
severe change. Memory is in GiB (2**30 bytes, two decimals), as every estimate figure is
printed (``estimator.deltas.gib``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import estimator
from estimator.deltas import gib
from estimator.fit import MAX_SPLIT
from storage.records import Change, JsonValue
from tracker.alerts.spec import describe_job

SHORT_SHA: Final = 7


@dataclass(frozen=True)
class FitState:
    """What the estimator said of one card for one revision's config."""

    device_bytes: int
    fits: bool
    largest_batch: int
    split_cards: int | None

    def to_json(self) -> dict[str, JsonValue]:
        return {
            "device_bytes": self.device_bytes,
            "fits": self.fits,
            "largest_batch": self.largest_batch,
            "split_cards": self.split_cards,
        }


@dataclass(frozen=True)
class FitFlip:
    """A card whose fits verdict changed between two revisions."""

    card: str
    method: str
    seq_len_before: int
    seq_len_after: int
    before: FitState
    after: FitState

    def to_json(self) -> dict[str, JsonValue]:
        return {
            "card": self.card,
            "method": self.method,
            "seq_len_before": self.seq_len_before,
            "seq_len_after": self.seq_len_after,
            "before": self.before.to_json(),
            "after": self.after.to_json(),
        }


def fit_summary(
    workload: estimator.Workload, flips: Sequence[FitFlip], repo_id: str, sha: str
) -> str:
    """``Serving, batch 4 at 2,048 -> 4,096 tokens on L4 24GB: 18.56 GiB -> 24.00 GiB, ...``."""
    first = flips[0]
    before, after = first.seq_len_before, first.seq_len_after
    job = describe_job(workload, after)
    if before != after:  # a "max" sequence length follows the model's context
        job = job.removesuffix(f"{after:,} tokens") + f"{before:,} -> {after:,} tokens"
    cards = "; ".join(f"on {_card_label(flip.card)}: {_verdict(flip)}" for flip in flips)
    return f"{job} {cards} ({_revision(repo_id, sha)})"


def changes_summary(changes: Sequence[Change], repo_id: str, sha: str) -> str:
    """``chat_template changed in ORG/NAME@abcdef1: <first message> (+N more)``."""
    artifacts = ", ".join(dict.fromkeys(change.artifact for change in changes))
    more = f" (+{len(changes) - 1} more)" if len(changes) > 1 else ""
    return f"{artifacts} changed in {_revision(repo_id, sha)}: {changes[0].message}{more}"


def _verdict(flip: FitFlip) -> str:
    after = flip.after
    figures = f"{gib(flip.before.device_bytes)} -> {gib(after.device_bytes)}"
    if after.fits:
        return f"{figures}, fits again; largest batch now {after.largest_batch}"
    if after.largest_batch > 0:
        return f"{figures}, no longer fits; largest batch now {after.largest_batch}"
    if after.split_cards is not None:
        return f"{figures}, no longer fits; needs a split over {after.split_cards} cards"
    return f"{figures}, no longer fits, not even split over {MAX_SPLIT} cards"


def _card_label(name: str) -> str:
    """``T4 16GB``: the card with its memory, unless its name states it (``A100 80GB``)."""
    card = estimator.card(name)
    return card.name if "GB" in card.name else f"{card.name} {card.memory_gb:g}GB"


def _revision(repo_id: str, sha: str) -> str:
    return f"{repo_id}@{sha[:SHORT_SHA]}"


__all__ = ["FitFlip", "FitState", "changes_summary", "fit_summary"]
