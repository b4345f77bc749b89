"""Remote-code families (Qwen v1, StableLM-Epoch) against what their authors published.

transformers has no class for these model types, so the meta-device oracle of
test_parameters_exact.py cannot build them. The independent source here is the
checkpoint's own ``model.safetensors.index.json`` in the corpus: its weight map lists
every tensor name, and ``metadata.total_size`` is the bytes of all of them at the
config's dtype, so names and the total parameter count are both checked.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from estimator.families import describe

DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4}

# model_type -> (repo, revision holding both config.json and the index, dtype of the upload)
INDEXED = {
    "qwen": ("Qwen/Qwen-7B", "abcb6d6d8ec63ce606f816e2d08072da6309f965", "bfloat16"),
    "stablelm_epoch": (
        "stabilityai/stable-code-3b",
        "0032b1476ed0af85ee6d0ab0c789fa7cef0f1de6",
        "bfloat16",
    ),
}


@pytest.mark.parametrize("model_type", sorted(INDEXED))
def test_remote_code_family_matches_its_checkpoint_index(corpus_dir: Path, model_type: str) -> None:
    repo, revision, dtype = INDEXED[model_type]
    folder = corpus_dir / repo / revision
    config = json.loads((folder / "config.json").read_text())
    index = json.loads((folder / "model.safetensors.index.json").read_text())
    arch = describe(config)
    assert arch.supported and arch.model_type == model_type
    assert {t.name for t in arch.tensors} == set(index["weight_map"])
    assert arch.total_parameters * DTYPE_BYTES[dtype] == index["metadata"]["total_size"]


def test_every_corpus_config_of_a_remote_code_type_is_supported(corpus_dir: Path) -> None:
    """Each revision of these repos describes the same model (their configs did not change
    the shapes), so every one gets the exact count the index confirms."""
    for repo, revision, _ in INDEXED.values():
        reference = describe(json.loads((corpus_dir / repo / revision / "config.json").read_text()))
        for config_path in sorted((corpus_dir / repo).glob("*/config.json")):
            arch = describe(json.loads(config_path.read_text()))
            assert arch.supported, config_path
            assert arch.total_parameters == reference.total_parameters, config_path


def test_qwen_mlp_halves_intermediate_size() -> None:
    """ff_dim_in = intermediate_size // 2 (modeling_qwen.py QWenMLP): 22016 -> two 11008s."""
    arch = describe(
        {
            "model_type": "qwen",
            "architectures": ["QWenLMHeadModel"],
            "hidden_size": 64,
            "num_attention_heads": 4,
            "kv_channels": 16,
            "num_hidden_layers": 1,
            "intermediate_size": 100,
            "vocab_size": 10,
            "no_bias": False,
        }
    )
    shapes = {t.name: t.shape for t in arch.tensors}
    assert shapes["transformer.h.0.mlp.w1.weight"] == (50, 64)
    assert shapes["transformer.h.0.mlp.c_proj.weight"] == (64, 50)
    assert shapes["transformer.h.0.mlp.c_proj.bias"] == (64,)
    assert shapes["transformer.h.0.attn.c_attn.bias"] == (192,)
