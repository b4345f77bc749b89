"""Parameters are exact: every tensor name and shape equals what transformers instantiates.

The independent source is transformers itself, building the class that
``architectures[0]`` names on the meta device (no memory, no weights).
"""

from __future__ import annotations

import json
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from estimator.errors import ConfigError
from estimator.families import describe
from estimator.parameters import active_parameters, parameter_breakdown
from tests.estimator import configgen
from tests.estimator.reference import Refused, difference, estimated_shapes, reference_shapes

GENERATED = 256  # 8 per family, 32 families


def corpus_configs(corpus_dir: Path) -> list[tuple[str, Any]]:
    """(tree path, parsed JSON or the JSONDecodeError) of every config.json in the corpus."""
    manifest = json.loads((corpus_dir / "MANIFEST.json").read_text())
    out: list[tuple[str, Any]] = []
    for entry in manifest:
        if entry["file"] != "config.json":
            continue
        rel = f"{entry['repo_id']}/{entry['revision'] or 'unknown'}/config.json"
        try:
            out.append((rel, json.loads((corpus_dir / rel).read_text())))
        except json.JSONDecodeError as exc:
            out.append((rel, exc))
    return out


def compare(raw: dict[str, Any]) -> str | None:
    """None when exact, else a description of the difference; raises Refused."""
    arch = describe(raw)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Initializing zero-element tensors")
        expected = reference_shapes(raw, arch)
    got = estimated_shapes(arch)
    if expected == got and sum(_numel(s) for s in expected.values()) == arch.total_parameters:
        return None
    return difference(expected, got) or "totals differ"


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


@pytest.mark.slow  # corpus-wide: over 20 s
def test_every_supported_corpus_config_matches_transformers_exactly(
    corpus_dir: Path, record_property: pytest.RecordProperty
) -> None:
    outcome: Counter[str] = Counter()
    failures: list[str] = []
    for rel, raw in corpus_configs(corpus_dir):
        if isinstance(raw, json.JSONDecodeError):
            outcome["skipped: invalid JSON"] += 1
            continue
        try:
            arch = describe(raw)
        except ConfigError:  # unknown types lacking even the common fields
            outcome["skipped: unsupported type"] += 1
            continue
        if not arch.supported:
            outcome["skipped: unsupported type"] += 1
            continue
        try:
            problem = compare(raw)
        except Refused as exc:
            outcome["skipped: transformers refuses"] += 1
            outcome[f"  {rel}: {exc}"[:160]] += 1
            continue
        outcome["compared"] += 1
        if problem:
            failures.append(f"{rel}: {problem}")
    record_property("corpus_outcome", dict(outcome))
    print("\ncorpus parameter check:", json.dumps(dict(outcome), indent=1))
    assert not failures, "\n".join(failures)
    assert outcome["compared"] >= 150, outcome


@pytest.mark.parametrize("model_type", sorted(configgen.FAMILIES))
def test_generated_configs_match_transformers_exactly(model_type: str) -> None:
    r = configgen.random.Random(f"exact-{model_type}")
    failures = []
    for _ in range(GENERATED // len(configgen.FAMILIES)):
        cfg = configgen.generate(model_type, r)
        problem = compare(cfg)
        if problem:
            failures.append(f"{cfg}\n  {problem}")
    assert not failures, "\n".join(failures)


def test_generated_configs_cover_every_supported_family() -> None:
    from estimator.families import TABLE

    generated = set(configgen.FAMILIES)
    # Remote-code types have no transformers class to build: test_parameters_remote_code.py
    # checks them against their published checkpoint index instead.
    remote_code = {"qwen", "stablelm_epoch"}
    legacy_names = {"RefinedWeb", "RefinedWebModel", "rafale"}  # read by their families
    assert set(TABLE) - generated <= legacy_names | remote_code


def test_breakdown_places_every_parameter_once() -> None:
    r = configgen.random.Random(7)
    for model_type in sorted(configgen.FAMILIES):
        arch = describe(configgen.generate(model_type, r))
        breakdown = parameter_breakdown(arch)
        assert breakdown.total == arch.total_parameters
        assert len(breakdown.blocks) == arch.num_layers


def test_mixtral_active_parameters_are_two_of_eight_experts() -> None:
    # Mixtral-8x7B as published: 46.7B total, 12.9B active (Mistral AI's model card).
    config = {
        "model_type": "mixtral",
        "architectures": ["MixtralForCausalLM"],
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "num_local_experts": 8,
        "num_experts_per_tok": 2,
        "vocab_size": 32000,
    }
    arch = describe(config)
    expert = 3 * 4096 * 14336  # gate, up and down of one expert
    assert arch.total_parameters - active_parameters(arch) == 32 * 6 * expert
    assert round(arch.total_parameters / 1e9, 1) == 46.7
    assert round(active_parameters(arch) / 1e9, 1) == 12.9


def test_dense_model_is_fully_active() -> None:
    arch = describe(configgen.generate("llama", configgen.random.Random(3)))
    assert active_parameters(arch) == arch.total_parameters


@pytest.mark.parametrize(
    ("config", "family"),
    [
        ({"n_ctx": 64, "n_embd": 32, "n_head": 2, "n_layer": 2, "n_positions": 64,
          "vocab_size": 100}, "gpt2"),
        ({"vocab_size": 100, "max_position_embeddings": 64, "n_layers": 2, "n_heads": 2,
          "dim": 32, "hidden_dim": 48}, "distilbert"),
        ({"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2,
          "intermediate_size": 48, "type_vocab_size": 2, "vocab_size": 100,
          "max_position_embeddings": 64}, "bert"),
        ({"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2,
          "intermediate_size": 48, "type_vocab_size": 1, "vocab_size": 100,
          "max_position_embeddings": 514}, "roberta"),
    ],
)  # fmt: skip
def test_configs_from_before_model_type_are_read_by_their_keys(
    config: dict[str, Any], family: str
) -> None:
    """2019 configs (early bert-base-*, gpt2, distilbert revisions) name neither model_type
    nor architectures; their key sets say which family, and the count is exact for it."""
    arch = describe(config)
    assert arch.supported and arch.model_type == family
    assert compare(config) is None
