"""A config lacking a field the estimate needs still gets a Plan: parameters where they do
not depend on the field, and a ``config-field-missing`` finding naming it.

The configs are real corpus revisions of types no family module knows (so the generic
estimate reads them), each with one field taken out, and two revisions published without
the fields (Ultravox names its text model only by repo id; an RMBG revision is ``{}``).
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from estimator import ConfigError, Plan, Workload, plan
from estimator.workload import Method

LAYOUTLMV3 = "Theivaprakasham/layoutlmv3-finetuned-invoice/62af8a11c4cdcfa766aa7a2a1651266607451b28"
GEMMA4 = "google/gemma-4-31B-it/419b2efe421994fdfd3394e621983d4cc511cd4f"
ULTRAVOX = "fixie-ai/ultravox-v0_6-llama-3_1-8b/b4fbfcc9fb1788e5b520a909bdd766d41053aa71"
RMBG_EMPTY = "briaai/RMBG-1.4/3dbbb5427ede0f0ac1d859cdb1e6eb0333a7d650"
SERVE = Workload(method="serve", batch=1, seq_len=1024)
SCHEMA = json.loads(resources.files("estimator").joinpath("schema/plan.schema.json").read_text())


def _config(corpus_dir: Path, revision: str) -> dict[str, Any]:
    config: dict[str, Any] = json.loads((corpus_dir / revision / "config.json").read_text())
    return config


def _without(config: dict[str, Any], field: str) -> dict[str, Any]:
    if "." in field:
        outer, inner = field.split(".")
        return {**config, outer: {k: v for k, v in config[outer].items() if k != inner}}
    return {k: v for k, v in config.items() if k != field}


def _partial(config: dict[str, Any], workload: Workload = SERVE) -> tuple[Plan, str]:
    """The plan, checked against the schema and for its JSON round trip, and the message
    of its config-field-missing finding."""
    p = plan(config, workload)
    document = p.to_json()
    errors = list(jsonschema.Draft202012Validator(SCHEMA).iter_errors(document))
    assert not errors, errors[0].message
    assert Plan.from_json(json.loads(json.dumps(document))) == p
    finding = next(f for f in p.findings if f.id == "config-field-missing")
    assert finding.severity == "warning"
    return p, finding.message


def _total(p: Plan) -> int:
    total: int = dict(p.parameters)["total"]
    return total


def _kv_bytes(p: Plan) -> int:
    kv: int = dict(p.selected.breakdown)["kv_cache"]
    return kv


def test_the_full_config_has_no_finding(corpus_dir: Path) -> None:
    p = plan(_config(corpus_dir, LAYOUTLMV3), SERVE)
    assert "config-field-missing" not in {f.id for f in p.findings}
    # the generic Llama-shaped decoder: untied embedding and head, q/k/v/o, SwiGLU, 2 norms
    h, i, v, layers = 768, 3072, 50265, 12
    assert _total(p) == 2 * v * h + layers * (4 * h * h + 3 * h * i + 2 * h) + h == 190_472_448


def test_without_the_head_count_parameters_and_kv_cache_are_unchanged(corpus_dir: Path) -> None:
    full = plan(_config(corpus_dir, LAYOUTLMV3), SERVE)
    p, message = _partial(_without(_config(corpus_dir, LAYOUTLMV3), "num_attention_heads"))
    assert message.startswith("config.json lacks num_attention_heads,")
    assert "attention-score memory counts one head" in message
    assert _total(p) == _total(full) == 190_472_448
    assert _kv_bytes(p) == _kv_bytes(full) > 0


def test_without_the_vocabulary_the_embeddings_and_head_are_not_counted(corpus_dir: Path) -> None:
    full = plan(_config(corpus_dir, LAYOUTLMV3), SERVE)
    p, message = _partial(_without(_config(corpus_dir, LAYOUTLMV3), "vocab_size"))
    assert message.startswith("config.json lacks vocab_size,")
    # untied: the input embedding and the LM head, 50265 x 768 each
    assert _total(full) - _total(p) == 2 * 50265 * 768
    assert dict(p.model)["vocab_size"] == 0


def test_without_the_layer_count_only_the_embeddings_and_head_remain(corpus_dir: Path) -> None:
    full = plan(_config(corpus_dir, LAYOUTLMV3), SERVE)
    p, message = _partial(_without(_config(corpus_dir, LAYOUTLMV3), "num_hidden_layers"))
    assert "num_hidden_layers: no layer is counted" in message
    assert dict(p.parameters)["blocks"] == 0 and dict(p.model)["num_layers"] == 0
    assert _total(p) == _total(full) - dict(full.parameters)["blocks"]
    assert _kv_bytes(p) == 0


def test_without_the_width_nothing_is_estimated_and_the_refusal_says_why(corpus_dir: Path) -> None:
    with pytest.raises(ConfigError, match="could not estimate: it gives no layer width") as caught:
        plan(_without(_config(corpus_dir, LAYOUTLMV3), "hidden_size"))
    assert caught.value.field == "hidden_size"


def test_a_field_missing_from_text_config_is_named_by_its_path(corpus_dir: Path) -> None:
    full = plan(_config(corpus_dir, GEMMA4), SERVE)
    p, message = _partial(_without(_config(corpus_dir, GEMMA4), "text_config.vocab_size"))
    assert message.startswith("config.json lacks text_config.vocab_size,")
    # Gemma 4's text model ties its head to the 262144 x 5376 embedding: counted once
    assert _total(full) - _total(p) == 262144 * 5376


@pytest.mark.parametrize("method", ["serve", "lora", "full"])
def test_ultravox_as_published_names_the_fields_its_text_model_id_hides(
    corpus_dir: Path, method: Method
) -> None:
    config = _config(corpus_dir, ULTRAVOX)
    assert config["text_model_id"] == "meta-llama/Llama-3.1-8B-Instruct"
    p, message = _partial(config, Workload(method=method, batch=1, seq_len=512))
    assert message.startswith("config.json lacks num_hidden_layers, num_attention_heads,")
    # UltravoxModel reads as a base model (no LM head): the 128256 x 4096 embedding, one norm
    assert dict(p.model)["head"] == "base"
    assert _total(p) == 128256 * 4096 + 4096


def test_an_empty_config_as_published_could_not_be_estimated_not_zero(corpus_dir: Path) -> None:
    config = _config(corpus_dir, RMBG_EMPTY)
    assert config == {}
    with pytest.raises(ConfigError, match="could not estimate"):
        plan(config)
