"""Changes named at key level on real corpus files: added tokens, weight maps, wording.

Each expectation is computed here by a plain walk of the two JSON files
(independent of the differ), and the differ must name every changed key
with its exact old and new values.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from tokenizers import Tokenizer, models, pre_tokenizers

from feeds import EstimateDelta, build_advisory
from storage import Database, changes_of, revisions
from storage.records import Change, FileEntry, Revision, Severity, Snapshot, StoredRevision
from tests.storage.builders import recorded_at
from tracker.diff.json_diff import diff_json
from tracker.diff.registry import ARTIFACTS
from tracker.diff.revision import RevisionContent, diff_revisions
from tracker.hub.api import connect
from tracker.hub.client import Hub
from tracker.hubsim import HubEmulator
from tracker.revision.backfill import backfill
from tracker.revision.estimate import estimate
from tracker.settings import HubSettings

WHISPER = "openai/whisper-base"
REFLECTION = "mattshumer/Reflection-Llama-3.1-70B"


def revision_dir(corpus_dir: Path, repo: str, prefix: str) -> str:
    (match,) = [p.name for p in (corpus_dir / repo).iterdir() if p.name.startswith(prefix)]
    return match


def read(corpus_dir: Path, repo: str, prefix: str, path: str) -> bytes:
    return (corpus_dir / repo / revision_dir(corpus_dir, repo, prefix) / path).read_bytes()


def side(texts: dict[str, bytes], label: str = "r") -> RevisionContent:
    """A revision holding ``texts`` (path -> bytes), keyed by content as the store keys them."""
    keys = {path: hashlib.sha1(data).hexdigest() for path, data in texts.items()}
    revision = Revision("acme/model", hashlib.sha1(label.encode()).hexdigest(), (), NOW, label)
    files = tuple(FileEntry(path, len(data), keys[path]) for path, data in texts.items())
    return RevisionContent(Snapshot(revision, files, keys), texts)


NOW = datetime(2025, 1, 1, tzinfo=UTC)


def token_ids(listed: Any) -> dict[str, int]:
    """token -> id from a change's values: a decoder's entries or added_tokens.json's map."""
    if not isinstance(listed, dict):
        return {}
    decoder = listed.get("added_tokens_decoder")
    if isinstance(decoder, dict):
        return {entry["content"]: int(i) for i, entry in decoder.items()}
    return dict(listed)


def named(changes: list[Change]) -> dict[str, tuple[Any, Any]]:
    """token -> (old id, new id) over every added-token change's values."""
    out: dict[str, tuple[Any, Any]] = {}
    for change in changes:
        old, new = token_ids(change.old), token_ids(change.new)
        for token in set(old) | set(new):
            out[token] = (old.get(token), new.get(token))
    return out


def test_whisper_language_tokens_moving_by_one_are_one_shift_with_every_id(
    corpus_dir: Path,
) -> None:
    before = read(corpus_dir, WHISPER, "99244dc", "added_tokens.json")
    after = read(corpus_dir, WHISPER, "6a7ad65", "added_tokens.json")
    old, new = json.loads(before), json.loads(after)
    moved = {t: (old[t], new[t]) for t in old if t in new and old[t] != new[t]}
    assert len(moved) == 106 and {b - a for a, b in moved.values()} == {1}
    changes = diff_revisions(
        side({"added_tokens.json": before}, "a"), side({"added_tokens.json": after}, "b")
    )
    (shift,) = [c for c in changes if c.kind == "special_tokens_shifted"]
    low, high = min(a for a, _ in moved.values()), max(a for a, _ in moved.values())
    assert (low, high) == (50257, 50362)
    assert shift.severity is Severity.HIGH and shift.artifact == "tokenizer"
    assert f"106 added tokens shifted by +1, ids {low}..{high} -> {low + 1}..{high + 1}" in (
        shift.message
    )
    assert named([shift]) == moved
    (added,) = [c for c in changes if c.kind == "special_token_added"]
    assert added.new == {"<|endoftext|>": 50257} and added.new == {
        t: new[t] for t in new if t not in old
    }
    assert {c.kind for c in changes} == {"special_tokens_shifted", "special_token_added"}


