"""One wording rule per shape of change: each names what changed, its two sides visibly apart.

Per shape: a scalar, a list, a dict (sub-keys at any depth), a token set (capped per
file), a rendered template (aligned on its first difference), a weight manifest (sizes
and unreadable headers); and the checks of tests/fixtures/change_lines.py, shown to
catch the lines they were written against.
"""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from storage import open_database
from storage.records import FileEntry, Severity
from tests.fixtures.change_lines import absurd_deltas, contradicting_ranges, equal_sides
from tests.storage.builders import recorded_at
from tracker.commands.render import history_text
from tracker.diff.chat_template import diff_chat_templates
from tracker.diff.files import diff_files
from tracker.diff.json_diff import diff_json
from tracker.diff.manifest import diff_manifests
from tracker.diff.sandbox import render_prompts
from tracker.diff.shapes import MAX_LINE_CHARS, excerpt
from tracker.hub.api import connect
from tracker.hub.client import Hub
from tracker.hubsim import HubEmulator
from tracker.reads.documents import history_document
from tracker.revision.backfill import backfill
from tracker.settings import HubSettings

PHI3 = "microsoft/Phi-3-mini-128k-instruct"
START = datetime(2025, 1, 1, tzinfo=UTC)
EMPTY_HUB = pytest.mark.parametrize("hub_emulator", [{"corpus": None}], indirect=True)


def phi3_config(corpus_dir: Path) -> dict[str, Any]:
    config: dict[str, Any] = json.loads((corpus_dir / PHI3 / "unknown" / "config.json").read_text())
    return config


def message(old: Any, new: Any, artifact: str = "config") -> str:
    (change,) = diff_json(artifact, "config.json", old, new)
    return change.message


@EMPTY_HUB
def test_phi3_rope_scaling_edit_names_the_sub_keys_in_history(
    hub_emulator: HubEmulator, corpus_dir: Path, tmp_path: Path
) -> None:
    """Phi-3's documented edit (``type`` "su" -> "longrope"), replayed on the corpus file."""
    before = phi3_config(corpus_dir)
    after = copy.deepcopy(before)
    after["rope_scaling"].update(type="longrope", factor=4.0)
    repo = "replay/phi-3"
    for day, config in enumerate((before, after)):
        hub_emulator.publish(
            repo, {"config.json": json.dumps(config).encode()}, date=START + timedelta(days=day)
        )
    database = open_database(f"sqlite:///{tmp_path}/db.sqlite")
    database.migrate()
    backfill(
        database,
        Hub(connect(HubSettings(hub_emulator.endpoint)), max_retries=0),
        repo,
        clock=recorded_at,
    )
    text = history_text(history_document(database, repo))
    database.close()
    assert (
        "  [high] config.json: rope_scaling.type su -> longrope, rope_scaling.factor added 4.0: "
        "position encoding at long context changes; the form changed" in text
    )
    assert '{"long_factor"' not in text


def test_a_dict_names_each_changed_sub_key_at_any_depth_and_keeps_the_whole_values() -> None:
    old = {"quantization_config": {"bits": 4, "extra": {"group": {"size": 128}}, "gone": 1}}
    new = {"quantization_config": {"bits": 8, "extra": {"group": {"size": 64}}}}
    (change,) = diff_json("config", "config.json", old, new)
    assert change.message == (
        "config.json: quantization_config.bits 4 -> 8, quantization_config.extra.group.size "
        "128 -> 64, quantization_config.gone removed (was 1): the weights' quantization changes"
    )
    assert (change.old, change.new) == (old["quantization_config"], new["quantization_config"])


def test_a_long_list_names_the_index_that_changed_not_two_equal_prefixes() -> None:
    factors = [1.0 + i / 100 for i in range(48)]
    changed = [*factors[:30], 9.5, *factors[31:]]
    text = message(
        {"rope_scaling": {"long_factor": factors}}, {"rope_scaling": {"long_factor": changed}}
    )
    assert "rope_scaling.long_factor[30] 1.3 -> 9.5" in text
    assert equal_sides(text) == []


