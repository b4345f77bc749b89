"""Score peak-memory estimates against published measurements, and time plan().

Run: ``python tests/bench/bench_estimator.py``. Reads ../shared/measured/
measured-memory.csv (relative to the repository), maps each row's model to
a config (the hub corpus's latest config.json on main, else the public
values in tests/bench/data/public_configs.json), its settings to a
Workload and its metric to the matching figure (max_memory_allocated ->
peak_allocated_bytes, max_memory_reserved -> reserved_bytes, nvidia-smi
and unstated -> device_bytes). Rows reporting only OOM / "at limit" score
the fits verdict only. Then times plan() against accelerate's meta-device
instantiation (init_empty_weights + from_config) on the same configs.
"""

from __future__ import annotations

import csv
import gc
import json
import os
import re
import statistics
import sys
import time
import warnings
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from estimator import EstimateError, Workload, card, plan  # noqa: E402
from estimator.families import describe  # noqa: E402
from estimator.verifier import usable_positions  # noqa: E402

MEASURED = ROOT.parent / "shared" / "measured" / "measured-memory.csv"
CORPUS = ROOT.parent / "shared" / "hub-corpus"
PUBLIC = Path(__file__).with_name("data") / "public_configs.json"
ACCURACY = ROOT / "estimator" / "data" / "accuracy.json"
GB = 1e9
# The same architecture under another repo name.
ALIASES = {
    "meta-llama/Llama-3.2-3B": "meta-llama/Llama-3.2-3B-Instruct",
    "TheBloke/Mistral-7B-v0.1-GPTQ": "mistralai/Mistral-7B-v0.1",
    "TheBloke/Mixtral-8x7B-Instruct-v0.1-GPTQ": "mistralai/Mixtral-8x7B-Instruct-v0.1",
    "TheBloke/Llama-2-70B-GPTQ": "NousResearch/Llama-2-70b-hf",
    "meta-llama/Llama-2-70b-hf": "NousResearch/Llama-2-70b-hf",
}
SEQ_CLS = {"google-bert/bert-base-uncased"}
# GPUs outside the card table: (reported bytes, context). The V100 context is
# the measured "torch.ones on GPU" row of the same document.
EXTRA_GPUS = {"V100": (16_945_512_448, 1_408_000_000)}
SHORT = {
    "q": "q_proj",
    "k": "k_proj",
    "v": "v_proj",
    "o": "o_proj",
    "gate": "gate_proj",
    "up": "up_proj",
    "down": "down_proj",
}
# Hand-written training loops: peft's README table (examples/conditional_generation/
# *_accelerate*.py) and its MetaMathQA harness (method_comparison/MetaMathQA/run.py).
OWN_LOOP_SOURCES = ("huggingface/peft:README", "method_comparison/MetaMathQA")
# Runs published before transformers had SDPA for BERT (2022) and before
# torch 2.0 made foreach AdamW the default: eager attention, per-parameter AdamW.
TORCH1_SOURCES = ("model_memory_anatomy", "perf_train_gpu_one", "huggingface/peft:README")
PRE_SDPA_SOURCES = (
    "model_memory_anatomy",
    "perf_train_gpu_one",
    "huggingface/peft:README",
    "twitter",
    "peft/issues/675",
    "peft/issues/1469",
)
# peft's seq2seq twitter_complaints examples
# (examples/conditional_generation/peft_lora_seq2seq_accelerate_ds_zero3_offload.py) pad the
# labels to ``target_max_length``, the longest tokenised class label ("no complaint": two
# word pieces and </s>), so the decoder runs 3 tokens per sample beside the ~64-token tweet.
TWITTER_LABEL_TOKENS = 3
# Attention projections under their per-head names, for models that fuse Q/K/V
# into one linear: adapting q, k or v adapts the fused projection.
FUSED_ATTENTION = {
    "gpt_bigcode": {
        "q_proj": "c_attn",
        "k_proj": "c_attn",
        "v_proj": "c_attn",
        "o_proj": "attn.c_proj",
    },
}
# LoRA dropout as the source's own configs set it: the MetaMathQA experiments'
# adapter_config.json files and fms-acceleration's reference CSV (column
# lora_dropout) say 0.0; peft's README and accelerate examples use 0.1.
# Sources that do not say get 0.05, a common recipe value.
LORA_DROPOUT_BY_SOURCE = {
    "method_comparison/MetaMathQA": 0.0,
    "fms-acceleration": 0.0,
    "huggingface/peft:README": 0.1,
    "huggingface/peft:docs/source/accelerate": 0.1,
}
UNSTATED_LORA_DROPOUT = 0.05
# Model types whose causal-LM forward called transformers' shared loss function when
# fms-acceleration's refs were measured.
SHARED_LOSS_FAMILIES = frozenset({"llama", "mistral", "mixtral"})
# ... and those whose forward still computed its own loss, without an fp32 upcast
# (transformers models/gpt_bigcode/modeling_gpt_bigcode.py @0057454).
OWN_LOSS_FAMILIES = frozenset({"gpt_bigcode"})
PEFT_DEFAULT = {
    "t5": ("q", "v"),
    "mt5": ("q", "v"),
    "bloom": ("query_key_value",),
    "bert": ("query", "value"),
    "roberta": ("query", "value"),
    "llama": ("q_proj", "v_proj"),
}


