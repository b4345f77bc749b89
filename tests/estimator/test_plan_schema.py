"""Every corpus config's Plan validates against the shipped JSON Schema."""

from __future__ import annotations

import contextlib
import json
from importlib import resources

import jsonschema
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from estimator import EstimateError, Workload, plan

SCHEMA = json.loads(resources.files("estimator").joinpath("schema/plan.schema.json").read_text())


def corpus_configs(corpus_dir) -> list[dict]:  # type: ignore[no-untyped-def]
    out = []
    for path in sorted(corpus_dir.rglob("config.json")):
        try:
            raw = json.loads(path.read_text())
        except json.JSONDecodeError:
            continue
        if isinstance(raw, dict):
            out.append(raw)
    return out


def test_plans_of_every_corpus_config_validate_against_the_schema(corpus_dir) -> None:  # type: ignore[no-untyped-def]
    validator = jsonschema.Draft202012Validator(SCHEMA)
    validated = refused = 0
    for config in corpus_configs(corpus_dir):
        try:
            data = plan(config, Workload(method="lora", batch=2, seq_len=256)).to_json()
        except EstimateError:
            refused += 1
            continue
        errors = sorted(validator.iter_errors(data), key=str)
        assert not errors, f"{config.get('_name_or_path')}: {errors[0].message}"
        json.dumps(data)
        validated += 1
    assert validated >= 200, (validated, refused)


MUTATIONS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**13), max_value=10**13),
    st.floats(allow_nan=True),
    st.text(max_size=5),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


@settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_plan_on_mutated_corpus_configs_raises_only_estimate_errors(corpus_dir, data) -> None:  # type: ignore[no-untyped-def]
    configs = _configs(corpus_dir)
    config = dict(data.draw(st.sampled_from(configs)))
    for _ in range(data.draw(st.integers(1, 3))):
        key = data.draw(st.sampled_from(sorted(config) or ["hidden_size"]))
        config[key] = data.draw(MUTATIONS)
    with contextlib.suppress(EstimateError):
        plan(
            config, Workload(method=data.draw(st.sampled_from(["full", "lora", "qlora", "serve"])))
        )


_CACHE: list[dict] = []


def _configs(corpus_dir) -> list[dict]:  # type: ignore[no-untyped-def]
    if not _CACHE:
        _CACHE.extend(corpus_configs(corpus_dir))
    return _CACHE
