"""Turn a new revision into alerts, and queue them in the revision's own transaction.

``evaluate`` is pure: a subscription, the two configs and the revision's
changes in, alerts out. A fit alert fires only when a card's verdict flips
(fits -> does not, or back), never because the numbers merely moved, so a
subscriber hears about what changes what they can run. A changes alert
collects every watched change of at least the subscription's severity.
Each alert's ``event_key`` is derived from (repo, sha, kind), so evaluating
the same revision again never queues it twice (the outbox refuses the
duplicate).

``enqueue_alerts`` is what the daemon's publisher calls after the advisory
is written: it reads the configs from the blob store (already holding this
revision's blobs), evaluates every active subscription whose patterns match
the repo, and queues one outbox row per alert for the subscription's Atom
feed and one for each configured channel.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from typing import Any, Final, Literal

from sqlalchemy.orm import Session

import estimator
from estimator.errors import EstimateError
from storage import Delivery, enqueue_delivery, get_blob, snapshot_at, subscriptions
from storage.records import Change, JsonValue, Subscription
from tracker.alerts.deliver import FEED_CHANNEL
from tracker.alerts.message import FitFlip, FitState, changes_summary, fit_summary
from tracker.alerts.spec import SubscriptionError, SubscriptionSpec
from tracker.diff.common import change_json
from tracker.process import Processed

SCHEMA: Final = "neurarch-trace.alert/1"
CONFIG: Final = "config.json"
AlertKind = Literal["fit", "changes"]
Config = Mapping[str, Any]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Alert:
    """One alert for one subscription and revision; ``payload`` is the JSON delivered."""

    kind: AlertKind
    event_key: str
    summary: str
    payload: dict[str, JsonValue] = field(hash=False)


@dataclass(frozen=True)
class AlertLinks:
    """Where an alert's links point: this deployment's pages and the Hub's commit view."""

    base_url: str
    hub_url: str = "https://huggingface.co"

    def advisory_url(self, advisory_id: str | None) -> str | None:
        if advisory_id is None:
            return None
        return f"{self.base_url.rstrip('/')}/advisories/{advisory_id}"

    def revision_url(self, repo_id: str, sha: str) -> str:
        return f"{self.hub_url.rstrip('/')}/{repo_id}/commit/{sha}"


def evaluate(
    spec: SubscriptionSpec,
    repo_id: str,
    sha: str,
    previous_sha: str | None,
    old_config: Config | None,
    new_config: Config | None,
    changes: Sequence[Change],
) -> list[Alert]:
    """The alerts ``spec`` asks for on the revision ``sha`` (fit first, then changes)."""
    alerts: list[Alert] = []
    if spec.fit and old_config is not None and new_config is not None:
        flips = fit_flips(spec, old_config, new_config)
        if flips:
            summary = fit_summary(spec.workload, flips, repo_id, sha)
            extra: dict[str, JsonValue] = {"fit": [flip.to_json() for flip in flips]}
            alerts.append(_alert(spec, "fit", repo_id, sha, previous_sha, summary, extra))
    watched = watched_changes(spec, changes)
    if watched:
        summary = changes_summary(watched, repo_id, sha)
        extra = {"changes": [change_json(change, values=False) for change in watched]}
        alerts.append(_alert(spec, "changes", repo_id, sha, previous_sha, summary, extra))
    return alerts


def fit_flips(spec: SubscriptionSpec, old_config: Config, new_config: Config) -> list[FitFlip]:
    """Every card of ``spec`` whose fits verdict differs between the two configs.

    A config the estimator refuses (or one stating no context length for a
    "max" sequence length) gives no verdict to compare, so no flips.
    """
    try:
        old = _fit_states(spec, old_config)
        new = _fit_states(spec, new_config)
    except (EstimateError, SubscriptionError):
        return []
    return [
        FitFlip(
            card=card,
            method=spec.workload.method,
            seq_len_before=old[card][0],
            seq_len_after=new[card][0],
            before=old[card][1],
            after=new[card][1],
        )
        for card in spec.cards
        if old[card][1].fits != new[card][1].fits
    ]


def watched_changes(spec: SubscriptionSpec, changes: Sequence[Change]) -> list[Change]:
    """The changes ``spec`` watches at or above its severity, most severe first."""
    if not spec.artifacts:
        return []
    kept = [c for c in changes if spec.watches(c.artifact) and c.severity >= spec.min_severity]
    return sorted(kept, key=lambda change: -change.severity)


