"""Would the engine start? ``plan --engine`` on the corpus's Llama, Mistral, Qwen2 and Gemma configs.

Run: ``python tests/bench/bench_engines.py [--engine vllm] [--version 0.6.4] [--json]``
(``--version``: the engine release whose start-up is modelled; none: the current
one). ``--sweep``: Llama 3.1 8B on an A10G (24 GB) across max_model_len 4K-128K
at vLLM 0.6.4 (V0) and the current release, and in bf16 and fp32 on an A100
80GB: each verdict beside the vLLM source line it follows. For each
model (the hub corpus's latest config.json on main, plus Llama 3.2 3B's 128k
revision) and each card (H100 80GB, A100 80GB, RTX 4090, L4, T4) it prints
the KV cache the engine would allocate (tokens), whether it starts at the
config's own context, and if not the largest max_model_len that does, with
the engine's error. It also times one verdict. Figures are the model's,
from the engine's own formulas; nothing here runs on a GPU.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from estimator import EngineRequest, Workload, plan  # noqa: E402
from estimator.engines import ENGINE_NAMES, simulate_engine  # noqa: E402
from estimator.families import describe  # noqa: E402
from estimator.memory import split_parameters  # noqa: E402

CORPUS = ROOT.parent / "shared" / "hub-corpus"
MODELS = (
    "meta-llama/Meta-Llama-3-8B",
    "meta-llama/Llama-3.2-3B-Instruct",
    "mistralai/Mistral-7B-Instruct-v0.3",
    "onnx-community/Qwen2.5-Coder-3B-Instruct",
    "google/gemma-2b-it",
)
CARDS = ("H100 80GB", "A100 80GB", "RTX 4090", "L4", "T4")


def latest_config(repo: str) -> tuple[str, dict[str, Any]]:
    """(revision, config) of the repo's latest config.json on main in the corpus."""
    entries = json.loads((CORPUS / "MANIFEST.json").read_text())
    best: tuple[str, str] | None = None
    for e in entries:
        if e.get("repo_id") != repo or e.get("file") != "config.json":
            continue
        if "refs/pr" in (e.get("notes") or ""):
            continue
        revision = e.get("revision") or "unknown"
        if (CORPUS / repo / revision / "config.json").is_file() and (
            best is None or (e.get("date") or "") > best[0]
        ):
            best = (e.get("date") or "", revision)
    if best is None:
        raise SystemExit(f"{repo}: no config.json in the corpus")
    return best[1], json.loads((CORPUS / repo / best[1] / "config.json").read_text())


def rows(engine: str, version: str | None = None) -> list[dict[str, Any]]:
    out = []
    for repo in MODELS:
        revision, config = latest_config(repo)
        for card in CARDS:
            request = EngineRequest(engine=engine, card=card, version=version)  # type: ignore[arg-type]
            v = plan(config, engine=request).engine
            assert v is not None
            out.append(
                {
                    "model": repo,
                    "revision": revision[:7],
                    "card": card,
                    "max_model_len": v.max_model_len,
                    "kv_cache_tokens": v.kv_cache_tokens,
                    "max_concurrency": v.max_concurrency,
                    "starts": v.starts,
                    "max_model_len_that_starts": v.max_model_len_that_starts,
                    "weights_gib": round(v.weights_bytes / 2**30, 2),
                    "error": v.error,
                }
            )
    return out


def timing(engine: str, repeats: int = 50) -> float:
    """Median seconds of one verdict (architecture described once, as plan() does)."""
    _, config = latest_config(MODELS[1])
    arch = describe(config)
    split = split_parameters(arch)
    request = EngineRequest(engine=engine, card="L4")  # type: ignore[arg-type]
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        simulate_engine(arch, split, request)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


PUBLIC = Path(__file__).with_name("data") / "public_configs.json"
SWEEP_LENGTHS = (4096, 8192, 16384, 32768, 65536, 131072)


def sweep() -> None:
    """vLLM's verdict by version, context and dtype for Llama 3.1 8B, with the source line."""
    config = json.loads(PUBLIC.read_text())["meta-llama/Llama-3.1-8B-Instruct"]
    print("Llama 3.1 8B, vLLM on an A10G (24 GB), bf16")
    print(f"{'version':9} {'max_len':>8} {'profile':>8} {'kv_tokens':>10}  verdict")
    for version in ("0.6.4", None):
        for length in SWEEP_LENGTHS:
            request = EngineRequest(engine="vllm", max_model_len=length, version=version)
            v = plan(config, Workload(method="serve", card="A10G"), engine=request).engine
            assert v is not None
            s = dict(v.settings)
            verdict = "starts" if v.starts else f"refuses (largest {v.max_model_len_that_starts:,})"
            print(
                f"{version or 'current':9} {length:>8,} {s['max_num_batched_tokens']:>8,} "
                f"{v.kv_cache_tokens:>10,}  {verdict}"
            )
        keys = (
            ("SchedulerConfig", "determine_num_available_blocks", "raise_if_cache_size_invalid")
            if version
            else ("get_batch_defaults", "determine_available_memory", "max_memory_usage")
        )
        for key in keys:
            line = next((x for x in v.sources if key in x), None)
            if line is not None:
                print(f"  follows: {line[:170]}")
    print("Llama 3.1 8B, vLLM on an A100 80GB at max_model_len 8,192, by --precision")
    for version in ("0.6.4", None):
        for precision in ("bf16", "fp32"):
            request = EngineRequest(engine="vllm", max_model_len=8192, version=version)
            w = Workload(method="serve", card="A100 80GB", precision=precision)  # type: ignore[arg-type]
            v = plan(config, w, engine=request).engine
            assert v is not None
            print(
                f"{version or 'current':9} {precision:5} weights {v.weights_bytes / 2**30:6.2f} GiB "
                f"KV {v.kv_cache_tokens:>9,} tokens"
            )
    print(
        "  follows: vllm/config.py _get_and_verify_dtype (--dtype float32: 4-byte weights; "
        "cache dtype auto = model dtype)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", choices=ENGINE_NAMES, default="vllm")
    parser.add_argument("--version", help="engine release (default: the current one)")
    parser.add_argument("--sweep", action="store_true", help="vLLM by version, context, dtype")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.sweep:
        sweep()
        return
    table = rows(args.engine, args.version)
    if args.json:
        print(json.dumps({"engine": args.engine, "rows": table}, indent=2))
        return
    print(f"plan --engine {args.engine}: KV cache and start-up verdict at the config's context")
    print(f"{'model':42} {'card':10} {'max_len':>8} {'kv_tokens':>10} {'conc':>7}  verdict")
    for r in table:
        verdict = (
            "starts"
            if r["starts"]
            else f"refuses; largest that starts {r['max_model_len_that_starts']:,}"
        )
        conc = "" if r["max_concurrency"] is None else f"{r['max_concurrency']:.2f}x"
        print(
            f"{r['model'] + '@' + r['revision']:42} {r['card']:10} {r['max_model_len']:>8,} "
            f"{r['kv_cache_tokens']:>10,} {conc:>7}  {verdict}"
        )
    errors = {r["error"].split(" (")[0] for r in table if r["error"]}
    for e in sorted(errors):
        print(f"  error kind: {e[:110]}")
    print(f"one verdict: {timing(args.engine) * 1e3:.2f} ms median (Llama 3.2 3B, L4)")


if __name__ == "__main__":
    main()
