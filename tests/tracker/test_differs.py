"""The differs on real upstream files from the corpus and on hostile input built here."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from tokenizers import Tokenizer, models, pre_tokenizers

import estimator
from storage.records import FileEntry, Severity
from tracker.diff.chat_template import diff_chat_templates, render_probes
from tracker.diff.common import DiffContext
from tracker.diff.files import diff_files, is_unsafe_path
from tracker.diff.json_diff import diff_json
from tracker.diff.manifest import diff_manifests, total_scalars
from tracker.diff.plan_delta import diff_plans
from tracker.diff.registry import artifact_for
from tracker.diff.tokenizer import (
    TokenizerParseError,
    diff_tokenizers,
    parse_tokenizer,
    probe_texts,
    summarize_tokenizer,
)
from tracker.untrusted.artifacts import ArtifactParseError, parse_json


def corpus_json(corpus_dir: Path, repo: str, revision: str, path: str) -> object:
    return json.loads((corpus_dir / repo / revision / path).read_text("utf-8"))


def revision_dir(corpus_dir: Path, repo: str, prefix: str) -> str:
    (match,) = [p.name for p in (corpus_dir / repo).iterdir() if p.name.startswith(prefix)]
    return match


def test_llama2_context_length_change_is_high_and_names_both_values(corpus_dir: Path) -> None:
    repo = "meta-llama/Llama-2-7b-hf"
    new_rev = revision_dir(corpus_dir, repo, "335a028")
    new = corpus_json(corpus_dir, repo, new_rev, "config.json")
    assert isinstance(new, dict)
    old = {**new, "max_position_embeddings": 2048}
    changes = diff_json("config", "config.json", old, new)
    assert [(c.kind, c.old, c.new, c.severity) for c in changes] == [
        ("modified", 2048, 4096, Severity.HIGH)
    ]
    assert "max_position_embeddings 2048 -> 4096" in changes[0].message


def test_eos_token_change_names_the_token_text() -> None:
    context = DiffContext(token_names={128001: "<|end_of_text|>", 128009: "<|eot_id|>"})
    (change,) = diff_json(
        "generation_config",
        "generation_config.json",
        {"eos_token_id": 128001},
        {"eos_token_id": [128001, 128009]},
        context,
    )
    assert change.severity is Severity.HIGH
    assert change.message.endswith(
        "eos_token_id 128001 -> [128001, 128009]: generation now also stops at <|eot_id|>"
    )


def test_reflection_eos_list_shrink_says_which_stop_token_is_gone(corpus_dir: Path) -> None:
    repo = "mattshumer/Reflection-Llama-3.1-70B"
    revs = sorted(
        (e["date"], e["revision"])
        for e in json.loads((corpus_dir / "MANIFEST.json").read_text())
        if e["repo_id"] == repo and e["file"] == "generation_config.json"
    )
    old = corpus_json(corpus_dir, repo, revs[0][1], "generation_config.json")
    new = corpus_json(corpus_dir, repo, revs[-1][1], "generation_config.json")
    changes = diff_json(
        "generation_config",
        "generation_config.json",
        old,
        new,
        DiffContext(token_names={128008: "<|eom_id|>"}),
    )
    eos = next(c for c in changes if "eos_token_id" in c.message)
    assert eos.old == [128001, 128008, 128009] and eos.new == [128001, 128009]
    assert "generation no longer stops at <|eom_id|>" in eos.message


def test_rope_scaling_change_is_reported_as_one_high_change(corpus_dir: Path) -> None:
    repo = "meta-llama/Llama-3.2-3B-Instruct"
    new = corpus_json(corpus_dir, repo, revision_dir(corpus_dir, repo, "f6dcb8a"), "config.json")
    assert isinstance(new, dict)
    old = {**new, "rope_scaling": {**new["rope_scaling"], "factor": 8.0}}
    (change,) = diff_json("config", "config.json", old, new)
    assert change.severity is Severity.HIGH
    assert change.old["factor"] == 8.0 and change.new["factor"] == 32.0
    # the sub-key that changed is named, not the whole dict cut to the same prefix twice
    assert change.message == (
        "config.json: rope_scaling.factor 8.0 -> 32.0: position encoding at long context changes"
    )


def test_falcon_model_type_rename_is_high(corpus_dir: Path) -> None:
    repo = "tiiuae/falcon-7b-instruct"
    new = corpus_json(corpus_dir, repo, revision_dir(corpus_dir, repo, "f8dac3f"), "config.json")
    assert isinstance(new, dict)
    old = {**new, "model_type": "RefinedWebModel"}
    (change,) = diff_json("config", "config.json", old, new)
    assert "model_type RefinedWebModel -> falcon" in change.message
    assert change.severity is Severity.HIGH


def test_many_untabled_entries_collapse_into_one_summary() -> None:
    old = {f"<|{i}|>": i for i in range(100)}
    new = {f"<|{i}|>": i + 1 for i in range(100)}
    (change,) = diff_json("json", "added_tokens.json", old, new)
    assert "100 entries changed (100 modified)" in change.message


@pytest.mark.parametrize(
    ("repo", "revision"),
    [
        ("meta-llama/Llama-2-7b-chat-hf", "bd90846d536c982b58c14cec336a3756bfd13ab1"),
        ("openai/clip-vit-large-patch14", "eb96ff977a370947ab00087870f497de35ec49ee"),
    ],
)
def test_the_corpus_invalid_configs_raise_a_parse_error_naming_the_line(
    corpus_dir: Path, repo: str, revision: str
) -> None:
    data = (corpus_dir / repo / revision / "config.json").read_bytes()
    with pytest.raises(ArtifactParseError, match=r"invalid JSON at line \d+ column \d+"):
        parse_json(data)


def test_artifact_table_routes_paths_first_match_wins() -> None:
    names = {
        p: getattr(artifact_for(p), "name", None)
        for p in (
            "config.json",
            "1_Pooling/config.json",
            "model.safetensors.index.json",
            "tokenizer.json",
            "chat_template.jinja",
            "README.md",
            "model.safetensors",
            "x.py",
        )
    }
    assert names == {
        "config.json": "config",
        "1_Pooling/config.json": "json",
        "model.safetensors.index.json": "weight_index",
        "tokenizer.json": "tokenizer",
        "chat_template.jinja": "chat_template",
        "README.md": "card",
        "model.safetensors": None,
        "x.py": None,
    }


def mistral_template(corpus_dir: Path, prefix: str) -> tuple[str, dict[str, str]]:
    repo = "mistralai/Mistral-7B-Instruct-v0.3"
    document = corpus_json(
        corpus_dir, repo, revision_dir(corpus_dir, repo, prefix), "tokenizer_config.json"
    )
    assert isinstance(document, dict)
    return document["chat_template"], {"bos_token": "<s>", "eos_token": "</s>"}


def test_mistral_template_rewrite_is_judged_by_rendered_prompts(corpus_dir: Path) -> None:
    old, tokens = mistral_template(corpus_dir, "cefa1e1")
    new, _ = mistral_template(corpus_dir, "b85b5dd")
    (change,) = diff_chat_templates(
        {"default": old}, {"default": new}, tokens, tokens, {"default": "tokenizer_config.json"}
    )
    assert change.kind == "rendering_changed" and change.severity is Severity.HIGH
    # The upstream rewrite dropped the space before [/INST]: visible in the rendered prompt.
    assert 'after …"pital of France?": " " removed, then "[/INST]"' in change.message


def test_reformatted_template_with_identical_prompts_is_only_info(corpus_dir: Path) -> None:
    old, tokens = mistral_template(corpus_dir, "b0693ea")
    new, _ = mistral_template(corpus_dir, "b8ef225")
    assert old != new
    (change,) = diff_chat_templates({"default": old}, {"default": new}, tokens, tokens, {})
    assert change.severity is Severity.INFO and "render identically" in change.message


def test_generation_prompt_suffix_change_is_named() -> None:
    base = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% endfor %}"
    old = base + "{% if add_generation_prompt %}<|assistant|>{% endif %}"
    new = base + "{% if add_generation_prompt %}<|assistant|><think>\n{% endif %}"
    changes = diff_chat_templates({"default": old}, {"default": new}, {}, {}, {})
    suffix = next(c for c in changes if c.kind == "generation_prompt_changed")
    assert suffix.old == "<|assistant|>" and suffix.new == "<|assistant|><think>\n"


def test_looping_template_is_stopped_and_recorded_as_render_error() -> None:
    looping = "{% for i in range(99999) %}{% for j in range(99999) %}{% endfor %}{% endfor %}"
    started = time.monotonic()
    (change,) = diff_chat_templates(
        {"default": "{{ messages[0].content }}"}, {"default": looping}, {}, {}, {}
    )
    assert time.monotonic() - started < 3
    assert change.kind == "render_error" and "took longer than" in change.message
    assert "template could not be rendered within limits (rendering took longer" in change.message


def test_a_template_that_used_to_fail_on_the_generation_tag_now_renders(corpus_dir: Path) -> None:
    template = (corpus_dir / "HuggingFaceTB/SmolLM3-3B/unknown/chat_template.jinja").read_text()
    changes = diff_chat_templates({}, {"default": template}, {}, {}, {})
    assert [(c.kind, c.severity) for c in changes] == [("added", Severity.MODERATE)]


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("{{ raise_exception('roles must alternate') }}", "TemplateError: roles must alternate"),
        ("{{ ''.__class__.__mro__[1].__subclasses__() }}", "SecurityError"),
        ("{{ 'x' * 1000000000 }}", "repeating a sequence"),
        ("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", "recursed too deeply"),
    ],
)
def test_hostile_templates_fail_inside_the_sandbox(template: str, expected: str) -> None:
    rendered = render_probes(template, {})
    assert all(r.text is None and expected in (r.error or "") for r in rendered.values())


def make_tokenizer(vocab: list[str], special: list[str]) -> bytes:
    tokenizer = Tokenizer(models.WordLevel({t: i for i, t in enumerate(vocab)}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.add_special_tokens(special)
    return tokenizer.to_str().encode()


def test_tokenizer_diff_reports_vocab_size_and_changed_ids() -> None:
    words = ["[UNK]", "Hello", ",", "world", "!", "The", "quick"]
    old = parse_tokenizer(make_tokenizer(words, ["<s>", "</s>"]))
    realigned = ["[UNK]", "world", "Hello", ",", "!", "The", "quick", "fox"]
    new = parse_tokenizer(make_tokenizer(realigned, ["<s>", "<|eot_id|>"]))
    changes = {c.kind: c for c in diff_tokenizers("tokenizer.json", old, new)}
    assert set(changes) == {"vocab_size", "encoding_changed"}  # special tokens: their own table
    assert changes["vocab_size"].old == 9 and changes["vocab_size"].new == 10
    assert changes["encoding_changed"].old["Hello, world!"] == [1, 2, 3, 4]
    assert changes["encoding_changed"].new["Hello, world!"] == [2, 3, 1, 4]


def test_tokenizer_loaded_in_the_worker_has_the_facts_of_one_loaded_here() -> None:
    data = make_tokenizer(["[UNK]", "Hello", ",", "world", "!"], ["<s>", "<|eot_id|>"])
    here = summarize_tokenizer(data, probe_texts())
    assert parse_tokenizer(data) == here
    assert not isinstance(here, str) and here.special_tokens == {"<s>": 5, "<|eot_id|>": 6}


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"\xff\xfe", "can't decode byte 0xff"),
        (b"[" * 100_000, "invalid type: sequence"),
        (b'{"model": 1e999999}', "number out of range"),
        (b"{}", "Model missing"),
    ],
    ids=["not utf-8", "deep nesting", "huge number", "no model"],
)
def test_hostile_tokenizer_files_are_parse_errors_naming_the_reason(
    data: bytes, reason: str
) -> None:
    with pytest.raises(TokenizerParseError, match="tokenizers cannot load it") as caught:
        parse_tokenizer(data)
    assert reason in str(caught.value)


def test_identical_tokenizers_have_no_changes() -> None:
    data = make_tokenizer(["[UNK]", "a"], ["<s>"])
    assert diff_tokenizers("tokenizer.json", parse_tokenizer(data), parse_tokenizer(data)) == []


def entry(path: str, key: str = "a" * 40, size: int = 10) -> FileEntry:
    return FileEntry(path=path, size=size, blob_id=key)


@pytest.mark.parametrize(
    "name", ["../evil.json", "a/../../b", "/etc/passwd", "a//b", "C:x", "a\\..\\b"]
)
def test_escaping_file_names_are_unsafe(name: str) -> None:
    assert is_unsafe_path(name)


def test_code_pickles_and_format_change_are_flagged() -> None:
    old = [entry("pytorch_model.bin"), entry("config.json")]
    new = [
        entry("model.safetensors"),
        entry("config.json"),
        entry("modeling_x.py"),
        entry("extra.pkl"),
        entry("../up.json"),
    ]
    kinds = {c.kind: c for c in diff_files(old, new)}
    assert set(kinds) == {"unsafe_path", "added", "pickle_added", "format_changed"}
    assert "weight format .bin -> .pkl, .safetensors" in kinds["format_changed"].message
    assert kinds["added"].path == "modeling_x.py" and kinds["added"].severity is Severity.HIGH


def test_manifest_diff_names_reshaped_tensors_scalars_and_missing_shards() -> None:
    old = {
        "tensors": {"w": {"dtype": "BF16", "shape": [4, 4], "file": "a.safetensors"}},
        "weight_map": {"w": "a.safetensors"},
        "headers": {},
    }
    new = {
        "tensors": {
            "w": {"dtype": "F32", "shape": [4, 8], "file": "a.safetensors"},
            "b": {"dtype": "F32", "shape": [8], "file": "a.safetensors"},
        },
        "weight_map": {"w": "a.safetensors", "b": "sub/b.safetensors"},
        "headers": {},
    }
    kinds = {c.kind: c for c in diff_manifests(old, new, {"a.safetensors"})}
    assert total_scalars(new) == 40
    assert kinds["scalars_changed"].old == 16 and kinds["scalars_changed"].new == 40
    assert kinds["tensors_reshaped"].new == {"w": [4, 8]}
    assert kinds["dtype_changed"].old == {"w": "BF16"}
    assert kinds["shard_missing"].path == "sub/b.safetensors"


def test_plan_delta_words_parameters_and_card_batches_with_numbers() -> None:
    config = json.loads(
        (Path(__file__).parents[1] / "data/configs/llama-3.2-1b/config.json").read_text()
    )
    old = estimator.plan(config)
    new = estimator.plan({**config, "num_hidden_layers": config["num_hidden_layers"] * 2})
    changes = diff_plans(old, new)
    params = next(c for c in changes if c.kind == "parameters_changed")
    totals = (dict(old.parameters)["total"], dict(new.parameters)["total"])
    assert (params.old, params.new) == totals
    assert params.new > params.old
    assert f"parameters {params.old:,} -> {params.new:,}" == params.message
    methods = [c for c in changes if c.kind != "parameters_changed"]
    assert len(methods) == 4, [c.message for c in changes]
    assert all(isinstance(c.old, int) and isinstance(c.new, int) for c in methods)
    assert any(c.message.startswith("Serving at batch 32 x 512 tokens on A10G:") for c in methods)
