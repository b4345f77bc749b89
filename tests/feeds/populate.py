"""Fill a database the way the daemon does: Hub emulator -> tracker backfill -> advisories.

The revisions, changes and plans come from the real tracker and estimator
run over the demo histories (or the recorded corpus) through the real
huggingface_hub client; advisories are built with ``feeds.build_advisory``
from what was stored, exactly as the daemon's publisher does.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from estimator.deltas import stored_plan
from feeds import EstimateDelta, build_advisory
from storage import Database, changes_of, plan_at, put_advisory, revision_log, tracked_repos
from storage.records import Advisory
from tests.storage.builders import recorded_at
from tracker.demo import HISTORIES
from tracker.hub.api import connect
from tracker.hub.client import Hub
from tracker.hubsim.emulator import HubEmulator
from tracker.revision.backfill import backfill
from tracker.settings import HubSettings

HOSTILE = "<script>alert(1)</script>"
HOSTILE_REPO = "neurarch-demo/llama2-7b"
Script = Callable[[HubEmulator], None]


def hostile_commit(emulator: HubEmulator) -> None:
    """A commit whose title and config carry markup: it must render as inert text."""
    config = json.loads(emulator.tree(HOSTILE_REPO)["config.json"].text() or b"{}")
    config["max_position_embeddings"] = 8192
    config["rope_scaling"] = {"type": HOSTILE, "factor": 2.0}
    emulator.publish(
        HOSTILE_REPO,
        {"config.json": json.dumps(config, indent=2).encode()},
        title=f"{HOSTILE} extend context",
    )


def build_all(database: Database) -> list[Advisory]:
    """Every advisory the stored history yields, oldest transition first per repo."""
    built = []
    with database.read_session() as session:
        for repo in tracked_repos(session):
            previous = None
            for stored in reversed(revision_log(session, repo.repo_id)):
                sha = stored.revision.sha
                delta = EstimateDelta.between(
                    stored_plan(plan_at(session, repo.repo_id, previous.revision.sha))
                    if previous
                    else None,
                    stored_plan(plan_at(session, repo.repo_id, sha)),
                )
                changes = changes_of(session, repo.repo_id, sha)
                advisory = build_advisory(repo.repo_id, previous, stored, changes, delta)
                if advisory is not None:
                    built.append(advisory)
                previous = stored
    return built


def populate(
    database: Database, corpus: Path = HISTORIES, script: Script | None = None
) -> list[Advisory]:
    """Backfill every repo of ``corpus`` (after ``script`` ran on the emulator), then publish."""
    with HubEmulator(corpus) as emulator:
        emulator.start()
        if script is not None:
            script(emulator)
        hub = Hub(connect(HubSettings(emulator.endpoint)), max_retries=0)
        for repo_id in emulator.repo_ids():
            backfill(database, hub, repo_id, clock=recorded_at)
    advisories = build_all(database)
    with database.session() as session:
        for advisory in advisories:
            put_advisory(session, advisory)
    return advisories
