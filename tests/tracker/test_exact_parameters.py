"""The meta-device path: types no family module knows get transformers' own parameters.

The oracle is tests.estimator.reference (transformers building the same config on the
meta device through its own code path); the estimate must list every tensor with the
same shape, and plan() must run on it.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path

import pytest

import tracker.revision.exact_parameters as exact_parameters
from estimator.errors import ConfigError
from estimator.families import describe
from estimator.plan import plan
from tests.estimator.reference import Refused, reference_shapes
from tests.estimator.test_parameters_exact import corpus_configs
from tracker.untrusted.isolation import IsolatedPool, Limits

# OLMo 2 has no family module: describe() can only get it from transformers.
OLMO2 = {
    "model_type": "olmo2",
    "architectures": ["Olmo2ForCausalLM"],
    "vocab_size": 512,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 1024,
}


def test_unknown_type_gets_transformers_parameters_exactly() -> None:
    arch = describe(OLMO2, exact_parameters.meta_parameters)
    assert arch.family == "meta-device" and arch.supported
    shapes = {t.name: t.shape for t in arch.tensors}
    assert shapes == reference_shapes(OLMO2, arch)
    assert arch.num_layers == 4
    # identical layers are stamped from one template, as the families stamp them
    assert len(arch.layer_templates) == 1
    assert arch.total_parameters == sum(_numel(s) for s in shapes.values())


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def test_without_the_extra_the_generic_estimate_says_how_to_get_the_exact_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(exact_parameters, "available", lambda: False)
    assert exact_parameters.builder() is None
    result = plan(OLMO2, exact=exact_parameters.builder())
    finding = next(f for f in result.findings if f.id == "unsupported-model-type")
    assert exact_parameters.INSTALL_HINT in finding.fix
    assert dict(result.model)["family"] == "generic"


def test_one_build_per_config_hash(builds: Counter[str]) -> None:
    config = {**OLMO2, "num_hidden_layers": 2}
    first = exact_parameters.meta_build(config)
    again = exact_parameters.meta_build(dict(reversed(list(config.items()))))
    assert builds["build"] == 1 and again is first
    assert first.modules[0] == ("", "Olmo2ForCausalLM")


def test_a_config_transformers_refuses_keeps_the_generic_estimate() -> None:
    config = {**OLMO2, "model_type": "no-such-type"}
    assert exact_parameters.meta_parameters(config) is None
    assert describe(config, exact_parameters.meta_parameters).family == "generic"


def test_published_int_for_float_is_coerced_like_older_transformers() -> None:
    """grounding-dino's class_cost: 1 is refused by transformers 5's strict validation."""
    built = exact_parameters.meta_build(
        {
            "model_type": "vit",
            "architectures": ["ViTModel"],
            "num_hidden_layers": 1,
            "hidden_size": 32,
            "num_attention_heads": 2,
            "intermediate_size": 8,
            "hidden_dropout_prob": 0,
        }
    )
    assert built.refused is None and built.parameters


def test_every_corpus_config_of_an_unknown_type_is_exact_with_the_extra(
    corpus_dir: Path, record_property: pytest.RecordProperty
) -> None:
    outcome: Counter[str] = Counter()
    failures = []
    started = time.perf_counter()
    for rel, raw in corpus_configs(corpus_dir):
        if not isinstance(raw, dict):
            continue
        try:
            if describe(raw).supported:
                continue
        except ConfigError:
            pass
        try:
            arch = describe(raw, exact_parameters.meta_parameters)
        except ConfigError as exc:
            outcome[f"no exact count: {exc}"[:120]] += 1
            continue
        if arch.family != "meta-device":
            reason = exact_parameters.meta_build(raw).refused or ""
            outcome[f"no exact count: {reason}"[:120]] += 1
            continue
        try:
            expected = reference_shapes(raw, arch)
        except Refused as exc:
            expected = dict(exact_parameters.meta_build(raw).parameters)
            outcome[f"reference refuses: {exc}"[:80]] += 1
        if {t.name: t.shape for t in arch.tensors} != expected:
            failures.append(rel)
        plan(raw, exact=exact_parameters.meta_parameters)
        outcome["exact"] += 1
    outcome["seconds"] = round(time.perf_counter() - started)
    record_property("meta_outcome", dict(outcome))
    print("\nmeta-device corpus check:", json.dumps(dict(outcome), indent=1))
    assert not failures, failures
    # 21 measured: SAM x6, Grounding DINO x9 (two with a pre-release text type dropped),
    # SpeechT5 x3, LayoutLMv3, Gemma 4, Idefics3
    assert outcome["exact"] >= 21, outcome


def test_a_meta_build_leaves_the_config_it_was_given_as_published(corpus_dir: Path) -> None:
    path = corpus_dir / "google/gemma-4-31B-it/419b2efe421994fdfd3394e621983d4cc511cd4f/config.json"
    config = json.loads(path.read_text())
    assert exact_parameters.meta_build(config).refused is None
    assert config == json.loads(path.read_text())
    assert config["vision_config"]["rope_parameters"]["rope_type"] == "default"


# XGLM has no family module; 20,000 of its layers took 29 s of CPU to build on the meta device.
LAYER_BOMB = {
    "model_type": "xglm",
    "architectures": ["XGLMForCausalLM"],
    "num_layers": 20_000,
    "d_model": 64,
    "attention_heads": 4,
    "ffn_dim": 64,
    "vocab_size": 100,
}


def _rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_a_config_asking_for_endless_layers_is_stopped_by_the_os_not_built(
    monkeypatch: pytest.MonkeyPatch, builds: Counter[str]
) -> None:
    tight = IsolatedPool(
        Limits(memory_bytes=exact_parameters.BUILD_LIMITS.memory_bytes, cpu_seconds=2),
        max_workers=1,
        preload=("torch", "transformers", "tracker.revision.exact_parameters"),
    )
    monkeypatch.setattr(exact_parameters, "build_pool", lambda: tight)
    before = _rss_kib()
    started = time.perf_counter()
    with tight:
        built = exact_parameters.meta_build(LAYER_BOMB)
        took = time.perf_counter() - started
        again = exact_parameters.meta_build(LAYER_BOMB)
    assert built.parameters == () and built.refused is not None
    assert built.refused == "meta-device build stopped: CPU time limit reached"
    assert took < 15, took  # the worker's start (torch's import) and 2 s of CPU
    assert again is built and builds["build"] == 1  # the refusal is kept, not retried
    assert tight.started == 1 and tight.killed == 0  # SIGXCPU ended it, not the deadline
    assert _rss_kib() - before < 100 * 1024  # the layers were never built in this process
    # The generic estimate it falls back to names the field that is out of bounds.
    with pytest.raises(ConfigError, match=r"num_layers \(20000\) is implausibly large"):
        plan(LAYER_BOMB, exact=exact_parameters.meta_parameters)


def test_builds_run_in_a_worker_that_leaves_once_idle(monkeypatch: pytest.MonkeyPatch) -> None:
    pool = exact_parameters.build_pool()
    assert pool is exact_parameters.build_pool() and pool.limits == exact_parameters.BUILD_LIMITS
    assert pool.idle_seconds == exact_parameters.BUILD_WORKER_IDLE_SECONDS
    quick = IsolatedPool(pool.limits, max_workers=1, preload=pool.preload, idle_seconds=0.5)
    monkeypatch.setattr(exact_parameters, "build_pool", lambda: quick)
    with quick:
        for layers in (3, 5):  # a burst reuses one worker
            assert (
                exact_parameters.meta_build({**OLMO2, "num_hidden_layers": layers}).refused is None
            )
        assert quick.started == 1 and len(quick.worker_pids()) == 1
        deadline = time.monotonic() + 10
        while quick.worker_pids() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert quick.worker_pids() == []  # then it leaves, and torch's memory with it
        assert quick.started == 1  # nobody started another
