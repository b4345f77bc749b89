"""Requests and bytes per revision: the tracker's backfill against a naive snapshotter.

Run: ``.venv/bin/python tests/bench/bench_snapshot.py`` (about a minute).

Both run in one process against the same Hub emulator serving the recorded
corpus, through the real huggingface_hub client. The naive approach
downloads every tracked file (every path the artifact table reads, plus
every safetensors header) at every revision of main; the tracker fetches a
text file only when its content key is new and a header only when its shard
changed. The emulator counts what it served. Goals: no unchanged file
fetched twice, no weight body fetched (the exit status checks both), >= 10x
fewer bytes than naive (printed against both baselines: text files and
headers only, and with the weight bodies a per-revision download would pull).
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from urllib.parse import unquote

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT))

from storage import Database, open_database, snapshot_at  # noqa: E402
from tests.storage.builders import recorded_at  # noqa: E402
from tracker.diff.files import WEIGHT_SUFFIXES, is_unsafe_path, suffix  # noqa: E402
from tracker.diff.registry import artifact_for  # noqa: E402
from tracker.errors import ArtifactError  # noqa: E402
from tracker.hub.api import connect  # noqa: E402
from tracker.hub.client import Hub  # noqa: E402
from tracker.hubsim import HubEmulator, estimator_tensor_shapes  # noqa: E402
from tracker.hubsim.stats import RequestRecord  # noqa: E402
from tracker.revision.backfill import backfill  # noqa: E402
from tracker.settings import HubSettings  # noqa: E402

CORPUS = REPO_ROOT.parent / "shared" / "hub-corpus"
NAIVE_LIMIT = 64 * 1024 * 1024


def naive(hub: Hub, repos: list[str]) -> tuple[int, int]:
    """Download every tracked text file and header at every revision.

    Returns the revisions walked and the bytes the weight bodies would add
    (summed from the Hub's listed sizes: transferring them is what a naive
    ``snapshot_download`` per revision does, and what no test can afford).
    """
    walked = weight_bytes = 0
    for repo in repos:
        for revision in hub.commits(repo):
            walked += 1
            for entry in hub.files(repo, revision.sha).files:
                if is_unsafe_path(entry.path):
                    continue
                if suffix(entry.path) in WEIGHT_SUFFIXES and entry.size < 2**63:
                    weight_bytes += entry.size
                try:
                    if suffix(entry.path) == ".safetensors":
                        hub.safetensors_header(repo, revision.sha, entry)
                    elif artifact_for(entry.path) is not None:
                        hub.read_text(repo, revision.sha, entry, NAIVE_LIMIT)
                except ArtifactError:
                    continue
    return walked, weight_bytes


def resolve_parts(path: str) -> tuple[str, str, str] | None:
    """(repo, revision, file) of a /{org}/{name}/resolve/{rev}/{file} request path."""
    parts = path.lstrip("/").split("/", 4)
    if len(parts) < 5 or parts[2] != "resolve":
        return None
    return f"{parts[0]}/{parts[1]}", unquote(parts[3]), unquote(parts[4])


def main() -> int:
    emulator = HubEmulator(CORPUS, tensor_shapes=estimator_tensor_shapes)
    url = emulator.start()
    hub = Hub(connect(HubSettings(url)), max_retries=0)
    repos = sorted(emulator.repo_ids())
    with tempfile.TemporaryDirectory() as tmp:
        database = open_database(f"sqlite:///{tmp}/bench.db")
        database.migrate()
        started = time.monotonic()
        revisions = sum(backfill(database, hub, repo, clock=recorded_at).recorded for repo in repos)
        seconds = time.monotonic() - started
        records = emulator.stats.records()
        ours_requests, ours_bytes = len(records), sum(r.bytes_sent for r in records)
        twice, body = fetch_checks(database, records)
        emulator.stats.reset()
        walked, weight_bytes = naive(hub, repos)
        naive_records = emulator.stats.records()
        naive_requests = len(naive_records)
        naive_bytes = sum(r.bytes_sent for r in naive_records)
    emulator.stop()
    print(f"repos {len(repos)}, revisions {revisions} (naive walked {walked})")
    print(
        f"tracker: {ours_requests} requests, {ours_bytes:,} bytes; "
        f"{ours_requests / revisions:.1f} requests and {ours_bytes / revisions:,.0f} bytes per revision"
    )
    print(
        f"naive:   {naive_requests} requests, {naive_bytes:,} bytes; "
        f"{naive_requests / walked:.1f} requests and {naive_bytes / walked:,.0f} bytes per revision"
    )
    print(
        f"bytes ratio naive/tracker: {naive_bytes / max(ours_bytes, 1):.1f}x "
        f"(goal >= 10x); requests ratio {naive_requests / max(ours_requests, 1):.1f}x"
    )
    with_weights = naive_bytes + weight_bytes
    print(
        f"naive with weight bodies (listed sizes, not transferred): {with_weights:,} bytes; "
        f"ratio {with_weights / max(ours_bytes, 1):,.0f}x"
    )
    print(
        f"unchanged files fetched twice: {twice} (goal 0); weight bodies fetched: {body} (goal 0)"
    )
    print(f"backfill speed: {revisions / seconds:.1f} revisions/s ({seconds:.1f}s)")
    return 0 if twice == 0 and body == 0 else 1


def fetch_checks(database: Database, records: list[RequestRecord]) -> tuple[int, int]:
    """(content keys downloaded more than once, safetensors reads that went past the header)."""
    full_gets: Counter[tuple[str, str]] = Counter()
    header_bytes: Counter[tuple[str, str, str]] = Counter()
    body = 0
    with database.read_session() as session:
        for record in records:
            parts = resolve_parts(record.path)
            if parts is None or record.method != "GET":
                continue
            repo, sha, path = parts
            entry = next(f for f in snapshot_at(session, repo, sha).files if f.path == path)
            if suffix(path) == ".safetensors":
                header_bytes[parts] += record.bytes_sent
                body += record.range is None
                body += header_bytes[parts] >= entry.size > 0
            elif record.range is None:
                full_gets[(repo, entry.content_key)] += 1
    return sum(1 for n in full_gets.values() if n > 1), body


if __name__ == "__main__":
    sys.exit(main())
