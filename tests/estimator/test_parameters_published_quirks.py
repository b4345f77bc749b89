"""Configs as they were published before transformers 5's strict validation still get an
exact count: each corpus revision below was refused by transformers 5.x as published.

The oracles are independent of the repair: the repo's own later revision (grounding-dino),
the published checkpoint index (Mistral's pre-release name), and the family module that
reads the config without transformers (whisper).
"""

from __future__ import annotations

import json
from math import prod
from pathlib import Path
from typing import Any

import tracker.revision.exact_parameters as exact_parameters
from estimator.families import describe
from tests.estimator.reference import estimated_shapes, reference_shapes


def _config(corpus_dir: Path, repo: str, revision: str) -> dict[str, Any]:
    config: dict[str, Any] = json.loads((corpus_dir / repo / revision / "config.json").read_text())
    return config


def _total(build: exact_parameters.MetaBuild) -> int:
    return sum(prod(shape) for _, shape in build.parameters)


def test_a_pre_release_text_sub_config_gets_the_later_revisions_bert(corpus_dir: Path) -> None:
    """grounding-dino-tiny's first revisions name ``grounding-dino-text-prenet`` as the
    text model; the revision that spells it out names BERT at its defaults."""
    repo = "IDEA-Research/grounding-dino-tiny"
    early = _config(corpus_dir, repo, "43032ec967ada6c1831294945b758aa9b7cf1a54")
    later = _config(corpus_dir, repo, "c254d1f282bf348ab7f5a27d5cf90531eeba69be")
    assert early["text_config"] == {"model_type": "grounding-dino-text-prenet"}
    assert later["text_config"] == {"model_type": "bert"}
    built = exact_parameters.meta_build(early)
    assert built.refused is None
    assert dict(built.parameters) == dict(exact_parameters.meta_build(later).parameters)
    assert _total(built) == 172_250_626
    arch = describe(early, exact_parameters.meta_parameters)
    assert arch.family == "meta-device" and arch.total_parameters == 172_250_626


def test_a_list_of_decoder_start_token_ids_builds_the_same_whisper(corpus_dir: Path) -> None:
    raw = _config(corpus_dir, "openai/whisper-base", "2a6d82280c1a743cb4d47bd1465e3895f304e60d")
    assert raw["decoder_start_token_id"] == [50258, 50259, 50359]
    built = exact_parameters.meta_build(raw)
    assert built.refused is None
    arch = describe(raw)
    assert arch.family == "whisper"
    assert estimated_shapes(arch) == dict(built.parameters)
    assert arch.total_parameters == _total(built) == 72_593_920


def test_mistral_7b_under_its_pre_release_name_is_mistral(corpus_dir: Path) -> None:
    """The first Mistral-7B-v0.1 revision says ``rafale``; its bf16 index holds 2 bytes a
    parameter, so total_size / 2 is the published parameter count."""
    revision = "c2a147dc1311256b4072885a9ea67e4bf51bd926"
    raw = _config(corpus_dir, "mistralai/Mistral-7B-v0.1", revision)
    index = json.loads(
        (
            corpus_dir / "mistralai/Mistral-7B-v0.1" / revision / "pytorch_model.bin.index.json"
        ).read_text()
    )
    arch = describe(raw)
    assert (arch.model_type, arch.family, arch.supported) == ("rafale", "mistral", True)
    assert arch.total_parameters == index["metadata"]["total_size"] // 2 == 7_241_732_096
    assert estimated_shapes(arch) == reference_shapes(raw, arch)
