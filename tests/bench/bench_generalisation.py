"""Held-in against held-out: does a mechanism help rows it was not written for?

Run: ``python tests/bench/bench_generalisation.py``. Reads the same rows as
bench_estimator.py and groups them by source (the repository or site that
published them). Held-in: each row with everything bench_estimator.py knows
about its source (the per-source settings its mechanisms were written
against). Held-out, leave-one-source-out: each row with none of that
source-keyed knowledge, only its CSV columns (what a user states: method,
batch, sequence, precision, GPUs, LoRA rank and targets) and, with stacks
(estimator/stacks), the library versions its source publishes
(``SOURCE_STACKS``), from which the versioned mechanisms follow. A run
against code without stacks prints held-out at the CLI's defaults only.
"""

from __future__ import annotations

import csv
import statistics
import sys
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_estimator as bench

from estimator import EstimateError, Workload

try:
    from estimator.stacks import parse_stack, stack_fields
except ImportError:  # the code before stacks: held-out at defaults only
    parse_stack = None  # type: ignore[assignment]
    stack_fields = None  # type: ignore[assignment]

# Workload fields bench_estimator.py sets from what it knows of a row's source (its
# library versions, its training script), not from the row's own columns.
SOURCE_KEYED = (
    "zero_grad_set_to_none",
    "adamw_impl",
    "attention",
    "reentrant_checkpointing",
    "loss_shift_copy",
    "loss_upcast",
    "cache_in_training",
    "loop_keeps_outputs",
    "kbit_prepare",
    "kbit_head_16bit",
    "empty_cache_each_step",
    "zero_auto_buckets",
    "fsdp_frozen_reshard",
    "load_dtype_auto",
)
# The versions each source publishes with its figures.
SOURCE_STACKS = {
    # scripts/benchmarks/refs/requirements.txt beside a100_80gb.csv: transformers 4.48.1 (torch 2.x)
    "fms-acceleration": "torch==2.4 transformers==4.48.1",
    # run_info.meta_info.package_info of each results JSON
    "method_comparison/MetaMathQA": "torch==2.7.1 transformers==4.52.4 peft==0.15.2",
    # the docs' runs: torch 2.2.1, transformers 4.39 (examples/sft/requirements.txt)
    "docs/source/accelerate": "torch==2.2.1 transformers==4.39 peft==0.10",
    # peft's README table, January 2023: torch 1.13, transformers 4.26
    "huggingface/peft:README": "torch==1.13 transformers==4.26 peft==0.1",
    # transformers' 2022 memory docs (the Korean page translates them): torch 1.x
    "huggingface/transformers:docs": "torch==1.13 transformers==4.26",
}


def source_group(source: str) -> str:
    if source.startswith("http"):
        parts = source.split("/")
        return "/".join(parts[2:5])
    return source.split(":", 1)[0]


def stack_of(source: str) -> str:
    return next((s for key, s in SOURCE_STACKS.items() if key in source), "")


def held_out(w: Workload, source: str, model_type: str, with_stack: bool) -> Workload:
    """The row as a user at the CLI's defaults would state it, plus its stack."""
    defaults = Workload()
    values: dict[str, Any] = {name: getattr(defaults, name) for name in SOURCE_KEYED}
    if with_stack and parse_stack is not None and stack_fields is not None:
        values.update(stack_fields(parse_stack(stack_of(source)), model_type))
    return replace(w, **{k: v for k, v in values.items() if k in {f.name for f in fields(w)}})


def scores(results: list[tuple[float | None, bool]]) -> str:
    errors = sorted(abs(e) for e, _ in results if e is not None)
    if not errors:
        return f"{'-':>7} {'-':>7} {'-':>9}"
    right = sum(ok for _, ok in results) / len(results)
    p90 = errors[min(len(errors) - 1, int(0.9 * len(errors)))]
    return f"{statistics.median(errors):6.1f}% {p90:6.1f}% {100 * right:8.1f}%"


def main() -> None:
    configs = bench.latest_configs()
    with bench.MEASURED.open(newline="") as handle:
        raw = list(csv.DictReader(handle))
    kinds = ("held-in", "held-out defaults") + (("held-out stack",) if parse_stack else ())
    by_group: dict[str, dict[str, list[tuple[float | None, bool]]]] = {}
    same = scored = 0
    for i, r in enumerate(raw):
        row = bench.to_row(i, r, configs)
        if isinstance(row, str):
            continue
        model_type = str(row.config.get("model_type"))
        group = by_group.setdefault(source_group(r["source"]), {k: [] for k in kinds})
        for kind in kinds:
            w = row.workload
            if kind != "held-in":
                w = held_out(w, r["source"], model_type, kind == "held-out stack")
            try:
                value, fits = bench.estimate(replace(row, workload=w))
            except EstimateError:
                continue
            err = None if not row.measured else 100 * (value - row.measured) / row.measured
            group[kind].append((err, fits == row.fits))
        if "held-out stack" in group and row.measured:
            scored += 1
            inside, outside = group["held-in"][-1][0], group["held-out stack"][-1][0]
            same += inside is not None and outside is not None and abs(inside - outside) < 0.05
    print(f"{'source':44} {'rows':>4} {'kind':18} {'median':>7} {'p90':>7} {'verdicts':>9}")
    total: dict[str, list[tuple[float | None, bool]]] = {k: [] for k in kinds}
    for name, results in sorted(by_group.items(), key=lambda kv: -len(kv[1]["held-in"])):
        for kind in kinds:
            total[kind] += results[kind]
            print(f"{name[:44]:44} {len(results[kind]):>4} {kind:18} {scores(results[kind])}")
    print()
    for kind in kinds:
        print(f"{'all sources':44} {len(total[kind]):>4} {kind:18} {scores(total[kind])}")
    if scored:
        print(
            f"held out with its stack, a row scores as held in (within 0.05 points): "
            f"{same} of {scored} rows with a figure; the rest differ by script settings that "
            "no version implies (kbit_prepare, loops, launch) or come from sources that publish "
            "no versions"
        )


if __name__ == "__main__":
    main()