@dataclass
class Row:
    index: int
    model: str
    config: dict[str, Any]
    workload: Workload
    metric: str
    measured: float | None
    fits: bool
    card_bytes: int
    context: int
    note: str


def latest_configs() -> dict[str, dict[str, Any]]:
    entries = json.loads((CORPUS / "MANIFEST.json").read_text())
    entries = entries if isinstance(entries, list) else entries.get("files", [])
    best: dict[str, tuple[str, Path]] = {}
    for e in entries:
        if e.get("file") != "config.json" or "refs/pr" in (e.get("notes") or ""):
            continue
        path = CORPUS / e["repo_id"] / (e.get("revision") or "unknown") / "config.json"
        if path.is_file() and (e["repo_id"] not in best or e["date"] > best[e["repo_id"]][0]):
            best[e["repo_id"]] = (e["date"] or "", path)
    out = {}
    for repo, (_, path) in best.items():
        try:
            out[repo] = json.loads(path.read_text())
        except json.JSONDecodeError:
            continue
    public = json.loads(PUBLIC.read_text())
    out.update({k: v for k, v in public.items() if not k.startswith("_")})
    return out


def _int(text: str, default: int) -> int:
    m = re.search(r"\d+", text)
    return int(m.group()) if m else default


def _targets(method: str, model_type: str) -> tuple[str, ...]:
    if "all linear" in method or "all-linear" in method or "LLaMA-Factory" in method:
        return ("all-linear",)
    m = re.search(r"r\d+ ([a-z,]+)", method)
    if m:
        fused = FUSED_ATTENTION.get(model_type, {})
        names = [SHORT.get(n, n) for n in m.group(1).split(",")]
        return tuple(dict.fromkeys(fused.get(n, n) for n in names))
    return PEFT_DEFAULT.get(model_type, ("all-linear",))


def _seq_len(text: str, config: dict[str, Any]) -> int:
    """The row's sequence length, capped where a learned position table ends.

    A longer sample cannot pass such a table (the embedding lookup fails), so
    a run that finished truncated to it: fms-hf-tuning caps max_seq_length
    at the tokenizer's model_max_length.
    """
    asked = 64 if "short" in text else _int(text, 64)
    limit = usable_positions(describe(config), config)
    return asked if limit is None else min(asked, limit)


def _lora_dropout(source: str) -> float:
    return next(
        (p for key, p in LORA_DROPOUT_BY_SOURCE.items() if key in source), UNSTATED_LORA_DROPOUT
    )