def test_reflection_reserved_tokens_renumbered_are_named_each_once(corpus_dir: Path) -> None:
    before = read(corpus_dir, REFLECTION, "276a4a0", "tokenizer_config.json")
    after = read(corpus_dir, REFLECTION, "cbbe14f", "tokenizer_config.json")

    def ids(data: bytes) -> dict[str, int]:
        decoder = json.loads(data)["added_tokens_decoder"]
        return {entry["content"]: int(i) for i, entry in decoder.items()}

    old, new = ids(before), ids(after)
    expected = {
        t: (old.get(t), new.get(t)) for t in set(old) | set(new) if old.get(t) != new.get(t)
    }
    assert len(expected) > 200
    changes = diff_revisions(
        side({"tokenizer_config.json": before}, "a"),
        side({"tokenizer_config.json": after}, "b"),
    )
    tokens = [c for c in changes if c.artifact == "tokenizer"]
    assert named(tokens) == expected
    assert not [c for c in changes if "added_tokens_decoder" in c.message]
    # 243 shifted by -3, three moved, three removed, three added: ten lines, not 249
    assert len(tokens) == 10, [c.message for c in tokens]
    (shift,) = [c for c in tokens if c.kind == "special_tokens_shifted"]
    assert "243 added tokens shifted by -3, ids 128013..128255 -> 128010..128252" in shift.message


def make_tokenizer(special: list[str]) -> bytes:
    vocab = {t: i for i, t in enumerate(["[UNK]", "Hello", "world"])}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.add_special_tokens(special)
    return tokenizer.to_str().encode()


def listed_in_three_files(special: list[str]) -> dict[str, bytes]:
    decoder = {
        str(3 + i): {
            "content": t,
            "special": True,
            "lstrip": False,
            "rstrip": False,
            "normalized": False,
            "single_word": False,
        }
        for i, t in enumerate(special)
    }
    return {
        "tokenizer.json": make_tokenizer(special),
        "tokenizer_config.json": json.dumps({"added_tokens_decoder": decoder}).encode(),
        "added_tokens.json": json.dumps({t: 3 + i for i, t in enumerate(special)}).encode(),
    }


def test_a_new_special_token_is_one_line_though_three_files_list_it() -> None:
    old = side(listed_in_three_files(["<s>"]), "a")
    new = side(listed_in_three_files(["<s>", "<|eot_id|>"]), "b")
    changes = diff_revisions(old, new)
    about_token = [c for c in changes if c.kind.startswith("special_token")]
    entry = json.loads(new.blobs["tokenizer_config.json"])["added_tokens_decoder"]["4"]
    published = [c for c in about_token if c.severity > Severity.INFO]
    assert [(c.kind, c.new, c.severity) for c in published] == [
        ("special_token_added", {"added_tokens_decoder": {"4": entry}}, Severity.MODERATE)
    ]
    assert published[0].message == "tokenizer_config.json: special token <|eot_id|> added (id 4)"
    # added_tokens.json's own entry is recorded too, on a line that does not publish
    (listed,) = [c for c in about_token if c.severity is Severity.INFO]
    assert (listed.path, listed.old, listed.new) == (
        "added_tokens.json",
        None,
        {"<|eot_id|>": 4},
    )
    # tokenizer.json's own findings: its vocabulary grew, and a probe holding <|eot_id|> re-encodes
    assert {c.kind for c in changes} == {
        "special_token_added",
        "special_tokens_relisted",
        "vocab_size",
        "encoding_changed",
    }


def test_a_special_token_flag_change_names_the_token_and_the_flag() -> None:
    files = listed_in_three_files(["<s>", "</s>"])
    decoder = json.loads(files["tokenizer_config.json"])
    decoder["added_tokens_decoder"]["4"]["lstrip"] = True
    changed = {**files, "tokenizer_config.json": json.dumps(decoder).encode()}
    (change,) = diff_revisions(side(files, "a"), side(changed, "b"))
    was = json.loads(files["tokenizer_config.json"])["added_tokens_decoder"]["4"]
    assert (change.kind, change.old, change.new) == (
        "special_token_changed",
        {"added_tokens_decoder": {"4": was}},
        {"added_tokens_decoder": {"4": {**was, "lstrip": True}}},
    )
    assert (
        change.message == "tokenizer_config.json: special token </s> (id 4): lstrip false -> true"
    )


def weight_map(corpus_dir: Path, repo: str, prefix: str, path: str) -> dict[str, str]:
    mapping: dict[str, str] = json.loads(read(corpus_dir, repo, prefix, path))["weight_map"]
    return mapping


