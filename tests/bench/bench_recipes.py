"""Score every training recipe against the published measurements it can map.

Run: ``python tests/bench/bench_recipes.py [--json]``. Each row of
../shared/measured/measured-memory.csv is read as bench_estimator reads it
(config, settings, metric); the row is then assigned the recipe it was run
with (its source and method text name the library: peft's MetaMathQA
harness and README, fms-acceleration's HF Trainer + peft runs, LLaMA-Factory
and Unsloth's comparisons, transformers' own docs). The recipe's defaults
fill what the row does not state; what it states wins, as on the command
line. Printed per recipe: rows with a figure, median and p90 absolute error,
the fits verdict right, QLoRA rows within 10%; recipes no published row maps
to are listed with 0 rows. Nothing is written.
"""

from __future__ import annotations

import csv
import json
import statistics
import sys
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_estimator as base

from estimator import EstimateError, Workload
from estimator.recipes import RECIPE_NAMES, recipe

# Fields a row states (bench_estimator reads them from its columns); every
# other Workload field comes from the recipe.
STATED = frozenset(
    {
        "method",
        "batch",
        "seq_len",
        "target_len",
        "precision",
        "pure_16bit",
        "optimizer",
        "attention",
        "adamw_impl",
        "lora_rank",
        "lora_targets",
        "lora_dropout",
        "double_quant",
        "qlora_format",
        "zero_grad_set_to_none",
        "cache_in_training",
        "loop_keeps_outputs",
        "kbit_prepare",
        "kbit_head_16bit",
        "loss_shift_copy",
        "loss_upcast",
        "card",
        "gpus",
        "parallelism",
        "zero_stage",
        "offload_params",
        "offload_optimizer",
        "empty_cache_each_step",
        "reentrant_checkpointing",
        "zero_auto_buckets",
        "grad_checkpointing",
    }
)
QLORA_GOAL = 10.0
P90_GOAL = 15.0


def recipe_of(r: dict[str, str]) -> str:
    """The library the row's run used, from its source and method text."""
    source, method = r["source"], r["method"]
    if "Unsloth" in method:
        return "unsloth"
    if r["method"].lower().startswith("full") and "peft" not in source:
        return "hf-trainer"
    if "perf_train_gpu_one" in source or "model_memory_anatomy" in source:
        return "hf-trainer"
    return "peft"


def stated(name: str, row_workload: Workload, r: dict[str, str]) -> dict[str, object]:
    """The fields the row states. An unstated checkpointing column ("?") and a LoRA
    dropout its source does not give are left to the recipe when the recipe sets them
    (else bench_estimator's reading stays)."""
    out = {f.name: getattr(row_workload, f.name) for f in fields(Workload) if f.name in STATED}
    defaults = dict(recipe(name).defaults)
    if r["grad_checkpointing"].startswith("?") and "grad_checkpointing" in defaults:
        out.pop("grad_checkpointing")
    dropout_given = any(key in r["source"] for key in base.LORA_DROPOUT_BY_SOURCE)
    if not dropout_given and "lora_dropout" in defaults:
        out.pop("lora_dropout")
    if "LLaMA-Factory default" in r["grad_checkpointing"]:
        # LLaMA-Factory checkpoints with torch's own function unless use_unsloth_gc is set
        # (src/llamafactory/hparams/model_args.py: use_unsloth_gc default False).
        out["offload_activations"] = False
    return out


def with_recipe(name: str, row_workload: Workload, r: dict[str, str]) -> Workload:
    values: dict[str, Any] = dict(recipe(name).defaults)
    values.update(stated(name, row_workload, r))
    values["recipe"] = name
    return Workload(**values)


def score(as_json: bool = False) -> dict[str, dict[str, Any]]:
    configs = base.latest_configs()
    with base.MEASURED.open(newline="") as handle:
        raw = list(csv.DictReader(handle))
    per: dict[str, dict[str, list[Any]]] = {
        n: {"errors": [], "verdicts": [], "qlora": [], "rows": []} for n in RECIPE_NAMES
    }
    for i, r in enumerate(raw):
        row = base.to_row(i, r, configs)
        if isinstance(row, str) and "unsloth" in r["grad_checkpointing"].lower():
            # bench_estimator skips Unsloth's offloaded checkpointing and fused loss;
            # the unsloth recipe models both, so the row is read as checkpointed.
            row = base.to_row(i, {**r, "grad_checkpointing": "yes"}, configs)
        if isinstance(row, str):
            continue
        name = recipe_of(r)
        row = replace(row, workload=with_recipe(name, row.workload, r))
        try:
            value, fits = base.estimate(row)
        except EstimateError:
            continue
        bucket = per[name]
        bucket["verdicts"].append(fits == row.fits)
        err = None
        if row.measured:
            err = 100 * (value - row.measured) / row.measured
            bucket["errors"].append(abs(err))
            if row.workload.method == "qlora":
                bucket["qlora"].append(abs(err))
        bucket["rows"].append((i + 2, row.model, row.workload.method, value, row.measured, err))
    summary: dict[str, dict[str, Any]] = {}
    for name, b in per.items():
        errs = sorted(b["errors"])
        summary[name] = {
            "version": recipe(name).version,
            "rows_with_figure": len(errs),
            "rows_with_verdict": len(b["verdicts"]),
            "median_abs_error_pct": round(statistics.median(errs), 1) if errs else None,
            "p90_abs_error_pct": round(errs[min(len(errs) - 1, int(0.9 * len(errs)))], 1)
            if errs
            else None,
            "verdict_accuracy_pct": round(100 * sum(b["verdicts"]) / len(b["verdicts"]), 1)
            if b["verdicts"]
            else None,
            "qlora_rows": len(b["qlora"]),
            "qlora_within_10pct": sum(1 for e in b["qlora"] if e <= QLORA_GOAL),
        }
    if as_json:
        print(json.dumps(summary, indent=2))
        return summary
    for name, b in per.items():
        for line, model, method, value, measured, err in b["rows"]:
            shown = "-" if measured is None else f"{measured / base.GB:7.2f}"
            e = "" if err is None else f"{err:+6.1f}%"
            print(
                f"{name:10} csv:{line:<4} {model[:34]:34} {method:5} {value / base.GB:7.2f} {shown:>7} {e}"
            )
    print(
        f"\n{'recipe':10} {'version':22} {'rows':>4} {'median':>7} {'p90':>6} {'verdicts':>8} {'QLoRA<=10%':>10}"
    )
    for name, s in summary.items():
        med = "-" if s["median_abs_error_pct"] is None else f"{s['median_abs_error_pct']:.1f}%"
        p90 = "-" if s["p90_abs_error_pct"] is None else f"{s['p90_abs_error_pct']:.1f}%"
        ver = "-" if s["verdict_accuracy_pct"] is None else f"{s['verdict_accuracy_pct']:.1f}%"
        q = f"{s['qlora_within_10pct']}/{s['qlora_rows']}"
        print(
            f"{name:10} {s['version'][:22]:22} {s['rows_with_figure']:4} {med:>7} {p90:>6} {ver:>8} {q:>10}"
        )
    print(f"\ngoals: p90 <= {P90_GOAL:.0f}%, QLoRA rows within {QLORA_GOAL:.0f}%")
    return summary


if __name__ == "__main__":
    score(as_json="--json" in sys.argv)