def test_a_list_that_grew_names_the_items_that_came_and_went() -> None:
    old = {"suppress": [f"tok{i}" for i in range(40)]}
    new = {"suppress": [f"tok{i}" for i in range(3, 45)]}
    assert message(old, new, "json") == (
        "config.json: suppress 40 -> 42 items: 5 added (tok40, tok41, tok42 and 2 more); "
        "3 removed (tok0, tok1, tok2)"
    )


def test_a_long_string_is_shown_aligned_on_its_first_difference() -> None:
    old, new = "x" * 300 + "abc", "x" * 300 + "abd"
    text = message({"prompt": old}, {"prompt": new}, "json")
    assert text == 'config.json: prompt after …"xxxxxxxxxxxxxxab": "c" -> "d", at the end'


def test_a_string_that_reads_like_the_number_it_became_is_quoted() -> None:
    assert message({"max_length": "512"}, {"max_length": 512}) == (
        'config.json: max_length "512" -> 512: the default generation length changes'
    )


def test_numbers_rewritten_as_floats_are_one_line_holding_each_value() -> None:
    old = {"bbox_cost": 5, "class_cost": 1, "giou": {"cost": 2}}
    new = {"bbox_cost": 5.0, "class_cost": 1.0, "giou": {"cost": 2.0}}
    (change,) = diff_json("config", "config.json", old, new)
    assert change.severity is Severity.INFO and change.kind == "retyped"
    assert change.message == (
        "config.json: bbox_cost, class_cost, giou.cost: the same values, now floats (e.g. 5 -> 5.0)"
    )
    assert (change.old, change.new) == (old, new)


def test_an_implausible_declared_total_is_a_finding_about_the_index() -> None:
    huge = 256701667093757598507563477393900852847546398236101558255428058075828224
    (change,) = diff_json(
        "weight_index",
        "pytorch_model.bin.index.json",
        {"metadata": {"total_size": huge}},
        {"metadata": {"total_size": 352494542848}},
    )
    assert change.severity is Severity.LOW and (change.old, change.new) == (huge, 352494542848)
    assert change.message == (
        "pytorch_model.bin.index.json: metadata.total_size 2.57e+71 -> 352,494,542,848: the "
        "previous index declares an implausible total (2.57e+71 bytes); loaders do not read it, "
        "but tools that size downloads by it do"
    )


def test_weight_files_with_an_implausible_size_are_not_subtracted() -> None:
    names = [f"pytorch_model_{i:05d}-of-00072.bin" for i in range(1, 73)]
    old = [FileEntry(n, 2**63 - 1, f"a{i}") for i, n in enumerate(names)]
    new = [FileEntry(n, 4_900_000_000, f"b{i}") for i, n in enumerate(names)]
    (change,) = diff_files(old, new)
    assert "total size" not in change.message and absurd_deltas(change.message) == []
    assert (
        "sizes not compared: the previous revision lists 72 at an implausible size "
        "(9.22e+18 bytes for pytorch_model_00001-of-00072.bin)" in change.message
    )
    plain = diff_files(old[:1], [FileEntry(names[0], 2**63 - 1 - 10, "c")])
    assert "sizes not compared" in plain[0].message
    sane = diff_files([FileEntry("a.bin", 1000, "x")], [FileEntry("a.bin", 1500, "y")])
    assert "total size +500 bytes" in sane[0].message


MANIFEST: dict[str, Any] = {
    "tensors": {
        "a.weight": {"dtype": "BF16", "shape": [4, 4], "file": "model-00001-of-00002.safetensors"},
        "b.weight": {"dtype": "BF16", "shape": [4], "file": "model-00002-of-00002.safetensors"},
    },
    "weight_map": {
        "a.weight": "model-00001-of-00002.safetensors",
        "b.weight": "model-00002-of-00002.safetensors",
    },
    "headers": {
        "model-00001-of-00002.safetensors": {"content_key": "k1", "error": None},
        "model-00002-of-00002.safetensors": {"content_key": "k2", "error": None},
    },
}