@pytest.mark.parametrize(
    ("repo", "path", "old_rev", "new_rev", "count"),
    [
        (REFLECTION, "model.safetensors.index.json", "276a4a0", "2b7a66a", 6),
        ("meta-llama/Llama-2-7b-hf", "pytorch_model.bin.index.json", "637a748", "5373729", 323),
    ],
)
def test_weight_map_moves_name_tensor_and_both_shards(
    corpus_dir: Path, repo: str, path: str, old_rev: str, new_rev: str, count: int
) -> None:
    before, after = read(corpus_dir, repo, old_rev, path), read(corpus_dir, repo, new_rev, path)
    old = json.loads(before)["weight_map"]
    new = json.loads(after)["weight_map"]
    moved = {t: (old[t], new[t]) for t in old if t in new and old[t] != new[t]}
    assert len(moved) == count
    changes = diff_revisions(side({path: before}, "a"), side({path: after}, "b"))
    (change,) = [c for c in changes if c.kind == "weight_map_moved"]
    assert (change.artifact, change.path, change.severity) == ("weight_index", path, Severity.LOW)
    assert isinstance(change.old, dict) and isinstance(change.new, dict)
    was, now = change.old["weight_map"], change.new["weight_map"]
    assert {t: (was[t], now[t]) for t in now} == moved
    first = sorted(moved)[0]
    if count <= 5:
        assert f"{first}: {moved[first][0]} -> {moved[first][1]}" in change.message
    else:
        assert change.message.startswith(
            f"{path}: the weight map moves {count} tensors to other shards: "
        )


def test_an_index_that_appears_carries_every_weight_map_entry(corpus_dir: Path) -> None:
    repo, path = "mistralai/Mistral-7B-Instruct-v0.2", "model.safetensors.index.json"
    data = read(corpus_dir, repo, "5a1029f", path)
    readme = b"---\nlicense: apache-2.0\n---\n"
    changes = diff_revisions(
        side({"README.md": readme}, "a"), side({"README.md": readme, path: data}, "b")
    )
    (added,) = [c for c in changes if c.path == path]
    document = json.loads(data)
    assert (added.kind, added.old, added.new) == ("added", None, document)
    assert added.message.endswith(
        f"its weight map maps {len(document['weight_map'])} tensors to 3 shards"
    )


def whisper_json(corpus_dir: Path, prefix: str, path: str) -> Any:
    return json.loads(read(corpus_dir, WHISPER, prefix, path))


def test_eos_token_normalized_flip_says_the_token_is_the_same(corpus_dir: Path) -> None:
    old = whisper_json(corpus_dir, "5815f0e", "special_tokens_map.json")
    new = whisper_json(corpus_dir, "e37978b", "special_tokens_map.json")
    eos = next(
        c
        for c in diff_json("special_tokens_map", "special_tokens_map.json", old, new)
        if c.message.startswith("special_tokens_map.json: eos_token")
    )
    assert eos.severity is Severity.LOW
    assert eos.message == (
        "special_tokens_map.json: eos_token normalized true -> false: "
        "the token is still <|endoftext|>; only how it is matched changed"
    )


@pytest.mark.parametrize(
    ("old_rev", "new_rev", "wording"),
    [
        ("abf9bba", "7bae4ba", "encoded prompts no longer start with the BOS token"),
        ("7bae4ba", "cb48aa8", "encoded prompts now start with the BOS token"),
    ],
)
def test_add_bos_token_says_which_way(
    corpus_dir: Path, old_rev: str, new_rev: str, wording: str
) -> None:
    repo = "deepseek-ai/DeepSeek-R1"
    old = json.loads(read(corpus_dir, repo, old_rev, "tokenizer_config.json"))
    new = json.loads(read(corpus_dir, repo, new_rev, "tokenizer_config.json"))
    changes = diff_json("tokenizer_config", "tokenizer_config.json", old, new)
    bos = next(c for c in changes if "add_bos_token" in c.message)
    assert bos.severity is Severity.HIGH and bos.message.endswith(wording)


