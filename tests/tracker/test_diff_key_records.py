"""Every changed key is recorded with its value, and the oracle that says so is strict.

The differs' records are read the way the recall oracle reads them
(tests/fixtures/json_oracle.py); the oracle itself is checked to refuse records that
name a key with the wrong value, records of another file, and half of a token's move.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path

from storage.records import Change, FileEntry, Revision, Severity, Snapshot
from tests.fixtures.json_oracle import judge, key_changes
from tracker.diff.json_diff import diff_json
from tracker.diff.revision import RevisionContent, diff_revisions

NOW = datetime(2025, 1, 1, tzinfo=UTC)
GPT_OSS = "openai/gpt-oss-20b"


def side(texts: dict[str, bytes], label: str) -> RevisionContent:
    keys = {path: hashlib.sha1(data).hexdigest() for path, data in texts.items()}
    revision = Revision("acme/model", hashlib.sha1(label.encode()).hexdigest(), (), NOW, label)
    files = tuple(FileEntry(path, len(data), keys[path]) for path, data in texts.items())
    return RevisionContent(Snapshot(revision, files, keys), texts)


def corpus_file(corpus_dir: Path, repo: str, prefix: str, path: str) -> bytes:
    (folder,) = [p for p in (corpus_dir / repo).iterdir() if p.name.startswith(prefix)]
    return (folder / path).read_bytes()


def entry(content: str, **flags: bool) -> dict[str, object]:
    base = {"lstrip": False, "normalized": False, "rstrip": False, "single_word": False}
    return {"content": content, **base, "special": True, **flags}


def decoder(entries: dict[int, dict[str, object]]) -> bytes:
    return json.dumps({"added_tokens_decoder": {str(i): e for i, e in entries.items()}}).encode()


def judged(path: str, old: bytes, new: bytes) -> list[tuple[str, bool, bool]]:
    """(key, named, exact) for every changed key of ``path`` between two revisions."""
    changes = diff_revisions(side({path: old}, "a"), side({path: new}, "b"))
    expected = key_changes(path, json.loads(old), json.loads(new))
    return [(c.dotted, *judge(c, changes)) for c in expected]


def test_a_decoder_entry_re_flagged_is_recorded_whole_at_its_key_path() -> None:
    old = decoder({0: entry("<unk>"), 1: entry("<s>"), 2: entry("</s>")})
    new = decoder({0: entry("<unk>"), 1: entry("<s>", normalized=True), 2: entry("</s>")})
    (change,) = diff_revisions(
        side({"tokenizer_config.json": old}, "a"), side({"tokenizer_config.json": new}, "b")
    )
    assert change.kind == "special_token_changed"
    assert change.old == {"added_tokens_decoder": {"1": entry("<s>")}}
    assert change.new == {"added_tokens_decoder": {"1": entry("<s>", normalized=True)}}
    assert judged("tokenizer_config.json", old, new) == [
        ("added_tokens_decoder.1.normalized", True, True)
    ]


def test_a_decoder_written_for_tokens_added_tokens_json_held_is_one_quiet_line() -> None:
    tokens = {"<|endoftext|>": 50257, "<|en|>": 50259}
    listed = json.dumps(tokens).encode()
    written = decoder({i: entry(t) for t, i in tokens.items()})
    changes = diff_revisions(
        side({"added_tokens.json": listed, "tokenizer_config.json": b"{}"}, "a"),
        side({"added_tokens.json": listed, "tokenizer_config.json": written}, "b"),
    )
    (relisted,) = changes
    assert (relisted.kind, relisted.severity) == ("special_tokens_relisted", Severity.INFO)
    assert relisted.old is None and relisted.new == json.loads(written)
    assert relisted.message.startswith(
        "tokenizer_config.json: added_tokens_decoder entries rewritten for 2 tokens "
        "(ids 50257..50259: <|endoftext|>, <|en|>)"
    )
    expected = key_changes("tokenizer_config.json", {}, json.loads(written))
    assert [judge(c, changes) for c in expected] == [(True, True), (True, True)]


def test_the_oracle_refuses_a_wrong_value_another_file_and_half_a_move() -> None:
    old = decoder({5: entry("<a>"), 6: entry("<b>")})
    new = decoder({5: entry("<b>"), 6: entry("<a>")})  # two tokens swap ids
    changes = diff_revisions(
        side({"tokenizer_config.json": old}, "a"), side({"tokenizer_config.json": new}, "b")
    )
    expected = key_changes("tokenizer_config.json", json.loads(old), json.loads(new))
    assert {c.dotted for c in expected} == {
        "added_tokens_decoder.5.content",
        "added_tokens_decoder.6.content",
    }
    assert all(judge(c, changes) == (True, True) for c in expected)
    before = [json.dumps(c.old) + json.dumps(c.new) for c in changes]
    # each token's line alone holds one side of an id: not exact without the other
    for token_line in changes:
        others = [c for c in changes if c is not token_line]
        assert not all(judge(c, others)[1] for c in expected)
    moved = next(c for c in changes if "<a>" in c.message)
    wrong = Change(**{**moved.__dict__, "new": {"added_tokens_decoder": {"6": entry("<z>")}}})
    assert judge(expected[1], [wrong]) == (True, False)
    assert [json.dumps(c.old) + json.dumps(c.new) for c in changes] == before  # judged as read
    message = moved.message.replace("tokenizer_config.json", "added_tokens.json")
    elsewhere = Change(**{**moved.__dict__, "path": "added_tokens.json", "message": message})
    assert judge(expected[1], [elsewhere]) == (False, False)


def test_a_number_rewritten_as_a_float_is_named_as_the_same_number() -> None:
    (change,) = diff_json("config", "config.json", {"rope_theta": 10000}, {"rope_theta": 10000.0})
    assert (change.old, change.new, change.severity) == (10000, 10000.0, Severity.INFO)
    assert change.message == (
        "config.json: rope_theta 10000 -> 10000.0: the same value, now a float"
    )


def test_a_template_json_overridden_by_the_jinja_file_says_no_prompt_changes(
    corpus_dir: Path,
) -> None:
    jinja = corpus_file(corpus_dir, GPT_OSS, "ec854da", "chat_template.jinja")
    before = json.dumps({"chat_template": "{{ messages[0]['content'] }}"}).encode()
    after = json.dumps({"chat_template": jinja.decode()}).encode()
    changes = diff_revisions(
        side({"chat_template.jinja": jinja, "chat_template.json": before}, "a"),
        side({"chat_template.jinja": jinja, "chat_template.json": after}, "b"),
    )
    (source,) = changes
    assert (source.kind, source.path, source.severity) == (
        "template_source",
        "chat_template.json",
        Severity.INFO,
    )
    assert source.new == {"chat_template": jinja.decode()}
    assert source.message.endswith("chat_template.jinja overrides it, so no prompt changes")
    (key,) = key_changes("chat_template.json", json.loads(before), json.loads(after))
    assert judge(key, changes) == (True, True)


def test_two_index_files_of_one_revision_each_name_their_moves(corpus_dir: Path) -> None:
    repo = "mistralai/Mistral-7B-Instruct-v0.2"
    path = "model.safetensors.index.json"
    old = corpus_file(corpus_dir, repo, "5a1029f", path)
    bins = corpus_file(corpus_dir, repo, "dca6e4b", "pytorch_model.bin.index.json")
    new = corpus_file(corpus_dir, repo, "unknown", path)  # the F32 re-upload, 6 shards
    changes = diff_revisions(
        side({path: old, "pytorch_model.bin.index.json": bins}, "a"),
        side({path: new, "pytorch_model.bin.index.json": bins}, "b"),
    )
    (moved,) = [c for c in changes if c.kind == "weight_map_moved"]
    assert moved.path == path and len(moved.new["weight_map"]) == 291
    assert moved.message.startswith(f"{path}: the weight map moves 291 tensors to other shards")
    expected = key_changes(path, json.loads(old), json.loads(new))
    assert len(expected) == 292  # 291 entries and metadata.total_size
    assert all(judge(c, changes) == (True, True) for c in expected)


def test_a_change_keeps_the_values_as_written_when_a_later_reader_rewrites_the_config(
    corpus_dir: Path,
) -> None:
    # the exact estimate path hands config.json to transformers, whose Gemma 4 config
    # rewrites vision_config.rope_parameters in place after the diff has run
    data = corpus_file(corpus_dir, "google/gemma-4-31B-it", "419b2ef", "config.json")
    readme = b"---\nlicense: apache-2.0\n---\n"
    new = side({"README.md": readme, "config.json": data}, "b")
    (added,) = diff_revisions(side({"README.md": readme}, "a"), new)
    new.value("config.json")["vision_config"]["rope_parameters"]["rope_type"] = "axial"
    assert added.new == json.loads(data)
    assert added.new["vision_config"]["rope_parameters"]["rope_type"] == "default"
