"""Which corpus configs get an exact parameter count, and by which path.

Run: ``python tests/bench/bench_exact_coverage.py [--json] [--list]``. Needs the
``[exact]`` extra (torch + transformers): transformers building each config on the
meta device is the oracle. Every config.json in the hub corpus (MANIFEST.json) lands
in one outcome:

- ``fast path exact``: a family module's tensor list equals transformers' own (built as
  published, or with the field transformers 5 refuses repaired as tracker/revision/exact_parameters.py
  repairs it);
- ``fast path differs``: a family module covers it but a tensor name or shape differs;
- ``fast path, transformers cannot build``: a family covers a type transformers has no
  class for (remote code); the family is checked against the published checkpoint index
  in tests/estimator/test_parameters_remote_code.py instead;
- ``[exact] path exact``: no family, the meta-device build is used and matches;
- ``no exact count``: neither; the reason is printed (``not JSON as published``: the file
  at that revision does not parse, for transformers either; ``empty config``: ``{}``;
  ``remote code``: the type is only defined by the repo's own modeling code, which is never
  executed; ``names no model``: neither model_type nor architectures, only fields the repo's
  own code reads).

The last lines are the count of configs still without an exact count, and how many of
those hold a model's shapes in the published config (the count to drive to 0).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import tracker.revision.exact_parameters as exact_parameters  # noqa: E402
from estimator.errors import ConfigError  # noqa: E402
from estimator.families import describe  # noqa: E402
from tests.estimator.reference import (  # noqa: E402
    Refused,
    difference,
    estimated_shapes,
    reference_shapes,
)

CORPUS = ROOT.parent / "shared" / "hub-corpus"
EXACT = ("fast path exact", "[exact] path exact")
CHECKED_ELSEWHERE = "fast path, transformers cannot build"
# Misses whose published config does hold a model's shapes: the count to drive to 0.
COUNTABLE_MISSES = ("no exact count", "fast path differs", "[exact] path differs")


def corpus_configs() -> list[tuple[str, Any]]:
    """(tree path, parsed JSON or the error) of every config.json in the manifest."""
    out: list[tuple[str, Any]] = []
    for entry in json.loads((CORPUS / "MANIFEST.json").read_text()):
        if entry["file"] != "config.json":
            continue
        rel = f"{entry['repo_id']}/{entry['revision'] or 'unknown'}/config.json"
        try:
            out.append((rel, json.loads((CORPUS / rel).read_text())))
        except (OSError, json.JSONDecodeError) as exc:
            out.append((rel, exc))
    return out


def classify(raw: Any) -> tuple[str, str]:
    """(outcome, detail) of one parsed config.json."""
    if not isinstance(raw, dict):
        return "no exact count: not JSON as published", str(raw)[:160]
    if not raw:
        return "no exact count: empty config", "{} describes no model"
    try:
        fast = describe(raw)
    except ConfigError as exc:
        fast = None
        fast_error = str(exc)
    else:
        fast_error = "generic estimate"
    if fast is not None and fast.supported:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                expected = reference_shapes(raw, fast)
        except Refused as exc:
            built = exact_parameters.meta_build(raw)
            if built.refused is not None:
                return CHECKED_ELSEWHERE, f"{fast.model_type}: {exc}"[:160]
            # transformers builds it once a field its strict validation refuses is repaired
            expected = dict(built.parameters)
        got = estimated_shapes(fast)
        if got == expected:
            return "fast path exact", fast.family
        return "fast path differs", difference(expected, got)[:300]
    try:
        arch = describe(raw, exact_parameters.meta_parameters)
    except ConfigError as exc:
        fast_error = str(exc)
    else:
        if arch.family == "meta-device":
            meta = dict(exact_parameters.meta_build(raw).parameters)
            if estimated_shapes(arch) == meta:
                return "[exact] path exact", str(raw.get("model_type"))
            return "[exact] path differs", difference(meta, estimated_shapes(arch))[:300]
    refused = exact_parameters.meta_build(raw).refused or fast_error
    detail = f"{raw.get('model_type')!r}: {refused}"[:240]
    auto_map = raw.get("auto_map")
    if isinstance(auto_map, dict):
        # Remote code is never executed (DESIGN.md); a type transformers has no class for
        # can only be counted by a family module or from a published checkpoint index.
        return "no exact count: remote code", f"{detail}; auto_map {sorted(auto_map.values())}"
    if raw.get("model_type") is None and raw.get("architectures") is None:
        # no type, no class, and no key set a pre-model_type family is told apart by
        return "no exact count: names no model", f"keys {sorted(raw)[:8]}"
    return "no exact count", detail


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="one JSON object per config")
    ap.add_argument("--list", action="store_true", help="list every config, not only misses")
    args = ap.parse_args()
    if not exact_parameters.available():
        raise SystemExit(f"needs the [exact] extra: {exact_parameters.INSTALL_HINT}")
    started = time.perf_counter()
    outcomes: Counter[str] = Counter()
    rows = []
    for rel, raw in corpus_configs():
        outcome, detail = classify(raw)
        outcomes[outcome] += 1
        rows.append({"config": rel, "outcome": outcome, "detail": detail})
    seconds = time.perf_counter() - started
    if args.json:
        for row in rows:
            print(json.dumps(row))
    for row in rows:
        if args.list or row["outcome"] not in EXACT:
            print(f"{row['outcome']:40} {row['config']}\n{'':40} {row['detail']}")
    print()
    for outcome, n in sorted(outcomes.items()):
        print(f"{n:5}  {outcome}")
    missing = sum(n for o, n in outcomes.items() if o.startswith("no exact count"))
    countable = sum(n for o, n in outcomes.items() if o in COUNTABLE_MISSES)
    print(f"{len(rows):5}  configs in {seconds:.1f} s; without an exact count: {missing}")
    print(f"{countable:5}  of them hold the shapes in the published config (the rest cannot)")


if __name__ == "__main__":
    main()
