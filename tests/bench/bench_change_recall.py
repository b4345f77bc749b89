"""Key-level recall of the recorded changes over every revision pair of the corpus.

Run: ``.venv/bin/python tests/bench/bench_change_recall.py [--db PATH] [--missed N]``.

The corpus is backfilled through the Hub emulator into SQLite (``--db`` keeps the file
for later runs). Then, for every revision on main and its parent, every JSON file whose
content differs is walked key by key by the oracle in ``tests/fixtures/json_oracle.py``
(a plain walk of both documents, independent of the differs) and each changed key is
looked for in the changes recorded for that revision: *named* (a change names the key or
its parent key, or maps it: a token, a tensor of a weight map) and *exact* (the change's
values, followed down to the key, are the key's old and new values). Printed per kind:
keys, named %, exact %, keys not exact, and up to ``--missed`` keys that were not exact. Uploads (a
repo's first revision, against the Hub's "initial commit") are counted on their own
line, and weight changes recorded on commits that committed no weight index (which
would be the emulator's inventions) are counted, and the advisories the backfill's
changes make are measured (OSV bytes, change lines), so more recorded keys can be seen
not to bloat what a reader receives. A file that does not parse on either side is a parse transition, recalled when a
``parse_error`` (or, for a fix, ``parse_fixed``) change names the file. Goal: 100% of keys named, values exact.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT))

from storage import Database, open_database  # noqa: E402
from tests.fixtures.change_recall import (  # noqa: E402
    Recall,
    Tally,
    advisory_sizes,
    invented_weight_changes,
    measure,
    total,
)
from tests.storage.builders import recorded_at  # noqa: E402
from tracker.hubsim import HubEmulator  # noqa: E402

CORPUS = REPO_ROOT.parent / "shared" / "hub-corpus"


def backfill_corpus(path: Path, emulator: HubEmulator) -> Database:
    from tracker.hub.api import connect
    from tracker.hub.client import Hub
    from tracker.revision.backfill import backfill
    from tracker.settings import HubSettings

    database = open_database(f"sqlite:///{path}")
    database.migrate()
    url = emulator.start()
    for repo in emulator.repo_ids():
        backfill(database, Hub(connect(HubSettings(url)), max_retries=0), repo, clock=recorded_at)
    emulator.stop()
    return database


def _cells(tally: Tally) -> str:
    if not tally.keys:
        return f"{'-':>6} {'-':>9} {'-':>9} {'-':>6}"
    named = _percent(tally.named, tally.keys)
    exact = _percent(tally.exact, tally.keys)
    return f"{tally.keys:>6} {named:>9} {exact:>9} {tally.keys - tally.exact:>6}"


def _percent(part: int, whole: int) -> str:
    """Rounded down, so a single key missed never prints as 100.0%."""
    return f"{math.floor(1000 * part / whole) / 10:.1f}%"


def print_table(recall: Recall, missed: int) -> None:
    print(f"{'':<22} {'files changed in place':^33} | {'files added or removed':^33}")
    header = f"{'keys':>6} {'named':>9} {'exact':>9} {'missed':>6}"
    print(f"{'kind':<22} {header} | {header}")
    kinds = sorted(set(recall.changed) | set(recall.added_or_removed))
    for kind in kinds:
        print(
            f"{kind:<22} {_cells(recall.changed.get(kind, Tally()))} | "
            f"{_cells(recall.added_or_removed.get(kind, Tally()))}"
        )
    print(
        f"{'all updates':<22} {_cells(total(recall.changed.values()))} | "
        f"{_cells(total(recall.added_or_removed.values()))}"
    )
    print(f"{'uploads':<22} {_cells(recall.uploads)}")
    print(
        f"parse transitions: {recall.parse_transitions}, "
        f"recorded (parse_error or parse_fixed): {recall.parse_errors_recorded}"
    )
    for name, table in (("changed", recall.changed), ("added/removed", recall.added_or_removed)):
        for kind, tally in sorted(table.items()):
            for line in tally.missed[:missed]:
                print(f"  missed [{kind}, {name}] {line}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, help="SQLite file to reuse (built if missing)")
    parser.add_argument("--missed", type=int, default=3, help="keys not exact shown per kind")
    args = parser.parse_args()
    emulator = HubEmulator(CORPUS)
    with tempfile.TemporaryDirectory() as tmp:
        path = args.db or Path(tmp) / "corpus.db"
        if path.exists():
            database = open_database(f"sqlite:///{path}")
        else:
            from tracker.hubsim import estimator_tensor_shapes

            database = backfill_corpus(
                path, HubEmulator(CORPUS, tensor_shapes=estimator_tensor_shapes)
            )
        recall = measure(database, emulator)
        invented = invented_weight_changes(database, emulator)
        sizes = advisory_sizes(database)
        database.close()
    print_table(recall, args.missed)
    print(f"weight changes on commits that uploaded no weights: {len(invented)} (goal 0)")
    for line in invented[: args.missed]:
        print(f"  {line}")
    print(
        f"advisories: {sizes.advisories}; OSV JSON bytes median {sizes.median_bytes:,.0f}, "
        f"max {sizes.max_bytes:,}; change lines median {sizes.median_lines:.0f}, "
        f"max {sizes.max_lines}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
