"""Plans stored before the converter read back and write out byte for byte.

``data/stored_plans.json.gz`` holds 20 Plan JSON documents as the daemon stored
them (``json.dumps`` of ``Plan.to_json()``), written by the field-by-field
serialiser that ``estimator.plan_json`` replaced: 20 configs spread over the
hub corpus, half with the serving verdicts the tracker stores (``serving``), a
third at a LoRA workload, five with a checkpoint comparison from the
revision's safetensors index.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from estimator import Plan, PlanJsonError
from estimator.plan_json import from_json, to_json

WORKLOAD_FIELDS_ADDED_SINCE = {"fsdp_frozen_reshard": True, "load_dtype_auto": False}
"""Workload fields newer than the stored documents: read back at their defaults, written out."""

STORED = json.loads(
    gzip.decompress((Path(__file__).parent / "data" / "stored_plans.json.gz").read_bytes())
)


def test_the_stored_documents_cover_every_section() -> None:
    documents = [json.loads(text) for text in STORED.values()]
    assert len(documents) == 20
    assert sum("serving" in d for d in documents) == 10
    assert sum(d["parameters"]["checkpoint"] is not None for d in documents) == 5
    assert {d["workload"]["method"] for d in documents} == {"full", "lora"}


@pytest.mark.parametrize("repo", sorted(STORED))
def test_a_stored_plan_is_written_back_byte_for_byte(repo: str) -> None:
    text = STORED[repo]
    typed = from_json(json.loads(text))
    assert isinstance(typed, Plan)
    written = to_json(typed)
    assert from_json(json.loads(json.dumps(written))) == typed
    for name, default in WORKLOAD_FIELDS_ADDED_SINCE.items():
        assert written["workload"].pop(name) == default
    assert json.dumps(written) == text


def test_an_int_stored_in_a_float_field_stays_an_int() -> None:
    text = next(iter(STORED.values()))
    document = json.loads(text)
    document["cost"]["usd"] = 3
    document["workload"].update(WORKLOAD_FIELDS_ADDED_SINCE)
    assert to_json(from_json(document))["cost"]["usd"] == 3
    same = json.dumps(to_json(from_json(document)), sort_keys=True)
    assert same == json.dumps(document, sort_keys=True)  # "3", not "3.0"


@pytest.mark.parametrize(
    ("breakage", "named"),
    [
        (lambda d: d["cost"].update(tokens="512"), "expected float"),
        (lambda d: d["structure"][0].update(shape=[1, "2"]), r"structure\[0\]"),
        (lambda d: d["cards"][0]["methods"]["full"].update(fits=1), "expected bool"),
        (lambda d: d["memory"]["full"].update(extra=1), "extra"),
    ],
)
def test_a_wrong_value_is_a_plan_json_error_naming_it(breakage, named: str) -> None:  # type: ignore[no-untyped-def]
    document = json.loads(next(iter(STORED.values())))
    breakage(document)
    with pytest.raises(PlanJsonError, match=named):
        from_json(document)
