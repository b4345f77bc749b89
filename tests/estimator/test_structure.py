"""The structure lists nodes in execution order with their output shapes at a sequence length."""

from __future__ import annotations

import random

import pytest

from estimator.errors import WorkloadError
from estimator.families import describe
from estimator.plan_json import part_from_json, part_to_json
from estimator.structure import Node, Structure, layout, structure
from tests.estimator import configgen

LLAMA = {
    "model_type": "llama",
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 100,
}
BERT = {
    "model_type": "bert",
    "architectures": ["BertForSequenceClassification"],
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 1,
    "num_attention_heads": 2,
    "vocab_size": 50,
    "id2label": {"0": "neg", "1": "neutral", "2": "pos"},
}


def kinds(nodes: tuple[Node, ...]) -> list[str]:
    return [n.kind for n in nodes]


def test_decoder_structure_is_pre_norm_in_execution_order() -> None:
    nodes = structure(describe(LLAMA), 7)
    block = ["Norm", "Attention", "Add", "Norm", "FFN", "Add"]
    assert kinds(nodes) == [
        "Input",
        "Embedding",
        "PositionalEmbedding",
        *block,
        *block,
        "Norm",
        "Output",
    ]
    assert nodes[0].shape == (7,)
    assert all(n.shape == (7, 64) for n in nodes[1:2] + nodes[3:-1])
    assert nodes[-1].shape == (7, 100)  # logits over the vocabulary
    assert nodes[2].shape == (7, 16)  # rotary tables are per head dimension


def test_encoder_structure_is_post_norm_and_classifier_outputs_labels() -> None:
    nodes = structure(describe(BERT), 5)
    assert kinds(nodes) == [
        "Input",
        "Embedding",
        "PositionalEmbedding",
        "Norm",
        "Attention",
        "Add",
        "Norm",
        "FFN",
        "Add",
        "Norm",
        "Output",
    ]
    assert nodes[-1].shape == (3,)  # three labels from id2label


def test_moe_blocks_show_a_moe_node() -> None:
    cfg = dict(
        LLAMA,
        model_type="mixtral",
        architectures=["MixtralForCausalLM"],
        num_local_experts=4,
        num_experts_per_tok=2,
    )
    assert "MoE" in kinds(structure(describe(cfg), 3))
    assert "FFN" not in kinds(structure(describe(cfg), 3))


def test_seq2seq_decoder_blocks_have_cross_attention() -> None:
    cfg = {
        "model_type": "t5",
        "architectures": ["T5ForConditionalGeneration"],
        "d_model": 32,
        "d_kv": 8,
        "num_heads": 4,
        "d_ff": 64,
        "num_layers": 1,
        "vocab_size": 60,
    }
    k = kinds(structure(describe(cfg), 4))
    assert k.count("CrossAttention") == 1
    assert k.count("Attention") == 2


def test_node_parameters_sum_to_the_model_total_for_every_family() -> None:
    r = random.Random(11)
    for model_type in sorted(configgen.FAMILIES):
        arch = describe(configgen.generate(model_type, r))
        nodes = structure(arch, 9)
        assert sum(n.parameters for n in nodes) == arch.total_parameters, model_type
        assert len([n for n in nodes if n.kind in ("FFN", "MoE")]) == arch.num_layers


def test_embedding_node_holds_the_token_table() -> None:
    nodes = structure(describe(LLAMA), 2)
    assert nodes[1].parameters == 100 * 64


@pytest.mark.parametrize("seq_len", [0, -1, True, 2.0, 1 << 40])
def test_bad_sequence_length_is_a_workload_error(seq_len: object) -> None:
    with pytest.raises(WorkloadError, match="sequence length"):
        structure(describe(LLAMA), seq_len)  # type: ignore[arg-type]


def test_layout_keeps_blocks_as_patterns_and_expands_to_the_same_nodes() -> None:
    arch = describe(LLAMA)
    kept = layout(arch, 7)
    nodes = structure(arch, 7)
    # Two blocks of one template: two (prefix, pattern) pairs sharing the pattern object.
    assert [prefix for prefix, _ in kept.blocks] == ["layers.0.", "layers.1."]
    assert kept.blocks[0][1] is kept.blocks[1][1]
    assert len(kept) == len(nodes) == len(tuple(kept))
    assert [n.name for n in kept][-3:] == ["layers.1.add_1", "final_norm", "output"]
    document = part_to_json(kept)
    assert document[3] == {
        "name": "layers.0.norm_0",
        "kind": "Norm",
        "shape": [7, 64],
        "parameters": 64,
    }
    # Read back from JSON every node is kept flat, and still equal to the compact form.
    flat = part_from_json(document, Structure)
    assert flat.blocks == () and flat == kept and hash(flat) == hash(kept)
    assert part_to_json(flat) == document
    assert layout(arch, 8) != kept
