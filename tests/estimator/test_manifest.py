"""Weight manifests: checkpoint scalars from headers or an index, and the delta explained."""

from __future__ import annotations

import json

import pytest

from estimator import ManifestError, WeightManifest, plan


def test_index_total_size_matches_the_exact_parameter_count(corpus_dir) -> None:  # type: ignore[no-untyped-def]
    repo = corpus_dir / "meta-llama/Meta-Llama-3-8B/unknown"
    config = json.loads((repo / "config.json").read_text())
    index = json.loads((repo / "model.safetensors.index.json").read_text())
    p = plan(config, manifest=WeightManifest.from_index(index)).to_json()
    # The index's total_size is what the publisher wrote: bf16, 2 bytes a scalar.
    assert p["parameters"]["checkpoint_scalars"] == index["metadata"]["total_size"] // 2
    assert p["parameters"]["checkpoint"]["delta_percent"] == pytest.approx(0.0)


def test_saved_position_ids_buffer_is_named_in_the_delta(corpus_dir) -> None:  # type: ignore[no-untyped-def]
    config = json.loads(
        sorted((corpus_dir / "google-bert/bert-base-uncased").glob("*/config.json"))[-1].read_text()
    )
    total = plan(config).to_json()["parameters"]["total"]
    header = {
        "bert.weights": {"dtype": "F32", "shape": [total], "data_offsets": [0, 4 * total]},
        "bert.embeddings.position_ids": {"dtype": "I64", "shape": [1, 512], "data_offsets": [0, 1]},
    }
    ck = plan(config, manifest=WeightManifest.from_headers([header])).to_json()["parameters"]
    assert ck["checkpoint_scalars"] == total + 512
    assert ck["checkpoint"]["delta_percent"] == pytest.approx(100 * 512 / total)
    assert any("buffer" in e for e in ck["checkpoint"]["explanations"])


def test_malformed_manifests_raise_manifest_error() -> None:
    with pytest.raises(ManifestError, match="shape"):
        WeightManifest.from_headers([{"w": {"dtype": "F32", "shape": [-1]}}])
    with pytest.raises(ManifestError, match="weight_map"):
        WeightManifest.from_index({"metadata": {}})
