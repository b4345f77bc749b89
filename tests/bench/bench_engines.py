"""Would the engine start? ``plan --engine`` on the corpus's Llama, Mistral, Qwen2 and Gemma configs.

Run: ``python tests/bench/bench_engines.py [--engine vllm] [--json]``. For each
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

from estimator import EngineRequest, plan  # noqa: E402
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


def rows(engine: str) -> list[dict[str, Any]]:
    out = []
    for repo in MODELS:
        revision, config = latest_config(repo)
        for card in CARDS:
            v = plan(config, engine=EngineRequest(engine=engine, card=card)).engine  # type: ignore[arg-type]
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", choices=ENGINE_NAMES, default="vllm")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    table = rows(args.engine)
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
