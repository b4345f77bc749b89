"""Turn a new revision into alerts, and queue them in the revision's own transaction.

``evaluate`` is pure: a subscription, the two sides of the transition (each
config with its context length) and the revision's changes in, alerts out.
A fit alert fires only when a card's verdict flips (fits -> does not, or
back), never because the numbers merely moved, so a subscriber hears about
what changes what they can run. A changes alert collects every watched
change of at least the subscription's severity. Each alert's ``event_key``
is derived from (repo, sha, kind), so evaluating the same revision again
never queues it twice (the outbox refuses the duplicate).

``enqueue_alerts`` is what the daemon's alert publisher (``alert_publisher``,
an entry of its publisher table) calls after the advisory is written. It
reads only the revision's outcome record: the parsed configs and the context
length in the typed plans come from processing, so nothing is read back from
the blob store and no JSON is parsed again. A plan under a subscriber's
workload is computed once per (config, workload, engine request) within the
revision (``PlanCache``), however many subscriptions and cards ask for it.

A subscription naming a serving ``engine`` is judged by the engine's start-up
instead of peak memory (``tracker.alerts.starts``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Final, Literal

from sqlalchemy.orm import Session

from estimator import Plan
from estimator.errors import EstimateError
from storage import Delivery, RepoId, channel_key, enqueue_delivery, subscriptions_naming
from storage.records import (
    Change,
    JsonValue,
    Publication,
    RevisionOutcome,
    Snapshot,
    Subscription,
)
from tracker.alerts.deliver import FEED_CHANNEL
from tracker.alerts.message import FitFlip, FitState, changes_summary, engine_summary, fit_summary
from tracker.alerts.plan_cache import ModelSide, PlanCache, stated_context
from tracker.alerts.spec import SubscriptionError, SubscriptionSpec
from tracker.alerts.starts import engine_flips
from tracker.diff.common import change_json
from tracker.revision.process import Publisher

SCHEMA: Final = "neurarch-trace.alert/1"
CONFIG: Final = "config.json"
AlertKind = Literal["fit", "changes"]

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
        """The advisory's page on this deployment; None when the revision published no advisory."""
        if advisory_id is None:
            return None
        return f"{self.base_url.rstrip('/')}/advisories/{advisory_id}"

    def revision_url(self, repo_id: RepoId, sha: str) -> str:
        """The Hub's commit page for ``sha``, linked from every alert so a subscriber sees the diff."""
        return f"{self.hub_url.rstrip('/')}/{repo_id}/commit/{sha}"


def evaluate(
    spec: SubscriptionSpec,
    repo_id: RepoId,
    sha: str,
    previous_sha: str | None,
    old: ModelSide | None,
    new: ModelSide | None,
    changes: Sequence[Change],
    plans: PlanCache | None = None,
) -> list[Alert]:
    """The alerts ``spec`` asks for on the revision ``sha`` (fit first, then changes)."""
    alerts: list[Alert] = []
    plans = PlanCache() if plans is None else plans
    if spec.fit and spec.engine is not None and old is not None and new is not None:
        started = engine_flips(spec, old, new, plans)
        if started:
            summary = engine_summary(started, repo_id, sha)
            extra_engine: dict[str, JsonValue] = {"fit": [flip.to_json() for flip in started]}
            alerts.append(_alert(spec, "fit", repo_id, sha, previous_sha, summary, extra_engine))
    elif spec.fit and old is not None and new is not None:
        flips = fit_flips(spec, old, new, plans)
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