def _gpu(text: str) -> tuple[int, int, int]:
    """(gpus, reported bytes, context bytes) of the row's GPU text."""
    gpus = _int(text.split("x")[0], 1) if re.match(r"\d+x", text) else 1
    for key, (total, context) in EXTRA_GPUS.items():
        if key in text:
            return gpus, total, context
    names = [
        ("A100-40GB", "A100 40GB"),
        ("A100", "A100 80GB"),
        ("A800", "A100 80GB"),
        ("H100", "H100 80GB"),
        ("L40S", "L40S"),
        ("RTX", "RTX 4090"),
        ("80GB", "A100 80GB"),
        ("48GB", "L40S"),
        ("24GB", "A10G"),
        ("16GB", "T4"),
    ]
    for key, name in names:
        if key in text:
            c = card(name)
            return gpus, c.usable_bytes, c.context_bytes
    c = card("A100 80GB")
    return gpus, c.usable_bytes, c.context_bytes


def to_row(i: int, r: dict[str, str], configs: dict[str, dict[str, Any]]) -> Row | str:
    method = r["method"]
    if method in ("cuda-context", "load-weights"):
        return "not a training step (CUDA context or weight load)"
    if "unsloth" in r["grad_checkpointing"].lower():
        return "Unsloth's chunked cross-entropy loss is not modelled"
    lower = method.lower()
    if lower.startswith("full"):
        kind = "full"
    elif "qlora" in lower or "gptq" in lower:
        kind = "qlora"
    elif re.match(r"lora", lower):
        kind = "lora"
    else:
        return f"PEFT method not modelled: {method}"
    model = ALIASES.get(r["model_id"], r["model_id"])
    config = configs.get(model)
    if config is None:
        return f"no config for {model}"
    config = dict(config)
    if r["model_id"] in SEQ_CLS:
        config["architectures"] = ["BertForSequenceClassification"]
    precision = r["precision"].lower()
    pure = "pure" in precision or precision.startswith("bfloat16") or kind != "full"
    if "fms-acceleration" in r["source"] and "framework_config=none" not in r["notes"]:
        # The refs' fp16 column: the quantised (bnb, GPTQ) scenarios ran with fp16=True
        # (Trainer autocast), the full and standard-peft ones without.
        pure = False
    prec = (
        "fp32"
        if "fp32" in precision
        else ("fp16" if "fp16" in precision or precision == "float16" else "bf16")
    )
    opt = r["optimizer"].lower()
    optimizer = "adafactor" if "adafactor" in opt else ("adamw8bit" if "8bit" in opt else "adamw")
    gpus, card_bytes, context = _gpu(r["gpu"])
    old = any(s in r["source"] + r["seq_len"] for s in PRE_SDPA_SOURCES)
    zero = "deepspeed" in lower
    offload = "offload" in lower or "cpu off" in lower
    w = Workload(
        method=kind,
        batch=_int(r["batch_size"], 8),
        seq_len=_seq_len(r["seq_len"], config),
        target_len=TWITTER_LABEL_TOKENS if "twitter_complaints" in r["seq_len"] else 0,
        precision=prec,
        pure_16bit=pure,
        optimizer=optimizer,
        grad_checkpointing=r["grad_checkpointing"].startswith("yes")
        or "LLaMA-Factory default" in r["grad_checkpointing"],
        attention="eager" if old or "eager" in r["notes"] else "sdpa",
        adamw_impl="loop" if old else "foreach",
        lora_rank=_int(re.search(r"r(\d+)", method).group(1), 8)
        if re.search(r"r(\d+)", method)
        else 8,
        lora_targets=_targets(method, str(config.get("model_type"))),
        lora_dropout=0.0 if kind == "full" else _lora_dropout(r["source"]),
        double_quant=kind == "qlora" and "gptq" not in lower,
        qlora_format="gptq" if "gptq" in lower else "nf4",
        # transformers' 2022 docs and peft's README table (January 2023) ran torch 1.x, whose
        # zero_grad() zero-filled the gradients (set_to_none=False), the Trainer's
        # model.zero_grad() and the peft examples' optimizer.zero_grad() alike.
        zero_grad_set_to_none=not any(s in r["source"] for s in TORCH1_SOURCES),
        # transformers 4.48's GPTBigCode keeps config.use_cache under gradient checkpointing
        # (modeling_gpt_bigcode.py: no use_cache reset, where Llama's forward has one).
        cache_in_training=(
            "fms-acceleration" in r["source"] and config.get("model_type") in OWN_LOSS_FAMILIES
        )
        or any(s in r["source"] for s in OWN_LOOP_SOURCES),
        # peft's README examples and its MetaMathQA harness write ``outputs = model(**batch)``
        # in their loops, without checkpointing, so T5, BLOOM and Llama return their cache
        # (config.use_cache; MetaMathQA's default_training_params.json: "use_gc": false).
        loop_keeps_outputs=any(s in r["source"] for s in OWN_LOOP_SOURCES),
        # fms-acceleration's accelerated-peft plugins and Unsloth skip peft's fp32 upcast.
        kbit_prepare="accelerated-peft" not in r["notes"] and "Unsloth" not in method,
        # fms-hf-tuning's baseline QLoRA hands the peft config to TRL's SFTTrainer, which
        # casts the head and embeddings back to bf16 after the preparation.
        kbit_head_16bit="baseline-peft-bnb" in r["notes"],
        # fms-acceleration's 2024 refs: transformers' shared causal-LM loss still shifted an
        # fp32 copy of the logits (the Llama/Mistral/Mixtral per-token slope is the
        # checkpointed stream plus 14 B per logit); GPTBigCode kept its own loss code.
        loss_shift_copy="fms-acceleration" in r["source"]
        and config.get("model_type") in SHARED_LOSS_FAMILIES | OWN_LOSS_FAMILIES,
        # GPTBigCode's own loss of that time ran on the 16-bit shifted logits.
        loss_upcast=not (
            "fms-acceleration" in r["source"] and config.get("model_type") in OWN_LOSS_FAMILIES
        ),
        card="A100 80GB",
        gpus=gpus,
        # DeepSpeed rows: ZeRO-3 (the PEFT and accelerate examples' configs), offloading
        # optimizer and parameters when the row says CPU offload; FSDP + CPU offload is
        # CPUOffload(offload_params=True).
        parallelism="zero" if zero else "fsdp",
        zero_stage=3,
        offload_params=offload,
        offload_optimizer=offload,
        # PEFT's MetaMathQA harness empties the CUDA cache after every train step and reads
        # memory_reserved() just before (method_comparison/MetaMathQA/run.py, train()).
        empty_cache_each_step="method_comparison/MetaMathQA" in r["source"],
        # fms-acceleration's refs ran transformers 4.48.1, whose gradient_checkpointing_enable
        # defaults to use_reentrant=True (modeling_utils.py); PEFT's QLoRA + FSDP example
        # passes --use_reentrant True (examples/sft/run_peft_qlora_fsdp.sh), its LoRA one False.
        reentrant_checkpointing="fms-acceleration" in r["source"]
        or ("accelerate/fsdp.md" in r["source"] and kind == "qlora"),
        # Every DeepSpeed row ran from an accelerate yaml (peft's examples/*/accelerate_ds_*.yaml,
        # examples/sft/configs/deepspeed_config*.yaml), which writes no bucket sizes.
        zero_auto_buckets=not zero,
    )
    metric_text = r["metric"].lower()
    metric = (
        "allocated"
        if "allocated" in metric_text
        else ("reserved" if "reserved" in metric_text else "device")
    )
    at_limit = "OOM" in r["peak_gb"] or "OOM" in r["notes"] or "at limit" in r["notes"]
    measured = None if at_limit else _float(r["peak_gb"])
    return Row(
        i,
        r["model_id"],
        config,
        w,
        metric,
        measured,
        not at_limit,
        card_bytes,
        context,
        r["notes"][:40],
    )