def test_a_single_file_whose_header_is_unreadable_is_not_weights_removed() -> None:
    new = {
        "tensors": {},
        "weight_map": {},
        "headers": {"model.safetensors": {"content_key": "k3", "error": "header is not JSON"}},
    }
    (change,) = diff_manifests(MANIFEST, new, {"model.safetensors"})
    assert change.kind == "weights_unreadable" and change.severity is Severity.HIGH
    assert change.message == (
        "weights not readable at this revision (model.safetensors: header not read: header is "
        "not JSON); the previous revision's 2 tensors (20 scalars) of "
        "model-00001-of-00002.safetensors, model-00002-of-00002.safetensors are not compared"
    )
    assert change.old == ["a.weight", "b.weight"]


def test_weights_gone_with_their_files_are_one_line_not_three() -> None:
    (change,) = diff_manifests(MANIFEST, None, {"config.json"})
    assert change.kind == "tensors_removed"
    assert change.message.startswith(
        "no safetensors weights at this revision: the previous revision's 2 tensors (20 scalars)"
    )


def test_tensors_removed_from_readable_files_are_still_removed() -> None:
    new = copy.deepcopy(MANIFEST)
    del new["tensors"]["b.weight"]
    kinds = [c.kind for c in diff_manifests(MANIFEST, new, set(MANIFEST["headers"]))]
    assert kinds == ["tensors_removed", "scalars_changed"]


GRANITE = "ibm-granite/granite-3.1-1b-a400m-instruct"
TOKENS = {"eos_token": "<|end_of_text|>", "bos_token": "<|end_of_text|>"}


def granite_template(corpus_dir: Path, sha: str) -> str:
    config = json.loads((corpus_dir / GRANITE / sha / "tokenizer_config.json").read_text())
    template: str = config["chat_template"]
    return template


def test_a_removed_duplicate_block_reads_as_removed_with_what_stays(corpus_dir: Path) -> None:
    old = granite_template(corpus_dir, "0a854d48947ba295cc76a294b46d5f55f26c4bf4")
    new = granite_template(corpus_dir, "c4f8e0dd19f0ce00bca6c9742751d1827e8fa03a")
    source = {"default": "tokenizer_config.json"}
    changes = diff_chat_templates({"default": old}, {"default": new}, TOKENS, TOKENS, source)
    rendering = next(c for c in changes if c.kind == "rendering_changed")
    # the second system block is what went; the first stays before it, the user turn after
    said = rendering.message.split("first system+user (add_generation_prompt=off): ")[1]
    assert said.startswith('after …"<|end_of_text|>\\n": "<|start_of_role|>system<')
    assert 'assistant.<|end_of_text|>\\n" removed, then "<|start_of_role|>user<|e' in said
    assert len(rendering.message) <= MAX_LINE_CHARS


def test_an_unchanged_template_with_a_new_eos_token_says_nothing_of_its_own(
    corpus_dir: Path,
) -> None:
    template = granite_template(corpus_dir, "0a854d48947ba295cc76a294b46d5f55f26c4bf4")
    new_tokens = {**TOKENS, "eos_token": "<|eot|>"}
    changes = diff_chat_templates(
        {"default": template}, {"default": template}, TOKENS, new_tokens, {}
    )
    assert changes == []


def test_excerpt_shows_insertion_and_replacement_with_context() -> None:
    assert (
        excerpt("<s>user\nhi", "<s><bos>user\nhi")
        == 'after "<s>": "<bos>" inserted, then "user\\nhi"'
    )
    assert excerpt("a [/INST]", "a [INST]") == 'after "a [": "/" removed, then "INST]"'
    assert excerpt("role: user", "role: assistant") == (
        'after "role: ": "user" -> "assistant", at the end'
    )