def fit_flips(
    spec: SubscriptionSpec, old_side: ModelSide, new_side: ModelSide, plans: PlanCache
) -> list[FitFlip]:
    """Every card of ``spec`` whose fits verdict differs between the two sides.

    A config the estimator refuses (or one stating no context length for a
    "max" sequence length) gives no verdict to compare, so no flips; an
    unchanged config.json (the same content key) cannot flip a verdict, so
    it is not estimated at all.
    """
    if old_side.key == new_side.key:
        return []
    try:
        old = _fit_states(spec, old_side, plans)
        new = _fit_states(spec, new_side, plans)
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
    outcome: RevisionOutcome[Plan],
    *,
    advisory_id: str | None,
    links: AlertLinks,
    now: datetime,
) -> list[Delivery]:
    """Queue the alerts of every matching subscription for ``outcome``, in its transaction.

    The repo's first recorded revision has nothing to compare against, and
    the revision that uploads the model (the first with a config.json, after
    the Hub's empty initial commit) is its baseline, as for advisories:
    everything in it is new and nobody ran the model before, so neither
    alerts anyone. A stored subscription that no longer parses is skipped
    with a warning: it must not abort the revision's commit.
    """
    previous = outcome.previous
    if previous is None:
        return []
    revision = outcome.revision
    repo_id, sha = revision.repo_id, revision.sha
    matching = _matching_subscriptions(session, repo_id)
    if not matching:  # the common case: read nothing more inside the revision's transaction
        return []
    if CONFIG in outcome.snapshot.texts and CONFIG not in previous.texts:
        return []
    plans = PlanCache()
    new_side = old_side = None
    if any(spec.fit for _, spec in matching):
        new_side = model_side(outcome.snapshot, outcome.configs, outcome.plan)
        old_side = model_side(previous, outcome.previous_configs, outcome.previous_plan)
    queued: list[Delivery] = []
    for record, spec in matching:
        alerts = evaluate(
            spec, repo_id, sha, previous.revision.sha, old_side, new_side, outcome.changes, plans
        )
        channels = [FEED_CHANNEL] + [channel_key(c.kind, c.url) for c in spec.channels]
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


def alert_publisher(links: AlertLinks, clock: Callable[[], datetime]) -> Publisher:
    """The alert queuer as an entry of the daemon's publisher table: it links the advisory
    the entries before it wrote and adds the outbox rows it queued."""

    def queue_alerts(
        session: Session, outcome: RevisionOutcome[Plan], publication: Publication
    ) -> Publication:
        queued = enqueue_alerts(
            session, outcome, advisory_id=publication.advisory_id, links=links, now=clock()
        )
        return replace(publication, deliveries=(*publication.deliveries, *(d.id for d in queued)))

    return queue_alerts


def model_side(
    snapshot: Snapshot,
    configs: Mapping[str, JsonValue],
    plan: Plan | None,
) -> ModelSide | None:
    """A revision's side of the transition from its outcome; None without a parsed config.json."""
    key = snapshot.texts.get(CONFIG)
    config = configs.get(CONFIG)
    if key is None or not isinstance(config, Mapping):
        return None
    return ModelSide(key, config, stated_context(plan))


def _matching_subscriptions(
    session: Session, repo_id: RepoId
) -> list[tuple[Subscription, SubscriptionSpec]]:
    """Active subscriptions naming ``repo_id``, parsed; one whose stored spec no longer
    parses is skipped with a warning. Storage reads only those whose patterns name the
    repo, so no other subscription is read or parsed inside the revision's transaction."""
    matching = []
    for record in subscriptions_naming(session, repo_id):
        try:
            spec = SubscriptionSpec.from_record(record)
        except SubscriptionError as exc:
            log.warning(
                json.dumps(
                    {"event": "subscription_skipped", "name": record.name, "error": str(exc)}
                )
            )
            continue
        matching.append((record, spec))
    return matching


def _fit_states(
    spec: SubscriptionSpec, side: ModelSide, plans: PlanCache
) -> dict[str, tuple[int, FitState]]:
    """Per card: the sequence length used and what the estimator said."""
    states: dict[str, tuple[int, FitState]] = {}
    for card in spec.cards:
        workload = spec.workload_on(
            card, side.context if spec.follow_context else None, side.model_type
        )
        plan = plans.plan(side, workload)
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


def _alert(
    spec: SubscriptionSpec,
    kind: AlertKind,
    repo_id: RepoId,
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
    "alert_publisher",
    "enqueue_alerts",
    "evaluate",
    "fit_flips",
    "model_side",
    "watched_changes",
]
