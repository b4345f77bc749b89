"""Bad config.json input gets one ConfigError naming the field, never another exception."""

from __future__ import annotations

import copy
import json
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from estimator import plan
from estimator.config import Config
from estimator.errors import ConfigError, EstimateError
from estimator.families import describe, generic
from estimator.report import render_markdown, render_terminal
from estimator.structure import structure

LLAMA: dict[str, Any] = {
    "model_type": "llama",
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 512,
    "intermediate_size": 1024,
    "num_hidden_layers": 4,
    "num_attention_heads": 8,
    "num_key_value_heads": 8,
    "vocab_size": 1000,
}


def with_(**changes: Any) -> dict[str, Any]:
    cfg = dict(LLAMA)
    cfg.update(changes)
    return cfg


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ([1, 2], "config.json: expected a JSON object, got a list"),
        ("llama", "config.json: expected a JSON object, got a string"),
        (None, "config.json: expected a JSON object, got null"),
        (
            with_(num_attention_heads=7),
            "config.json: num_attention_heads (7) must divide hidden_size (512)",
        ),
        (
            with_(num_key_value_heads=3),
            "config.json: num_key_value_heads (3) must divide num_attention_heads (8)",
        ),
        (
            with_(num_hidden_layers="4"),
            "config.json: num_hidden_layers must be an integer, got a string",
        ),
        (
            with_(num_hidden_layers=True),
            "config.json: num_hidden_layers must be an integer, got a boolean",
        ),
        (
            with_(num_hidden_layers=2.5),
            "config.json: num_hidden_layers must be an integer, got 2.5",
        ),
        (with_(num_hidden_layers=0), "config.json: num_hidden_layers (0) must be at least 1"),
        (with_(vocab_size=-5), "config.json: vocab_size (-5) must be at least 1"),
        (
            with_(num_hidden_layers=10**9),
            "config.json: num_hidden_layers (1000000000) is implausibly large",
        ),
        (with_(vocab_size=10**12), "config.json: vocab_size (1000000000000) is implausibly large"),
        (
            with_(tie_word_embeddings="yes"),
            "config.json: tie_word_embeddings must be true or false, got a string",
        ),
        (
            with_(architectures="LlamaForCausalLM"),
            "config.json: architectures must be a list of strings",
        ),
        (with_(model_type=3), "config.json: model_type must be a string, got a number"),
    ],
)
def test_bad_config_raises_config_error_naming_the_field(config: Any, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        describe(config)
    assert str(info.value).startswith(message)


def test_error_names_the_field_programmatically() -> None:
    with pytest.raises(ConfigError) as info:
        describe(with_(num_hidden_layers=-1))
    assert info.value.field == "num_hidden_layers"


def test_layer_types_must_match_the_layer_count() -> None:
    cfg = with_(
        model_type="mistral",
        architectures=["MistralForCausalLM"],
        layer_types=["full_attention"] * 3,
    )
    with pytest.raises(ConfigError, match=r"layer_types has 3 entries, expected 4"):
        describe(cfg)


@pytest.mark.parametrize(
    "field", ["num_hidden_layers", "vocab_size", "hidden_size", "intermediate_size"]
)
def test_absurd_sizes_are_refused_before_any_proportional_work(field: str) -> None:
    start = time.perf_counter()
    with pytest.raises(ConfigError, match=field):
        describe(with_(**{field: 10**12}))
    assert time.perf_counter() - start < 0.5  # the proportional work at 10**12 would take hours


def test_unknown_model_type_gets_a_generic_unsupported_estimate() -> None:
    arch = describe(
        {
            "model_type": "mystery",
            "hidden_size": 64,
            "n_layer": 2,
            "num_attention_heads": 4,
            "vocab_size": 100,
        }
    )
    assert not arch.supported
    assert arch.num_layers == 2
    # Llama-shaped: embeddings, 4 h*h attention + 3 h*4h MLP + 2 norms per layer, norm, head.
    h, v = 64, 100
    assert arch.total_parameters == v * h + 2 * (4 * h * h + 3 * h * 4 * h + 2 * h) + h + v * h


# --- property test: mutated corpus configs never raise anything but ConfigError ---------------

JUNK = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**13), max_value=10**13)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=8,
)
INTERESTING_KEYS = (
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "intermediate_size",
    "vocab_size",
    "layer_types",
    "sliding_window",
    "architectures",
    "model_type",
    "id2label",
    "rope_scaling",
    "rope_parameters",
    "num_local_experts",
    "num_experts",
    "n_routed_experts",
    "q_lora_rank",
    "kv_lora_rank",
    "first_k_dense_replace",
    "mlp_only_layers",
    "pos_att_type",
    "feed_forward_proj",
    "n_embd",
    "n_layer",
    "n_head",
    "d_model",
    "tie_word_embeddings",
    "torch_dtype",
)


