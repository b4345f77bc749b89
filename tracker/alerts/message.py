"""How an alert reads: one line a subscriber can act on without opening a page.

The fit line names the job, the card, both memory figures and what the
subscriber can still do ("largest batch now 2", "needs a split over 2
cards"); the changes line names the artifacts, the revision and the most
severe change. Memory is in GiB (2**30 bytes, two decimals), as every estimate figure is
printed (``estimator.deltas.gib``). An engine subscription's line is the engine's start-up
instead: ``vLLM on L4 no longer starts at max_model_len 131,072 (the KV cache holds 14,896
tokens); pass --max-model-len 14896`` and what the previous revision did, so the subscriber
gets the flag value to paste (digits only, as the engine's argument parser reads it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import estimator
from estimator.deltas import gib
from estimator.engines.verdict import DISPLAY
from estimator.fit import MAX_SPLIT
from storage import RepoId
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
        """The state as it appears in an alert's ``fit`` payload; bytes are raw, not GiB."""
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
        """The flip as one item of an alert's ``fit`` payload list."""
        return {
            "card": self.card,
            "method": self.method,
            "seq_len_before": self.seq_len_before,
            "seq_len_after": self.seq_len_after,
            "before": self.before.to_json(),
            "after": self.after.to_json(),
        }


@dataclass(frozen=True)
class EngineState:
    """What the serving engine's start-up said of one card for one revision's config.

    ``wider_gpus`` is the tensor-parallel degree (twice the job's GPUs) at
    which the engine would start, when the job's own does not and that one
    does; None otherwise (not asked, or it does not start either).
    """

    starts: bool
    max_model_len: int
    kv_cache_tokens: int
    max_model_len_that_starts: int
    error: str | None
    wider_gpus: int | None = None

    def to_json(self) -> dict[str, JsonValue]:
        """The state as an engine alert's ``fit`` payload holds it; unknown figures are null."""
        return {
            "starts": self.starts,
            "max_model_len": self.max_model_len,
            "kv_cache_tokens": self.kv_cache_tokens,
            "max_model_len_that_starts": self.max_model_len_that_starts,
            "error": self.error,
            "wider_gpus": self.wider_gpus,
        }


@dataclass(frozen=True)
class EngineFlip:
    """A card on which the serving engine's start-up verdict changed between two revisions."""

    card: str
    engine: str
    before: EngineState
    after: EngineState

    def to_json(self) -> dict[str, JsonValue]:
        """The flip as one item of an engine alert's ``fit`` payload list."""
        return {
            "card": self.card,
            "engine": self.engine,
            "before": self.before.to_json(),
            "after": self.after.to_json(),
        }


def engine_summary(flips: Sequence[EngineFlip], repo_id: RepoId, sha: str) -> str:
    """``vLLM on L4 no longer starts at max_model_len 131,072 (the KV cache holds N tokens);
    pass --max-model-len N or use 2 GPUs (was: starts at max_model_len 4,096 ...)``."""
    lines = "; ".join(_engine_verdict(flip) for flip in flips)
    return f"{lines} ({_revision(repo_id, sha)})"


def fit_summary(
    workload: estimator.Workload, flips: Sequence[FitFlip], repo_id: RepoId, sha: str
) -> str:
    """``Serving, batch 4 at 2,048 -> 4,096 tokens on L4 24GB: 18.56 GiB -> 24.00 GiB, ...``."""
    first = flips[0]
    before, after = first.seq_len_before, first.seq_len_after
    job = describe_job(workload, after)
    if before != after:  # a "max" sequence length follows the model's context
        job = job.removesuffix(f"{after:,} tokens") + f"{before:,} -> {after:,} tokens"
    cards = "; ".join(f"on {_card_label(flip.card)}: {_verdict(flip)}" for flip in flips)
    return f"{job} {cards} ({_revision(repo_id, sha)})"


def changes_summary(changes: Sequence[Change], repo_id: RepoId, sha: str) -> str:
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


def _engine_verdict(flip: EngineFlip) -> str:
    before, after = flip.before, flip.after
    head = f"{DISPLAY.get(flip.engine, flip.engine)} on {flip.card}"
    was = (
        f"was: starts at max_model_len {before.max_model_len:,}, "
        f"the KV cache holding {before.kv_cache_tokens:,} tokens"
        if before.starts
        else f"was: does not start at max_model_len {before.max_model_len:,}, "
        f"the KV cache holding {before.kv_cache_tokens:,} tokens"
    )
    if after.starts:
        return (
            f"{head} starts again at max_model_len {after.max_model_len:,} "
            f"(the KV cache holds {after.kv_cache_tokens:,} tokens) ({was})"
        )
    wider = "" if after.wider_gpus is None else f"use {after.wider_gpus} GPUs"
    if after.max_model_len_that_starts > 0:
        fix = f"pass --max-model-len {after.max_model_len_that_starts}"
        fix += f" or {wider}" if wider else ""
    else:  # not even the weights fit
        fix = f"no max_model_len starts on {flip.card}" + (f"; {wider}" if wider else "")
    return (
        f"{head} no longer starts at max_model_len {after.max_model_len:,} "
        f"(the KV cache holds {after.kv_cache_tokens:,} tokens); {fix} ({was})"
    )


def _card_label(name: str) -> str:
    """``T4 16GB``: the card with its memory, unless its name states it (``A100 80GB``)."""
    card = estimator.card(name)
    return card.name if "GB" in card.name else f"{card.name} {card.memory_gb:g}GB"


def _revision(repo_id: RepoId, sha: str) -> str:
    return f"{repo_id}@{sha[:SHORT_SHA]}"


__all__ = [
    "EngineFlip",
    "EngineState",
    "FitFlip",
    "FitState",
    "changes_summary",
    "engine_summary",
    "fit_summary",
]