def _float(text: str) -> float | None:
    m = re.search(r"[\d.]+", text)
    return float(m.group()) * GB if m else None


def estimate(row: Row) -> tuple[float, bool]:
    p = plan(row.config, row.workload)
    e = p.selected
    device = (
        e.reserved_bytes + row.context + (e.context_bytes - card(row.workload.card).context_bytes)
    )
    value = {"allocated": e.peak_allocated_bytes, "reserved": e.reserved_bytes, "device": device}[
        row.metric
    ]
    return float(value), device <= row.card_bytes


def score() -> list[tuple[str, str, float]]:
    configs = latest_configs()
    with MEASURED.open(newline="") as handle:
        raw = list(csv.DictReader(handle))
    errors: list[float] = []
    verdicts: list[bool] = []
    skipped: dict[str, int] = {}
    used: list[tuple[str, str, float]] = []
    groups: dict[tuple[str, str], list[float]] = {}
    print(
        f"{'row':>3} {'model':38} {'method':6} {'b':>3} {'seq':>5} {'metric':9} {'estimate':>9} {'measured':>9} {'err%':>7} fit"
    )
    for i, r in enumerate(raw):
        row = to_row(i, r, configs)
        if isinstance(row, str):
            skipped[row] = skipped.get(row, 0) + 1
            continue
        try:
            value, fits = estimate(row)
        except EstimateError as exc:
            skipped[f"estimate refused: {exc}"] = skipped.get(f"estimate refused: {exc}", 0) + 1
            continue
        used.append((row.model, json.dumps(row.config), 0.0))
        verdicts.append(fits == row.fits)
        err = ""
        if row.measured:
            e = 100 * (value - row.measured) / row.measured
            errors.append(abs(e))
            err = f"{e:+7.1f}"
            groups.setdefault(_group(row.workload), []).append(e)
        print(
            f"{i:>3} {row.model[:38]:38} {row.workload.method:6} {row.workload.batch:>3} {row.workload.seq_len:>5} "
            f"{row.metric:9} {value / GB:9.2f} {'-' if row.measured is None else f'{row.measured / GB:9.2f}':>9} {err:>7} "
            f"{'ok' if fits == row.fits else 'WRONG'} ({'fits' if fits else 'OOM'})"
        )
    print()
    for reason, n in sorted(skipped.items()):
        print(f"skipped {n:3}: {reason}")
    print_split(groups)
    if errors:
        errors.sort()
        p90 = errors[min(len(errors) - 1, int(0.9 * len(errors)))]
        print(f"\nrows scored: {len(errors)} with a figure, {len(verdicts)} with a verdict")
        print(f"median absolute error: {statistics.median(errors):.1f}%  (goal <= 10%)")
        print(f"p90 absolute error:    {p90:.1f}%  (goal <= 20%)")
        print(f"fits verdict right:    {100 * sum(verdicts) / len(verdicts):.1f}%  (goal >= 95%)")
        write_accuracy(
            statistics.median(errors),
            p90,
            sum(verdicts) / len(verdicts),
            len(errors),
            len(verdicts),
        )
    return used