def _corpus(corpus_dir: Path) -> list[dict[str, Any]]:
    manifest = json.loads((corpus_dir / "MANIFEST.json").read_text())
    configs = []
    for entry in manifest:
        if entry["file"] == "config.json":
            path = corpus_dir / entry["repo_id"] / (entry["revision"] or "unknown") / "config.json"
            try:
                raw = json.loads(path.read_text())
            except json.JSONDecodeError:
                continue
            if isinstance(raw, dict):
                configs.append(raw)
    return configs


@pytest.fixture(scope="module")
def corpus_configs(corpus_dir: Path) -> list[dict[str, Any]]:
    return _corpus(corpus_dir)


mutation = st.tuples(
    st.sampled_from(["drop", "set", "set"]),
    st.one_of(st.sampled_from(INTERESTING_KEYS), st.integers(min_value=0, max_value=200)),
    JUNK,
)


@pytest.mark.slow  # corpus-wide: over 20 s
@settings(
    max_examples=2000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
)
@given(index=st.integers(min_value=0), mutations=st.lists(mutation, min_size=1, max_size=4))
def test_mutated_corpus_configs_raise_only_config_error(
    corpus_configs: list[dict[str, Any]], index: int, mutations: list[tuple[str, Any, Any]]
) -> None:
    cfg = copy.deepcopy(corpus_configs[index % len(corpus_configs)])
    for action, key, value in mutations:
        if isinstance(key, int):
            keys = sorted(cfg)
            key = keys[key % len(keys)] if keys else "hidden_size"
        if action == "drop":
            cfg.pop(key, None)
        else:
            cfg[key] = value
    try:
        arch = describe(cfg)
    except ConfigError as exc:
        assert str(exc).startswith("config.json: ")
        return
    assert arch.total_parameters >= 0
    assert sum(node.parameters for node in structure(arch, 16)) == arch.total_parameters


def test_multimodal_config_is_estimated_from_its_text_config() -> None:
    text = {
        "hidden_size": 64,
        "num_hidden_layers": 3,
        "num_attention_heads": 4,
        "intermediate_size": 128,
        "vocab_size": 100,
    }
    arch = describe({"model_type": "some_vlm", "text_config": text})
    assert not arch.supported
    assert (arch.num_layers, arch.hidden_size, arch.vocab_size) == (3, 64, 100)


def test_a_missing_text_config_field_is_named_by_its_path_not_raised() -> None:
    """A missing field is a partial plan's finding (tests/estimator/test_partial_plans.py)."""
    config = {
        "model_type": "some_vlm",
        "text_config": {"hidden_size": 64, "num_hidden_layers": 1, "num_attention_heads": 4},
    }
    arch = describe(config)
    assert (arch.family, arch.vocab_size, arch.num_layers) == ("generic", 0, 1)
    assert generic.missing_fields(Config(config)) == ("text_config.vocab_size",)


@pytest.mark.parametrize(
    ("config", "missing"),
    [
        ({"model_type": "no-such-model"}, ("hidden_size", "num_hidden_layers",
                                           "num_attention_heads", "vocab_size")),
        ({"n_embd": 64, "n_layer": 2, "vocab_size": 10}, ("num_attention_heads",)),
    ],
)  # fmt: skip
def test_fields_the_generic_estimate_lacks_are_listed(
    config: dict[str, Any], missing: tuple[str, ...]
) -> None:
    assert not describe(config).supported
    assert generic.missing_fields(Config(config)) == missing


