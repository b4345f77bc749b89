"""Recorded changes name every changed JSON key, judged by an oracle that reads the files.

The oracle (tests/fixtures/json_oracle.py) walks the corpus's JSON files itself; the
sample below is backfilled through the Hub emulator and its recorded changes judged key
by key. The whole corpus is measured by tests/bench/bench_change_recall.py. The sample
holds every kind the corpus changes (token files shifted, renumbered, re-flagged and
written out anew; weight maps re-sharded, two indexes in one repo; files added later),
and on it every key is named with its exact values: any regression fails.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from storage import Database, open_database
from tests.fixtures.change_recall import Recall, measure
from tests.fixtures.json_oracle import MISSING, KeyChange, canonical, key_changes
from tests.storage.builders import recorded_at
from tracker.hub.api import connect
from tracker.hub.client import Hub
from tracker.hubsim import HubEmulator, estimator_tensor_shapes
from tracker.revision.backfill import backfill
from tracker.settings import HubSettings

SAMPLE = {
    "meta-llama/Llama-2-7b-hf",
    "mattshumer/Reflection-Llama-3.1-70B",
    "openai/whisper-base",
    "mistralai/Mistral-7B-Instruct-v0.2",
    "mistralai/Mistral-7B-v0.1",
}
IN_PLACE = (
    "config",
    "generation_config",
    "special_tokens_map",
    "added_tokens",
    "added_tokens_decoder",
    "tokenizer_config",
    "weight_index",
    "weight_map",
)
ADDED_OR_REMOVED = (
    "generation_config",
    "added_tokens",
    "special_tokens_map",
    "tokenizer_config",
    "processor",
    "weight_index",
    "weight_map",
)
REFLECTION = "mattshumer/Reflection-Llama-3.1-70B"


def corpus_json(corpus_dir: Path, repo: str, prefix: str, path: str) -> object:
    (folder,) = [p for p in (corpus_dir / repo).iterdir() if p.name.startswith(prefix)]
    return json.loads((folder / path).read_text("utf-8-sig"))


def previous_json(corpus_dir: Path, repo: str, before: str, path: str) -> object:
    """The file as the newest recorded revision before ``before`` committed it."""
    entries = json.loads((corpus_dir / "MANIFEST.json").read_text())
    mine = sorted(
        (e for e in entries if e["repo_id"] == repo and e["file"] == path and e["revision"]),
        key=lambda e: e["date"],
    )
    index = next(i for i, e in enumerate(mine) if e["revision"].startswith(before))
    return corpus_json(corpus_dir, repo, mine[index - 1]["revision"], path)


def one(changes: list[KeyChange], dotted: str) -> KeyChange:
    (found,) = [c for c in changes if c.dotted == dotted]
    return found


def test_the_oracle_reads_known_upstream_changes_from_the_files(corpus_dir: Path) -> None:
    llama = "meta-llama/Llama-2-7b-hf"
    changes = key_changes(
        "config.json",
        previous_json(corpus_dir, llama, "335a028", "config.json"),
        corpus_json(corpus_dir, llama, "335a028", "config.json"),
    )
    bump = one(changes, "max_position_embeddings")
    assert (bump.old, bump.new, bump.kind) == (2048, 4096, "config")

    path = "tokenizer_config.json"
    before = previous_json(corpus_dir, REFLECTION, "cbbe14f", path)
    after = corpus_json(corpus_dir, REFLECTION, "cbbe14f", path)
    eom = one(key_changes(path, before, after), "added_tokens_decoder.128008.content")
    assert (eom.old, eom.new, eom.kind) == (
        "<|eom_id|>",
        "<|reserved_special_token_4|>",
        "added_tokens_decoder",
    )


def test_the_oracle_keeps_json_types_and_walks_added_objects() -> None:
    changes = key_changes(
        "config.json", {"a": 5, "b": True, "c": {"x": 1}}, {"a": 5.0, "b": 1, "d": {"y": 2}}
    )
    assert [(c.dotted, c.old is MISSING, c.new is MISSING) for c in changes] == [
        ("a", False, False),
        ("b", False, False),
        ("c.x", False, True),
        ("d.y", True, False),
    ]
    assert canonical(5) != canonical(5.0) and canonical(True) != canonical(1)
    (empty,) = key_changes("config.json", {"a": 1}, {"a": 1, "pruned_heads": {}})
    assert (empty.dotted, empty.old is MISSING, empty.new) == ("pruned_heads", True, {})
    assert key_changes("config.json", {"pruned_heads": {}}, {"pruned_heads": {}}) == []
    (entry,) = key_changes(
        "tokenizer_config.json", {}, {"added_tokens_decoder": {"7": {"content": "<x>"}}}
    )
    assert entry.dotted == "added_tokens_decoder.7"  # a token stays whole


@pytest.fixture(scope="module")
def sample_recall(tmp_path_factory: pytest.TempPathFactory, corpus_dir: Path) -> Recall:
    emulator = HubEmulator(corpus_dir, tensor_shapes=estimator_tensor_shapes)
    url = emulator.start()
    database: Database = open_database(f"sqlite:///{tmp_path_factory.mktemp('recall')}/db.sqlite")
    try:
        database.migrate()
        for repo in sorted(SAMPLE):
            backfill(
                database, Hub(connect(HubSettings(url)), max_retries=0), repo, clock=recorded_at
            )
        return measure(database, emulator, SAMPLE)
    finally:
        database.close()
        emulator.stop()


def test_every_changed_key_of_every_kind_is_named_with_exact_values(
    sample_recall: Recall,
) -> None:
    for table, kinds in (
        (sample_recall.changed, IN_PLACE),
        (sample_recall.added_or_removed, ADDED_OR_REMOVED),
    ):
        for kind in kinds:
            tally = table[kind]
            assert tally.keys > 0 and tally.exact == tally.keys, (kind, tally.missed[:5])
    for table in (sample_recall.changed, sample_recall.added_or_removed):
        for kind, tally in table.items():
            assert tally.exact == tally.keys, (kind, tally.missed[:5])
    assert sample_recall.uploads.exact == sample_recall.uploads.keys
    assert sum(t.keys for t in sample_recall.changed.values()) >= 3000
    assert sample_recall.parse_transitions == sample_recall.parse_errors_recorded
