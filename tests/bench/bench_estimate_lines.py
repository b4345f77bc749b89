"""How many estimate lines the whole corpus's history carries, and how many state no workload.

Backfills every recorded corpus repo through the Hub emulator into a fresh
SQLite file (the daemon's own path) and counts the stored estimate changes:
all of them, per kind and per repo, and those that give a memory or batch
figure without the workload it is at (parameter counts need none).

    .venv/bin/python tests/bench/bench_estimate_lines.py ../shared/hub-corpus /tmp/lines.db
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from pathlib import Path

from storage import changes_of, open_database, revision_log, tracked_repos
from tests.storage.builders import recorded_at
from tracker.hub.api import connect
from tracker.hub.client import Hub
from tracker.hubsim.emulator import HubEmulator
from tracker.revision.backfill import backfill
from tracker.settings import HubSettings


def main(corpus: Path, db_path: Path) -> None:
    database = open_database(f"sqlite:///{db_path}")
    database.migrate()
    started = time.perf_counter()
    with HubEmulator(corpus) as emulator:
        emulator.start()
        hub = Hub(connect(HubSettings(emulator.endpoint)), max_retries=0)
        for repo_id in emulator.repo_ids():
            backfill(database, hub, repo_id, clock=recorded_at)
    per_repo: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    unstated = 0
    with database.read_session() as session:
        for repo in tracked_repos(session):
            for stored in revision_log(session, repo.repo_id):
                for c in changes_of(session, repo.repo_id, stored.revision.sha):
                    if c.artifact != "estimate" or c.kind == "estimate_failed":
                        continue
                    per_repo[repo.repo_id] += 1
                    kinds[c.kind] += 1
                    if c.kind != "parameters_changed" and " at batch " not in c.message:
                        unstated += 1
    print(f"backfilled in {time.perf_counter() - started:.0f} s")
    print(f"estimate lines {sum(kinds.values())}, at an unstated workload {unstated}")
    print(dict(kinds))
    for repo_id, count in per_repo.most_common():
        print(f"{count:5d} {repo_id}")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
