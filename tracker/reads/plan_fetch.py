"""Where a Hub revision's plan inputs come from: the local database first, then the Hub.

A revision named by its full sha that the database already recorded needs no
request at all; anything else (a branch, a tag, a short sha, a revision the
database never saw) is read from the Hub by ``HubPlanSource``.
"""

from __future__ import annotations

from tracker.hub.client import Hub
from tracker.hub.plan_source import FULL_SHA, HubPlanSource, HubRef, PlanInputs, recorded_inputs
from tracker.hub.retry import INTERACTIVE, Retrying
from tracker.reads.local_database import existing_database
from tracker.settings import Settings


def fetch_inputs(
    ref: HubRef, settings: Settings, source: HubPlanSource | None = None
) -> PlanInputs:
    """The config and manifest at ``ref``: recorded ones when the database has them."""
    if FULL_SHA.fullmatch((ref.revision or "").lower()):
        with existing_database(settings.storage.database_url) as database:
            recorded = recorded_inputs(database, ref) if database is not None else None
        if recorded is not None:
            return recorded
    hub = source or HubPlanSource(Hub.from_settings(settings.hub, Retrying(INTERACTIVE)))
    return hub.fetch(ref)


__all__ = ["fetch_inputs"]
