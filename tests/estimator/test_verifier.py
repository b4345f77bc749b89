"""Verifier findings: stable ids from the rules file, each with severity and fix."""

from __future__ import annotations

import json
from pathlib import Path

from estimator import WeightManifest, Workload, plan
from estimator.verifier import CHECKS, rules


def base(corpus_dir) -> dict:  # type: ignore[no-untyped-def]
    path = sorted((corpus_dir / "meta-llama/Llama-3.2-1B").glob("*/config.json"))[-1]
    return json.loads(path.read_text())


def ids(config: dict, **kw: object) -> set[str]:
    return {f.id for f in plan(config, **kw).findings}  # type: ignore[arg-type]


# Rules about the workload rather than the config: plan() applies them (tests/estimator/test_lora_targets.py).
WORKLOAD_RULES = {"lora-targets-unmatched"}


def test_every_rule_has_a_check_and_every_check_a_rule() -> None:
    assert set(CHECKS) | WORKLOAD_RULES == set(rules())
    for rule in rules().values():
        assert rule["severity"] in ("error", "warning", "info") and rule["fix"]


def test_every_rule_is_documented_with_its_severity() -> None:
    readme = (Path(__file__).parents[2] / "estimator" / "README.md").read_text()
    documented = {
        cells[1].strip("` "): cells[2].strip()
        for line in readme.splitlines()
        if line.startswith("| `")
        and not line.startswith("| `-")  # flag tables
        and len(cells := line.split("|")) > 3
    }
    assert documented == {rule_id: r["severity"] for rule_id, r in rules().items()}


def test_kv_heads_not_dividing_heads_is_found(corpus_dir) -> None:  # type: ignore[no-untyped-def]
    cfg = base(corpus_dir) | {"num_key_value_heads": 3, "num_attention_heads": 32}
    try:
        found = ids(cfg)
    except Exception:  # the family may refuse it outright, which is also a correct answer
        return
    assert "kv-heads-not-dividing-heads" in found


def test_odd_vocab_and_oversized_window_are_found(corpus_dir) -> None:  # type: ignore[no-untyped-def]
    cfg = base(corpus_dir) | {"vocab_size": 128257}
    assert "vocab-not-multiple-of-64" in ids(cfg)
    assert "vocab-not-multiple-of-64" not in ids(base(corpus_dir))


def test_t4_bf16_falls_back_to_fp16_and_says_so(corpus_dir) -> None:  # type: ignore[no-untyped-def]
    p = plan(base(corpus_dir), Workload(card="T4"))
    assert "no-bf16-on-card" in {f.id for f in p.findings}
    t4 = next(c for c in p.cards if c.card.name == "T4")
    assert t4.precision_note and "fp16" in t4.precision_note


def test_manifest_dtype_and_tied_head_conflicts_are_found(corpus_dir) -> None:  # type: ignore[no-untyped-def]
    cfg = base(corpus_dir) | {"torch_dtype": "bfloat16", "tie_word_embeddings": True}
    header = {
        "lm_head.weight": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]},
        "model.embed_tokens.weight": {"dtype": "F32", "shape": [2, 2], "data_offsets": [16, 32]},
    }
    found = ids(cfg, manifest=WeightManifest.from_headers([header]))
    assert {"dtype-mismatch", "tied-head-stored-separately"} <= found


def test_unknown_model_type_is_reported(corpus_dir) -> None:  # type: ignore[no-untyped-def]
    cfg = base(corpus_dir) | {"model_type": "no-such-type", "architectures": ["NoSuchForCausalLM"]}
    assert "unsupported-model-type" in ids(cfg)


def test_sequence_past_a_learned_position_table_is_an_error(corpus_dir) -> None:  # type: ignore[no-untyped-def]
    path = sorted((corpus_dir / "openai-community/gpt2").glob("*/config.json"))[-1]
    gpt2 = json.loads(path.read_text())
    found = {f.id: f for f in plan(gpt2, Workload(seq_len=1025)).findings}
    rule = found["sequence-beyond-position-table"]
    assert rule.severity == "error" and "1024 positions" in rule.message
    assert rule.fix.startswith("train or serve at most 1024 tokens per sequence")
    assert "sequence-beyond-position-table" not in ids(gpt2, workload=Workload(seq_len=1024))


def test_roberta_positions_exclude_the_padding_offset(corpus_dir) -> None:  # type: ignore[no-untyped-def]
    path = sorted((corpus_dir / "BAAI/bge-reranker-large").glob("*/config.json"))[-1]
    xlmr = json.loads(path.read_text())
    assert xlmr["model_type"] == "xlm-roberta" and xlmr["max_position_embeddings"] == 514
    assert "sequence-beyond-position-table" not in ids(xlmr, workload=Workload(seq_len=512))
    assert "sequence-beyond-position-table" in ids(xlmr, workload=Workload(seq_len=513))


def test_rope_model_past_its_context_gets_a_warning_not_an_error(corpus_dir) -> None:  # type: ignore[no-untyped-def]
    cfg = base(corpus_dir)
    longer = cfg["max_position_embeddings"] + 1
    found = {f.id: f.severity for f in plan(cfg, Workload(seq_len=longer)).findings}
    assert found.get("sequence-beyond-trained-context") == "warning"
    assert "sequence-beyond-position-table" not in found
    assert "sequence-beyond-trained-context" not in ids(cfg)