def enqueue_alerts(
    session: Session,
    processed: Processed,
    *,
    advisory_id: str | None,
    links: AlertLinks,
    now: datetime,
) -> list[Delivery]:
    """Queue the alerts of every matching subscription for ``processed``, in its transaction.

    The repo's first recorded revision has nothing to compare against, and
    the revision that uploads the model (the first with a config.json, after
    the Hub's empty initial commit) is its baseline, as for advisories:
    everything in it is new and nobody ran the model before, so neither
    alerts anyone. A stored subscription that no longer parses is skipped
    with a warning: it must not abort the revision's commit.
    """
    previous = processed.previous
    if previous is None:
        return []
    revision = processed.snapshot.revision
    repo_id, sha = revision.repo_id, revision.sha
    matching = _matching_subscriptions(session, repo_id)
    if not matching:  # the common case: read nothing more inside the revision's transaction
        return []
    previous_texts = snapshot_at(session, repo_id, previous.sha).texts
    if CONFIG in processed.snapshot.texts and CONFIG not in previous_texts:
        return []
    new_config = cache(lambda: _config_from(session, processed.snapshot.texts))
    old_config = cache(lambda: _config_from(session, previous_texts))
    queued: list[Delivery] = []
    for record, spec in matching:
        alerts = evaluate(
            spec,
            repo_id,
            sha,
            previous.sha,
            old_config() if spec.fit else None,
            new_config() if spec.fit else None,
            processed.changes,
        )
        channels = [FEED_CHANNEL] + [f"{c.kind}:{i}" for i, c in enumerate(spec.channels)]
        for alert in alerts:
            payload = {
                **alert.payload,
                "advisory_id": advisory_id,
                "advisory_url": links.advisory_url(advisory_id),
                "revision_url": links.revision_url(repo_id, sha),
            }
            for channel in channels:
                delivery = enqueue_delivery(
                    session,
                    record.id,
                    channel,
                    alert.event_key,
                    payload,
                    now=now,
                    advisory_id=advisory_id,
                    repo_id=repo_id,
                    sha=sha,
                )
                if delivery is not None:
                    queued.append(delivery)
    return queued


def _matching_subscriptions(
    session: Session, repo_id: str
) -> list[tuple[Subscription, SubscriptionSpec]]:
    """Active subscriptions naming ``repo_id``; one whose stored spec no longer parses is
    skipped with a warning."""
    matching = []
    for record in subscriptions(session):
        try:
            spec = SubscriptionSpec.from_record(record)
        except SubscriptionError as exc:
            log.warning(
                json.dumps(
                    {"event": "subscription_skipped", "name": record.name, "error": str(exc)}
                )
            )
            continue
        if spec.matches(repo_id):
            matching.append((record, spec))
    return matching


def _fit_states(spec: SubscriptionSpec, config: Config) -> dict[str, tuple[int, FitState]]:
    """Per card: the sequence length used and what the estimator said."""
    context: Callable[[], int | None] = cache(lambda: _context(config))
    states: dict[str, tuple[int, FitState]] = {}
    for card in spec.cards:
        needed = context() if spec.workload.seq_len is None else None
        workload = spec.workload.for_card(card, spec.gpus, needed)
        plan = estimator.plan(config, workload)
        fit = next(c for c in plan.cards if c.card.name == card).method(workload.method)
        states[card] = (
            workload.seq_len,
            FitState(
                device_bytes=plan.selected.device_bytes,
                fits=fit.fits,
                largest_batch=fit.largest_batch,
                split_cards=fit.split_cards,
            ),
        )
    return states


def _context(config: Config) -> int | None:
    """The model's own context length, as the estimator reads it from the config."""
    value = dict(estimator.plan(config).model)["max_position_embeddings"]
    return value if isinstance(value, int) else None


def _config_from(session: Session, texts: Mapping[str, str]) -> Config | None:
    """The revision's parsed config.json; None when it has none or it is not a JSON object."""
    key = texts.get(CONFIG)
    if key is None:
        return None
    try:
        parsed = json.loads(get_blob(session, key))
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


def _alert(
    spec: SubscriptionSpec,
    kind: AlertKind,
    repo_id: str,
    sha: str,
    previous_sha: str | None,
    summary: str,
    extra: dict[str, JsonValue],
) -> Alert:
    payload: dict[str, JsonValue] = {
        "schema": SCHEMA,
        "kind": kind,
        "subscription": spec.name,
        "repo_id": repo_id,
        "sha": sha,
        "previous_sha": previous_sha,
        "summary": summary,
        "workload": _workload_json(spec),
        "fit": [],
        "changes": [],
        **extra,
        "advisory_id": None,
        "advisory_url": None,
        "revision_url": None,
    }
    return Alert(kind, f"{repo_id}@{sha}/{kind}", summary, payload)


def _workload_json(spec: SubscriptionSpec) -> dict[str, JsonValue]:
    document = spec.spec_json()
    return {
        key: document[key]
        for key in ("method", "batch", "seq_len", "precision", "lora_rank", "cards", "gpus")
    }


__all__ = [
    "SCHEMA",
    "Alert",
    "AlertKind",
    "AlertLinks",
    "enqueue_alerts",
    "evaluate",
    "fit_flips",
    "watched_changes",
]