def _group(w: Workload) -> tuple[str, str]:
    """(method, how the GPUs are used) of a scored row."""
    if w.gpus == 1 and not (w.offload_params or w.offload_optimizer):
        how = "1 GPU"
    elif w.parallelism == "zero":
        how = f"{w.gpus} GPU ZeRO-{w.zero_stage}"
    else:
        how = f"{w.gpus} GPU FSDP {w.sharding_strategy}"
    if w.offload_params or w.offload_optimizer:
        how += " + CPU offload"
    return w.method, how


def print_split(groups: dict[tuple[str, str], list[float]]) -> None:
    """Signed errors by method and GPU use; multi-GPU rows against the 15% goal."""
    print(f"\n{'method':6} {'GPUs':34} {'rows':>4} {'median|e|':>9} {'max|e|':>7} {'<=15%':>6}")
    for (method, how), errs in sorted(groups.items()):
        a = sorted(abs(e) for e in errs)
        within = sum(1 for e in a if e <= 15)
        print(
            f"{method:6} {how:34} {len(a):4} {statistics.median(a):8.1f}% {a[-1]:6.1f}% "
            f"{within:3}/{len(a)}"
        )
    multi = [
        abs(e) for (_, how), errs in groups.items() if not how.startswith("1 GPU") for e in errs
    ]
    if multi:
        within = sum(1 for e in multi if e <= 15)
        print(f"multi-GPU / offload rows within 15%: {within}/{len(multi)}")


