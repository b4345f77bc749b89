"""What `plan ORG/NAME` costs against the Hub emulator: requests, bytes and seconds per plan.

Run: python -m tests.bench.bench_hub_plan. For ten corpus repos it plans the
head of main through the CLI (a cold HF cache), counts the emulator's
requests for that repo and the body bytes they carried, then plans the same
sha again (warm cache) and the same files laid out on disk, and prints
whether the Hub plan equals the disk plan. The library's once-a-day agent
registry fetch (``/api/agent-harnesses``) is not a request of ours and is
left out of the counts.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import huggingface_hub.constants

from tests.tracker.test_plan_from_hub import (
    LIBRARY_TELEMETRY,
    REPOS,
    write_files_as_on_disk,
)
from tracker.cli import main
from tracker.hubsim import HubEmulator, estimator_tensor_shapes

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "hub-corpus"


def plan(*argv: str) -> tuple[dict[str, Any], float]:
    out = io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(out):
        code = main(["plan", *argv, "--json"])
    elapsed = time.perf_counter() - start
    if code != 0:
        raise SystemExit(f"plan {' '.join(argv)} exited {code}")
    document: dict[str, Any] = json.loads(out.getvalue())
    return document, elapsed


def main_bench() -> None:
    corpus = Path(sys.argv[1]) if len(sys.argv) > 1 else CORPUS
    work = Path(tempfile.mkdtemp(prefix="bench-hub-plan-"))
    emulator = HubEmulator(corpus, tensor_shapes=estimator_tensor_shapes)
    emulator.start("127.0.0.1", 0)
    os.environ.update(HF_ENDPOINT=emulator.endpoint, NEURARCH_DATA_DIR=str(work / "data"))
    huggingface_hub.constants.HF_HUB_CACHE = str(work / "hf-cache")
    rows = []
    try:
        for repo_id in REPOS:
            emulator.stats.reset()
            cold, cold_s = plan(repo_id)
            made = [r for r in emulator.stats.records() if r.path != LIBRARY_TELEMETRY]
            sha = cold.pop("source")["revision"]
            emulator.stats.reset()
            _, warm_s = plan(f"{repo_id}@{sha}")
            warm = [r for r in emulator.stats.records() if r.path != LIBRARY_TELEMETRY]
            on_disk = work / repo_id.replace("/", "--")
            write_files_as_on_disk(emulator.endpoint, repo_id, sha, on_disk)
            disk, _ = plan(str(on_disk))
            rows.append(
                (
                    repo_id,
                    len(made),
                    sum(r.bytes_sent for r in made),
                    cold_s,
                    len(warm),
                    warm_s,
                    disk == cold,
                )
            )
    finally:
        emulator.stop()
    print(
        f"{'repo':36} {'requests':>8} {'bytes':>8} {'cold s':>7} {'warm req':>8} {'warm s':>7} equal"
    )
    for repo_id, count, sent, cold_s, warm_count, warm_s, equal in rows:
        print(
            f"{repo_id:36} {count:8d} {sent:8,d} {cold_s:7.3f} {warm_count:8d} {warm_s:7.3f} {equal}"
        )
    print(
        f"max requests {max(r[1] for r in rows)}, max bytes {max(r[2] for r in rows):,}, "
        f"median cold {statistics.median(r[3] for r in rows):.3f} s, "
        f"median warm {statistics.median(r[5] for r in rows):.3f} s, "
        f"equal to disk {sum(r[6] for r in rows)}/{len(rows)}"
    )


if __name__ == "__main__":
    main_bench()
