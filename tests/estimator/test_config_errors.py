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

from estimator.errors import ConfigError
from estimator.families import describe
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
        ({"model_type": "no-such-model"}, "config.json: hidden_size is missing"),
        (
            {"n_embd": 64, "n_layer": 2, "vocab_size": 10},
            "config.json: num_attention_heads is missing",
        ),
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
    assert time.perf_counter() - start < 0.05


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


def test_text_config_errors_name_the_nested_field() -> None:
    with pytest.raises(ConfigError, match=r"^config.json: text_config: vocab_size is missing"):
        describe(
            {
                "model_type": "some_vlm",
                "text_config": {
                    "hidden_size": 64,
                    "num_hidden_layers": 1,
                    "num_attention_heads": 4,
                },
            }
        )