def write_accuracy(median: float, p90: float, verdict: float, figures: int, verdicts: int) -> None:
    """Record the scores where the model page reads "the estimator's measured accuracy"."""
    scores = {
        "median_abs_error_pct": round(median, 1),
        "p90_abs_error_pct": round(p90, 1),
        "verdict_accuracy_pct": round(100 * verdict, 1),
        "rows_with_figure": figures,
        "rows_with_verdict": verdicts,
        "date": datetime.now(UTC).date().isoformat(),
        "source": "tests/bench/bench_estimator.py against ../shared/measured/measured-memory.csv",
    }
    ACCURACY.write_text(json.dumps(scores, indent=2) + "\n")


def meta_model(config: dict[str, Any]) -> object:
    """accelerate's way from the same dict: a transformers config, then the model on meta.

    Building the PretrainedConfig is timed with it, as plan() parses the dict too.
    """
    import torch  # noqa: F401  (imported here: the estimator itself never needs it)
    from accelerate import init_empty_weights
    from transformers import AutoConfig, AutoModel, AutoModelForCausalLM

    with warnings.catch_warnings(), init_empty_weights():
        warnings.simplefilter("ignore")
        cfg = AutoConfig.for_model(**config)
        try:
            return AutoModelForCausalLM.from_config(cfg)
        except ValueError:
            return AutoModel.from_config(cfg)


SEVEN_B_CLASS = (5e9, 10e9)
ONE_MS = 1e-3


class Timed(NamedTuple):
    """One config's plan() times (seconds) beside its meta-device build."""

    name: str
    params: int
    wall_p50: float
    wall_p99: float
    cpu_p50: float
    cpu_p99: float
    meta: float | None
    meta_cpu: float | None

    @property
    def ratio(self) -> float | None:
        """Meta-device build over plan(), wall clock."""
        return None if self.meta is None else self.meta / self.wall_p50

    @property
    def cpu_ratio(self) -> float | None:
        """The same in CPU time: what a shared machine's load does not move."""
        return None if self.meta_cpu is None else self.meta_cpu / self.cpu_p50


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _timed_rounds(
    configs: list[dict[str, Any]], runs: int
) -> tuple[list[list[float]], list[list[float]], list[list[bool]]]:
    """Wall and CPU seconds of ``runs`` plan() calls per config (after three warm-up calls).

    Configs take turns, one call each per round, so a burst of load on a shared
    machine lands on every config alike rather than on whichever ran then. The
    third list marks the calls during which the collector swept the oldest
    generation: such a sweep walks every tracked object of the process, so its
    cost is the heap's size, not plan()'s work, and it is what sets the p99.
    """
    for config in configs:
        for _ in range(3):
            plan(config)
    gc.collect()
    full_sweeps = [0]

    def count_full_sweeps(phase: str, info: dict[str, int]) -> None:
        if phase == "start" and info["generation"] == 2:
            full_sweeps[0] += 1

    wall: list[list[float]] = [[] for _ in configs]
    cpu: list[list[float]] = [[] for _ in configs]
    swept: list[list[bool]] = [[] for _ in configs]
    gc.callbacks.append(count_full_sweeps)
    try:
        for _ in range(runs):
            for i, config in enumerate(configs):
                before = full_sweeps[0]
                t, c = time.perf_counter(), time.thread_time()
                plan(config)
                cpu[i].append(time.thread_time() - c)
                wall[i].append(time.perf_counter() - t)
                swept[i].append(full_sweeps[0] != before)
    finally:
        gc.callbacks.remove(count_full_sweeps)
    return wall, cpu, swept