# --- hostile numbers: huge, non-finite, beyond float range, overlong strings -----------------


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (
            with_(hidden_size=10**4999),
            "config.json: hidden_size (a 5,000-digit integer) is not a plausible size "
            "(limit 1048576)",
        ),
        (
            with_(vocab_size=-(10**4999)),
            "config.json: vocab_size (a 5,000-digit negative integer) must be at least 1",
        ),
        (
            with_(num_hidden_layers=2**70),
            "config.json: num_hidden_layers (1180591620717411303424) is implausibly large",
        ),
        (
            with_(hidden_size=float("inf")),
            "config.json: hidden_size must be an integer, got Infinity",
        ),
        (with_(vocab_size=float("nan")), "config.json: vocab_size must be an integer, got NaN"),
        (
            with_(num_attention_heads=float("-inf")),
            "config.json: num_attention_heads must be an integer, got -Infinity",
        ),
        (with_(hidden_size=1e300), "config.json: hidden_size (1e+300) is implausibly large"),
        (
            with_(rope_theta=10**400),
            "config.json: rope_theta (a 401-digit integer) is beyond the range of a number",
        ),
        (
            with_(rope_theta=float("nan")),
            "config.json: rope_theta must be a finite number, got NaN",
        ),
        (
            with_(rope_scaling={"rope_type": "linear", "factor": 1e308}),
            "config.json: rope_scaling: factor (1e+308) is not a plausible scaling factor",
        ),
        (
            with_(rope_scaling={"rope_type": "linear", "factor": -2.0}),
            "config.json: rope_scaling: factor (-2.0) is not a plausible scaling factor",
        ),
        (
            with_(rope_scaling={"factor": 2.0, "original_max_position_embeddings": 2**64}),
            "config.json: rope_scaling: original_max_position_embeddings (18446744073709551616)",
        ),
        (
            with_(rope_parameters={"rope_theta": float("inf")}),
            "config.json: rope_parameters: rope_theta must be a finite number, got Infinity",
        ),
        (
            with_(model_type="x" * 10_000_000),
            "config.json: model_type (a 10,000,000-character string) is not a plausible name",
        ),
        (
            with_(architectures=["L" * 300]),
            "config.json: architectures entry a 300-character string is not a plausible name",
        ),
    ],
)
def test_hostile_numbers_and_strings_raise_config_error_naming_the_key(
    config: Any, message: str
) -> None:
    start = time.perf_counter()
    with pytest.raises(ConfigError) as info:
        plan(config)
    assert str(info.value).startswith(message)
    assert len(str(info.value)) < 200
    assert time.perf_counter() - start < 0.5


def test_rope_scaling_nested_past_the_limit_is_refused() -> None:
    deep: Any = 1
    for _ in range(900):
        deep = [deep]
    with pytest.raises(ConfigError, match=r"^config.json: rope_scaling is nested more than 16"):
        describe(with_(rope_scaling={"rope_type": "linear", "factor": 2.0, "extra": deep}))


HOSTILE_NUMBERS = st.one_of(
    st.integers(),
    st.integers(min_value=0, max_value=6000).map(lambda digits: 10**digits - 1),
    st.integers(min_value=0, max_value=6000).map(lambda digits: -(10**digits)),
    st.sampled_from([2**53 + 1, 2**63, 2**64 + 1, 10**71, 0, -1, 10**9]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([float("nan"), float("inf"), float("-inf"), 1e308, -1e308, 5e-324, 4.5]),
)
NUMERIC_KEYS = (
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "intermediate_size",
    "vocab_size",
    "max_position_embeddings",
    "sliding_window",
    "rope_theta",
    "num_local_experts",
    "num_experts_per_tok",
    "n_embd",
    "n_layer",
    "n_head",
    "n_positions",
    "d_model",
    "num_layers",
    "d_ff",
    "pad_token_id",
    "initializer_range",
    "partial_rotary_factor",
    "rope_scaling.factor",
    "rope_scaling.original_max_position_embeddings",
    "text_config.hidden_size",
)


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
)
@given(
    index=st.integers(min_value=0),
    placed=st.lists(
        st.tuples(st.sampled_from(NUMERIC_KEYS), HOSTILE_NUMBERS), min_size=1, max_size=3
    ),
)
def test_any_number_anywhere_in_a_real_config_is_a_plan_or_one_config_error(
    corpus_configs: list[dict[str, Any]], index: int, placed: list[tuple[str, Any]]
) -> None:
    cfg = copy.deepcopy(corpus_configs[index % len(corpus_configs)])
    for key, number in placed:
        section, _, leaf = key.rpartition(".")
        target = cfg.setdefault(section, {}) if section else cfg
        if isinstance(target, dict):
            target[leaf] = number
    start = time.perf_counter()
    try:
        result = plan(cfg)
    except EstimateError as exc:
        assert str(exc).startswith("config.json: ")
        assert len(str(exc)) < 300  # a 5,000-digit number is described, never printed
        return
    finally:
        assert time.perf_counter() - start < 2.0
    json.dumps(result.to_json(), allow_nan=False)  # the plan is standard JSON
    render_terminal(result)
    render_markdown(result)