def test_rope_scaling_blames_older_loaders_only_for_a_new_form(corpus_dir: Path) -> None:
    repo = "meta-llama/Llama-3.2-3B-Instruct"
    old = json.loads(read(corpus_dir, repo, "e6c23ae", "config.json"))
    new = json.loads(read(corpus_dir, repo, "03fe957", "config.json"))
    same_form = next(c for c in diff_json("config", "config.json", old, new) if "rope" in c.message)
    assert same_form.message.endswith("position encoding at long context changes")
    renamed = {**new, "rope_scaling": {"type": "llama3", "factor": 32.0}}
    (form,) = [c for c in diff_json("config", "config.json", renamed, new) if "rope" in c.message]
    assert form.message.endswith("the form changed, so older loaders may reject it")


def test_eos_token_id_change_is_high_in_config_and_in_generation_config() -> None:
    for artifact, path in (
        ("config", "config.json"),
        ("generation_config", "generation_config.json"),
    ):
        (change,) = diff_json(artifact, path, {"eos_token_id": 2}, {"eos_token_id": [2, 32000]})
        assert change.severity is Severity.HIGH, artifact


def test_an_estimate_refusal_is_said_once_while_config_json_is_unchanged(
    corpus_dir: Path,
) -> None:
    repo = "meta-llama/Llama-3.2-3B-Instruct"
    config = json.loads(read(corpus_dir, repo, "03fe957", "config.json"))
    refused = json.dumps({**config, "num_attention_heads": 7}).encode()
    readme = b"---\nlicense: llama3.2\n---\n"
    first = side({"config.json": refused}, "a")
    card_only = side({"config.json": refused, "README.md": readme}, "b")
    _, said = estimate(first)
    assert said is not None and said.message.startswith("no estimate for this revision: ")
    assert estimate(card_only, first) == (None, None)
    fixed = side({"config.json": json.dumps(config).encode()}, "c")
    broken_again = side({"config.json": refused + b"\n"}, "d")
    assert estimate(broken_again, fixed)[1] is not None


def test_every_row_of_the_table_has_a_differ_and_the_revision_differ_names_none() -> None:
    source = Path(__file__).parents[2].joinpath("tracker/diff/revision.py").read_text()
    assert len({kind.name for kind in ARTIFACTS}) == len(ARTIFACTS)
    for kind in ARTIFACTS:
        assert callable(kind.differ), kind.name
        assert f'"{kind.name}"' not in source, kind.name


def test_bloom_impossible_sizes_are_said_once_not_on_every_later_revision(
    hub_emulator: HubEmulator, database: Database
) -> None:
    repo = "bigscience/bloom"
    backfill(
        database,
        Hub(connect(HubSettings(hub_emulator.endpoint)), max_retries=0),
        repo,
        clock=recorded_at,
    )
    with database.read_session() as session:
        shas = [r.sha for r in revisions(session, repo, include_off_main=True)]
        found = [
            (sha, c)
            for sha in shas
            for c in changes_of(session, repo, sha)
            if c.kind == "implausible_size"
        ]
    assert len(shas) > 5
    (said,) = found
    assert isinstance(said[1].new, list) and len(said[1].new) == 72


def test_advisory_markdown_names_the_path_once(corpus_dir: Path) -> None:
    repo = "meta-llama/Llama-3.2-3B-Instruct"
    old = json.loads(read(corpus_dir, repo, "e6c23ae", "config.json"))
    new = json.loads(read(corpus_dir, repo, "03fe957", "config.json"))
    changes = diff_json("config", "config.json", old, new)
    moments = [datetime(2024, 5, 1, 12, m, tzinfo=UTC) for m in (0, 1)]
    before, after = (
        StoredRevision(Revision(repo, sha * 40, (), at, "update"), at)
        for sha, at in zip("ab", moments, strict=True)
    )
    advisory = build_advisory(repo, before, after, changes, EstimateDelta(None, ()))
    assert advisory is not None
    text = advisory.osv["details"]
    assert (
        "config.json: config.json" not in text and "`config.json` modified: config.json" not in text
    )
    assert "- **high** `config.json` modified: rope_scaling.factor 8.0 -> 32.0" in text


def test_a_file_added_later_carries_every_field_with_its_value(corpus_dir: Path) -> None:
    data = read(corpus_dir, WHISPER, "a6e17ac", "generation_config.json")
    readme = b"---\nlicense: apache-2.0\n---\n"
    (added,) = diff_revisions(
        side({"README.md": readme}, "a"),
        side({"README.md": readme, "generation_config.json": data}, "b"),
    )
    assert (added.kind, added.old, added.new) == ("added", None, json.loads(data))
    assert added.severity is Severity.HIGH and "eos_token_id (unset) -> 50257" in added.message