def _print_full_sweeps(
    table: list[Timed], cpus: list[list[float]], swept: list[list[bool]]
) -> None:
    """How much of the p99 is the collector's full sweeps rather than plan()'s own work."""
    during = [
        c
        for cpu, marks in zip(cpus, swept, strict=True)
        for c, s in zip(cpu, marks, strict=True)
        if s
    ]
    if not during:
        print("no full garbage collection ran during a timed call")
        return
    calls = sum(len(c) for c in cpus)
    rest = [
        _percentile([c for c, s in zip(cpu, marks, strict=True) if not s], 0.99)
        for cpu, marks in zip(cpus, swept, strict=True)
    ]
    print(
        f"full garbage collections (oldest generation) ran during {len(during)} of {calls} "
        f"calls, those calls CPU median {statistics.median(during) * 1000:.2f} ms; without "
        f"them, CPU p99 >= 1 ms on {sum(1 for r in rest if r >= ONE_MS)} of {len(table)} configs "
        f"(max {max(rest) * 1000:.3f} ms)"
    )


def _meta_seconds(config: dict[str, Any], runs: int) -> tuple[float | None, float | None]:
    """Median wall and CPU seconds of the meta-device build; None for a config it refuses."""
    try:
        meta_model(config)  # untimed: the first build imports the modeling module
        wall, cpu = [], []
        for _ in range(runs):
            t, c = time.perf_counter(), time.thread_time()
            meta_model(config)
            cpu.append(time.thread_time() - c)
            wall.append(time.perf_counter() - t)
    except Exception:
        return None, None  # a config transformers cannot build has no baseline
    return statistics.median(wall), statistics.median(cpu)


def _ms(seconds: float | None, width: int = 7, digits: int = 3) -> str:
    return f"{'-':>{width}}" if seconds is None else f"{seconds * 1000:{width}.{digits}f}"


def _ratio(ratio: float | None) -> str:
    return "     -" if ratio is None else f"{ratio:5.0f}x"


