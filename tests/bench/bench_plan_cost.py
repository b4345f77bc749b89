"""What one plan costs, the estimator at a git commit beside the working tree, and whether
every plan is the same, in one run.

Run: ``.venv/bin/python tests/bench/bench_plan_cost.py [--base main] [--rounds 3] [--reps 3]
[--synthetic 400]``.

The configs: every config.json of the shared hub corpus (each revision's) and every distinct
config.json of the first ``--synthetic`` repos of the synthetic Hub (seed 0, each revision's;
the revision bench's workload is the first ``(warmup + revisions) // 8`` of them). The base
commit's ``estimator`` is exported (``git archive``) into a scratch directory, and each tree
plans in a subprocess of its own (``PYTHONPATH`` set to that tree):

- sameness: every config under every variant of ``VARIANTS`` (the daemon's estimate, the
  default workload, vLLM at another length, version, tensor parallelism and cache dtype,
  the other engines), each on every card; a plan's JSON (``Plan.to_json()``) or the
  refusal's type and message, hashed. The two trees' hashes must be equal: the count of
  those that differ is printed.
- cost: CPU milliseconds per plan (``time.process_time``, best of ``--reps`` passes after
  one warm pass) of the daemon's estimate (``tracker.revision.estimate``: the stated
  workload, vLLM on every card of the table, the plan alone where the engine refuses), on
  the corpus configs and on the revision bench's synthetic ones, the trees alternating for
  ``--rounds`` rounds, with the load average beside each line.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT.parent / "shared" / "hub-corpus"
SYNTHETIC_SEED = 0
REVISION_BENCH_REPOS = (60 + 300) // 8  # bench_revision_cost's --warmup 60 --revisions 300


def variants() -> dict[str, Callable[[dict[str, Any]], Any]]:
    """Each variant: config -> Plan (or the EstimateError it raised), from this tree's estimator."""
    from estimator import STATED_WORKLOAD, EngineRequest, EstimateError, Workload, plan

    vllm = EngineRequest(engine="vllm")

    def daemon(config: dict[str, Any]) -> Any:
        try:
            return plan(config, STATED_WORKLOAD, engine=vllm, engine_on_every_card=True)
        except EstimateError:
            return plan(config, STATED_WORKLOAD)

    def every_card(workload: Workload, **request: Any) -> Callable[[dict[str, Any]], Any]:
        engine = EngineRequest(**request)
        return lambda config: plan(config, workload, engine=engine, engine_on_every_card=True)

    serving = Workload(method="serve", batch=8, gpus=2, seq_len=2048)
    lora = Workload(method="lora", batch=4, seq_len=1024, precision="fp32")
    return {
        "daemon": daemon,
        "default": plan,
        "vllm-tp2-fp8": every_card(serving, engine="vllm", tensor_parallel=2, kv_cache_dtype="fp8"),
        "vllm-0.6.4": every_card(STATED_WORKLOAD, engine="vllm", version="0.6.4"),
        "vllm-32k": every_card(
            Workload(card="L4"),
            engine="vllm",
            max_model_len=32768,
            gpu_memory_utilization=0.8,
            block_size=32,
        ),
        "sglang": every_card(STATED_WORKLOAD, engine="sglang"),
        "tgi": every_card(STATED_WORKLOAD, engine="tgi"),
        "transformers": every_card(lora, engine="transformers"),
    }


def outcome(run: Callable[[dict[str, Any]], Any], config: dict[str, Any]) -> str:
    """The plan's JSON, or the refusal, as one hash."""
    from estimator import EstimateError

    try:
        text = json.dumps(run(config).to_json())
    except EstimateError as exc:
        text = f"{type(exc).__name__}: {exc}"
    return hashlib.sha256(text.encode()).hexdigest()


def child(mode: str, configs_path: Path, reps: int) -> None:
    """In a tree's subprocess: print the hashes, or the ms per daemon plan, as JSON."""
    configs = json.loads(configs_path.read_text())
    table = variants()
    if mode == "same":
        hashes = [
            outcome(run, config)
            for kind in ("corpus", "synthetic")
            for config in configs[kind]
            for run in table.values()
        ]
        print(json.dumps(hashes))
        return
    daemon = table["daemon"]
    figures = {}
    for kind in ("corpus", "revision_bench"):
        for config in configs[kind]:
            outcome(daemon, config)
        best = float("inf")
        for _ in range(reps):
            start = time.process_time()
            for config in configs[kind]:
                outcome(daemon, config)
            best = min(best, (time.process_time() - start) / len(configs[kind]) * 1000)
        figures[kind] = round(best, 3)
    print(json.dumps(figures))


def collect(synthetic: int) -> dict[str, list[dict[str, Any]]]:
    """The corpus's config.json documents and the synthetic repos' distinct ones."""
    sys.path.insert(0, str(ROOT))
    from tracker.hubsim.synthetic import SyntheticStore

    corpus = []
    for path in sorted(CORPUS.rglob("config.json")):
        try:
            document = json.loads(path.read_text())
        except ValueError:
            continue
        if isinstance(document, dict):
            corpus.append(document)
    generator = SyntheticStore(synthetic, SYNTHETIC_SEED, CORPUS).generator
    seen: set[str] = set()
    generated, revision_bench = [], []
    for index in range(synthetic):
        for change in generator.files(generator.schedule(index)):
            text = change.get("config.json")
            if text is None or text in seen:
                continue
            seen.add(text)
            document = json.loads(text)
            generated.append(document)
            if index < REVISION_BENCH_REPOS:
                revision_bench.append(document)
    return {"corpus": corpus, "synthetic": generated, "revision_bench": revision_bench}


def in_tree(tree: Path, mode: str, configs: Path, reps: int) -> Any:
    command = [sys.executable, str(Path(__file__).resolve()), f"--child={mode}"]
    command += [f"--configs={configs}", f"--reps={reps}"]
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{tree}: {mode} failed\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default="main", help="the git commit to compare with")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--synthetic", type=int, default=400)
    parser.add_argument("--child", choices=("same", "cost"), help=argparse.SUPPRESS)
    parser.add_argument("--configs", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.configs, args.reps)
        return 0
    with tempfile.TemporaryDirectory() as scratch:
        base = Path(scratch) / "base"
        base.mkdir()
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", args.base, "estimator"],
            check=True,
            capture_output=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(base)], input=archive, check=True)
        configs = Path(scratch) / "configs.json"
        collected = collect(args.synthetic)
        configs.write_text(json.dumps(collected))
        print({kind: len(found) for kind, found in collected.items()}, "configs", flush=True)
        before = in_tree(base, "same", configs, args.reps)
        after = in_tree(ROOT, "same", configs, args.reps)
        differing = sum(a != b for a, b in zip(before, after, strict=True))
        print(f"{len(after)} plans and refusals compared, {differing} differing", flush=True)
        for _ in range(args.rounds):
            for label, tree in ((args.base, base), ("tree", ROOT)):
                figures = in_tree(tree, "cost", configs, args.reps)
                load = " ".join(f"{x:.2f}" for x in os.getloadavg())
                print(f"{label:>10}: ms per daemon plan {figures}  load {load}", flush=True)
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
