"""The GPU measurement script imports, explains itself and writes its CSV without a GPU."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "gpu" / "measure_memory.py"


def test_help_works_without_cuda() -> None:
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--help"],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 0 and "--cpu-dry-run" in result.stdout


def test_cpu_dry_run_writes_one_row_per_method_with_the_columns(tmp_path: Path) -> None:
    out = tmp_path / "dry.csv"
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--cpu-dry-run", "--out", str(out)],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    with out.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [r["method"] for r in rows] == ["full", "lora", "serve"]
    assert {"max_memory_allocated", "max_memory_reserved", "estimate_allocated", "gpu"} <= set(
        rows[0]
    )
    assert all(r["status"] == "cpu-dry-run" and int(r["estimate_allocated"]) > 0 for r in rows)