def timing(runs: int = 100, meta_runs: int = 2, meta_limit: float = 20e9) -> None:
    """plan() p50/p99 per corpus config beside accelerate's meta-device build, in one run.

    What is timed is what a caller pays: ``plan(config)`` with the default
    Workload (built inside the call), returning the whole Plan (nothing is
    deferred to ``to_json``); nothing is kept between calls. Every config
    plan() accepts is timed ``runs`` times, the configs taking turns; then
    the meta-device builds (``init_empty_weights`` + ``from_config``, the
    median of ``meta_runs``) of configs under ``meta_limit`` parameters (a
    671B build takes minutes). Wall time (``perf_counter``) counts what a
    loaded machine's scheduler takes away; CPU time (``thread_time``) is
    plan()'s own work. The ratio is the meta-device build over plan()'s wall
    p50. The load average is printed with them: figures from a loaded
    machine are slower, and only comparable with figures from the same run.
    """
    named = []
    for name, config in sorted(latest_configs().items()):
        try:
            first = plan(config)
        except EstimateError:
            continue
        named.append((name, int(dict(first.parameters)["total"]), config))
    load = os.getloadavg()[0]
    walls, cpus, swept = _timed_rounds([config for _, _, config in named], runs)
    table = [
        Timed(
            name,
            params,
            statistics.median(wall),
            _percentile(wall, 0.99),
            statistics.median(cpu),
            _percentile(cpu, 0.99),
            *(_meta_seconds(config, meta_runs) if params < meta_limit else (None, None)),
        )
        for (name, params, config), wall, cpu in zip(named, walls, cpus, strict=True)
    ]
    print(
        f"\nload average while timing: {load:.1f} before, {os.getloadavg()[0]:.1f} after, "
        f"on {os.cpu_count()} CPUs; {runs} calls per config"
    )
    print(
        f"\n{'config':44} {'params':>8} {'wall p50':>8} {'p99':>7} {'cpu p50':>8} {'p99':>7} "
        f"{'meta ms':>8} {'ratio':>6} {'cpu ratio':>9}"
    )
    for r in table:
        print(
            f"{r.name[:44]:44} {r.params / 1e9:7.2f}B {_ms(r.wall_p50, 8)} {_ms(r.wall_p99)} "
            f"{_ms(r.cpu_p50, 8)} {_ms(r.cpu_p99)} {_ms(r.meta, 8, 1)} {_ratio(r.ratio)} {_ratio(r.cpu_ratio):>9}"
        )
    print("\nslowest five by CPU p50:")
    for r in sorted(table, key=lambda r: -r.cpu_p50)[:5]:
        print(
            f"  {r.name[:44]:44} cpu p50 {_ms(r.cpu_p50)} p99 {_ms(r.cpu_p99)} ms, "
            f"wall p50 {_ms(r.wall_p50)} p99 {_ms(r.wall_p99)} ms, meta {_ms(r.meta, 1, 1)} ms "
            f"{_ratio(r.ratio).strip()} (CPU {_ratio(r.cpu_ratio).strip()})"
        )
    over = {
        label: sum(1 for r in table if getattr(r, field) >= ONE_MS)
        for label, field in (
            ("CPU p50", "cpu_p50"),
            ("CPU p99", "cpu_p99"),
            ("wall p50", "wall_p50"),
            ("wall p99", "wall_p99"),
        )
    }
    print(
        "\nconfigs >= 1 ms (goal 0): "
        + ", ".join(f"{label} {n} of {len(table)}" for label, n in over.items())
    )
    _print_full_sweeps(table, cpus, swept)
    seven = [r for r in table if SEVEN_B_CLASS[0] <= r.params < SEVEN_B_CLASS[1] and r.ratio]
    summary = f"summary: {over['CPU p50']} of {len(table)} configs >= 1 ms CPU p50"
    if seven:
        ratios = [r.ratio for r in seven if r.ratio is not None]
        cpu_ratios = [r.cpu_ratio for r in seven if r.cpu_ratio is not None]
        plan_ms = statistics.median(r.wall_p50 for r in seven) * 1000
        print(
            f"7B-class ({len(seven)} configs with a meta-device build): plan() wall p50 median "
            f"{plan_ms:.3f} ms (CPU {statistics.median(r.cpu_p50 for r in seven) * 1000:.3f} ms), "
            f"meta-device median {statistics.median(r.meta for r in seven if r.meta) * 1000:.0f} "
            f"ms, ratio min {min(ratios):.0f}x median {statistics.median(ratios):.0f}x; in CPU "
            f"time min {min(cpu_ratios):.0f}x median {statistics.median(cpu_ratios):.0f}x "
            "(goal >= 1000x)"
        )
        summary += (
            f"; 7B-class plan() {plan_ms:.3f} ms, {statistics.median(ratios):.0f}x the "
            f"meta-device build ({statistics.median(cpu_ratios):.0f}x in CPU time; goals: "
            "0 configs, 1000x)"
        )
    json_times = []
    for _, _, config in named[:20]:
        t = time.perf_counter()
        plan(config).to_json()
        json_times.append(time.perf_counter() - t)
    print(
        f"plan().to_json() median {statistics.median(json_times) * 1000:.2f} ms "
        "(what the tracker and the HTTP API pay)"
    )
    print(summary)


if __name__ == "__main__":
    # ``--timing``: only the plan() speed table (scoring rewrites data/accuracy.json).
    if "--timing" not in sys.argv:
        score()
    timing()
