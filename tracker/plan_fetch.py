"""Where a Hub revision's plan inputs come from: the local database first, then the Hub.

A revision named by its full sha that the database already recorded needs no
request at all; anything else (a branch, a tag, a short sha, a revision the
database never saw) is read from the Hub by ``HubPlanSource``. The database
is only consulted when it exists: planning never creates or migrates one, and
a database that cannot be read is passed over for the Hub, not an error.
"""

from __future__ import annotations

from pathlib import Path

from storage import StorageError, open_database
from tracker.hub_source import FULL_SHA, HubPlanSource, HubRef, PlanInputs, recorded_inputs
from tracker.settings import Settings

SQLITE_PREFIX = "sqlite:///"


def fetch_inputs(
    ref: HubRef, settings: Settings, source: HubPlanSource | None = None
) -> PlanInputs:
    """The config and manifest at ``ref``: recorded ones when the database has them."""
    recorded = _from_database(ref, settings.storage.database_url)
    if recorded is not None:
        return recorded
    hub = source or HubPlanSource(settings.hub.endpoint, settings.hub.token)
    return hub.fetch(ref)


def _from_database(ref: HubRef, url: str) -> PlanInputs | None:
    if not FULL_SHA.fullmatch((ref.revision or "").lower()):
        return None
    if url.startswith(SQLITE_PREFIX) and not Path(url.removeprefix(SQLITE_PREFIX)).is_file():
        return None
    try:
        database = open_database(url)
    except StorageError:
        return None
    try:
        database.check_schema()
        return recorded_inputs(database, ref)
    except StorageError:
        return None
    finally:
        database.close()


__all__ = ["fetch_inputs"]