def test_null_and_unset_are_the_same_and_an_empty_token_list_is_no_tokens() -> None:
    changes = diff_json(
        "tokenizer_config",
        "tokenizer_config.json",
        {"pad_token": None},
        {"additional_special_tokens": []},
    )
    assert sorted((c.message, c.severity) for c in changes) == [
        (
            "tokenizer_config.json: additional_special_tokens (unset) -> []: no tokens either way",
            Severity.INFO,
        ),
        (
            "tokenizer_config.json: pad_token null -> (unset): "
            "written as null instead of unset (or back): no change",
            Severity.INFO,
        ),
    ]


def test_whisper_hebrew_token_renamed_at_its_id_is_one_rename(corpus_dir: Path) -> None:
    before = read(corpus_dir, WHISPER, "6a7ad65", "added_tokens.json")
    after = read(corpus_dir, WHISPER, "0471144", "added_tokens.json")
    old, new = json.loads(before), json.loads(after)
    assert {t: new[t] for t in set(new) - set(old)} == {"<|he|>": 50279}
    assert {t: old[t] for t in set(old) - set(new)} == {"<|iw|>": 50279}
    (change,) = diff_revisions(
        side({"added_tokens.json": before}, "a"), side({"added_tokens.json": after}, "b")
    )
    assert (change.kind, change.old, change.new) == (
        "special_token_renamed",
        {"<|iw|>": 50279},
        {"<|he|>": 50279},
    )
    assert change.message.startswith(
        "added_tokens.json: added token id 50279 renamed <|iw|> -> <|he|>"
    )


def test_add_bos_token_set_where_it_was_unset_says_the_class_default_decided_before(
    corpus_dir: Path,
) -> None:
    repo = "microsoft/DialoGPT-small"
    old = json.loads(read(corpus_dir, repo, "abd2854", "tokenizer_config.json"))
    new = json.loads(read(corpus_dir, repo, "064dd95", "tokenizer_config.json"))
    assert "add_bos_token" not in old and new["add_bos_token"] is False
    bos = next(
        c
        for c in diff_json("tokenizer_config", "tokenizer_config.json", old, new)
        if "add_bos_token" in c.message
    )
    assert bos.severity is Severity.MODERATE
    assert bos.message == (
        "tokenizer_config.json: add_bos_token (unset) -> false: now explicitly false; before, the "
        "tokenizer class's default decided whether encoded prompts start with the BOS token"
    )


def test_whisper_timestamp_tokens_added_are_one_change_holding_every_id(
    corpus_dir: Path,
) -> None:
    before = read(corpus_dir, WHISPER, "5815f0e", "added_tokens.json")
    after = read(corpus_dir, WHISPER, "894f251", "added_tokens.json")
    old, new = json.loads(before), json.loads(after)
    came = {t: new[t] for t in set(new) - set(old)}
    assert len(came) == 1501 and set(old) <= set(new)
    (change,) = diff_revisions(
        side({"added_tokens.json": before}, "a"), side({"added_tokens.json": after}, "b")
    )
    assert change.kind == "special_token_added" and change.new == came
    low, high = min(came.values()), max(came.values())
    assert change.message.startswith(f"added_tokens.json: 1501 tokens added, ids {low}..{high}")


def test_a_token_rewritten_from_string_to_object_says_it_is_the_same_token(
    corpus_dir: Path,
) -> None:
    old = whisper_json(corpus_dir, "99244dc", "special_tokens_map.json")
    new = whisper_json(corpus_dir, "6a7ad65", "special_tokens_map.json")
    assert old["eos_token"] == "<|endoftext|>" and new["eos_token"]["content"] == "<|endoftext|>"
    (eos,) = [
        c
        for c in diff_json("special_tokens_map", "special_tokens_map.json", old, new)
        if "eos_token" in c.message
    ]
    assert (eos.severity, eos.old, eos.new) == (Severity.LOW, old["eos_token"], new["eos_token"])
    assert eos.message == (
        "special_tokens_map.json: eos_token <|endoftext|> (string -> object): "
        "the token is still <|endoftext|>, written anew"
    )