def test_prompts_never_hold_a_memory_address() -> None:
    now = datetime(2025, 1, 1, tzinfo=UTC)
    source = "{{ raise_exception }}|{{ [strftime_now] }}|{{ 'x'.upper ~ '' }}|{{ cycler(1) }}"
    (outcome,) = render_prompts(source, now, [{}])
    assert outcome.text is not None and " at 0x" not in outcome.text
    assert outcome.text.startswith("<function raise_exception>|[<built-in method strftime")


@pytest.mark.parametrize(
    ("line", "check"),
    [
        (
            'config.json: rope_scaling {"long_factor": [1.0299999713897705, 1.04999…'
            ' -> {"long_factor": [1.0299999713897705, 1.04999…: position encoding',
            equal_sides,
        ),
        ("QLoRA peak memory 19.92 GiB -> 19.92 GiB", equal_sides),
        (
            "tokenizer_config.json: 97 tokens added, ids 100352..100352; first: special token "
            "<|pad|> added (id 100256)",
            contradicting_ranges,
        ),
        (
            "72 weight files have new content (a.bin and 71 more); total size "
            "-664,082,786,301,049,315,256 bytes: outputs may differ",
            absurd_deltas,
        ),
    ],
)
def test_the_corpus_checks_catch_the_lines_they_were_written_against(line: str, check: Any) -> None:
    assert check(line) != []


def test_the_corpus_checks_pass_readable_lines() -> None:
    for line in (
        "config.json: rope_theta 10000 -> 100000",
        "config.json: vocab_size 32000 -> 2000",
        "tokenizer_config.json: 96 tokens added, ids 100256..100351; first: x added (id 100256)",
        "2 weight files have new content (a, b); total size +0 bytes",
        'config.json: s after "ab": "c" -> "d", at the end',
    ):
        assert equal_sides(line) + contradicting_ranges(line) + absurd_deltas(line) == [], line


@EMPTY_HUB
def test_a_shard_index_replaced_by_an_unreadable_single_file_is_not_weights_removed(
    hub_emulator: HubEmulator, corpus_dir: Path, tmp_path: Path
) -> None:
    """granite-3.1's "Added bf16 tensors": the sharded index gives way to model.safetensors,
    whose header the emulator cannot serve; the line says so instead of "218 removed"."""
    upload = corpus_dir / GRANITE / "0a854d48947ba295cc76a294b46d5f55f26c4bf4"
    repo = "replay/granite-bf16"
    files = {p: (upload / p).read_bytes() for p in ("config.json", "model.safetensors.index.json")}
    hub_emulator.publish(repo, files, title="Model upload", date=START)
    hub_emulator.publish(
        repo,
        {"model.safetensors": b"\xff" * 64},
        deletions=["model.safetensors.index.json"],
        title="Added bf16 tensors",
        date=START + timedelta(days=1),
    )
    database = open_database(f"sqlite:///{tmp_path}/db.sqlite")
    database.migrate()
    backfill(
        database,
        Hub(connect(HubSettings(hub_emulator.endpoint)), max_retries=0),
        repo,
        clock=recorded_at,
    )
    text = history_text(history_document(database, repo))
    database.close()
    assert "tensors removed" not in text and "total scalars" not in text
    (line,) = [x for x in text.splitlines() if "weights not readable" in x]
    assert line.startswith(
        "  [high] weights not readable at this revision (model.safetensors: header not read: "
        "header declares 18,446,744,073,709,551,615 bytes, over the limit of "
    )
    assert line.endswith(
        "; the previous revision's 218 tensors (1,334,628,352 scalars) of "
        "model-00001-of-00002.safetensors, model-00002-of-00002.safetensors are not compared"
    )


def test_a_changed_template_that_renders_nothing_on_either_side_does_not_claim_identical() -> None:
    old, new = "{{ missing() }}", "{{ missing() }} "
    (change,) = diff_chat_templates({"default": old}, {"default": new}, TOKENS, TOKENS, {})
    assert change.severity is Severity.INFO
    assert change.message.startswith(
        "chat template text changed; no probe prompt renders on both sides to compare "
        "(user (add_generation_prompt=off): UndefinedError: "
    )
    assert "render identically" not in change.message
