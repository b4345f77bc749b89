"""Content evaluated in the isolated pool once is answered from memory, exactly as a new
evaluation answers it; what a limit stopped is evaluated again, under the same limits."""

from __future__ import annotations

import json
import pickle
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from tokenizers import Tokenizer, models, pre_tokenizers

from tracker.diff import template_probes, tokenizer
from tracker.diff.chat_template import diff_chat_templates
from tracker.diff.template_probes import render_probes
from tracker.diff.tokenizer import parse_tokenizer
from tracker.errors import TokenizerParseError
from tracker.untrusted.evaluated import EvaluatedByContent, content_key
from tracker.untrusted.isolation import IsolatedPool

PLAIN = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}\n{% endfor %}"
TOKENS = {"bos_token": "<s>", "eos_token": "</s>"}


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The names of the functions sent to an isolated worker during the test (the calls
    still run)."""
    sent: list[str] = []
    real = IsolatedPool.call

    def counted(self: IsolatedPool, function: object, *args: object, **kwargs: object) -> object:
        sent.append(getattr(function, "__name__", "?"))
        return real(self, function, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(IsolatedPool, "call", counted)
    yield sent


def unique(template: str) -> str:
    """``template`` with a comment no other test renders, so nothing is kept for it yet."""
    return f"{{# {uuid.uuid4()} #}}{template}"


def test_content_keys_tell_apart_where_parts_end_and_what_they_are() -> None:
    assert content_key("ab", "c") != content_key("a", "bc")
    assert content_key("a") != content_key(b"a")
    assert content_key("a", "b") == content_key("a", "b")
    assert content_key("\ud800") != content_key("\udc00")  # lone surrogates from JSON


def test_the_least_recently_used_result_goes_once_the_budget_is_spent() -> None:
    size = len(pickle.dumps("x" * 20, pickle.HIGHEST_PROTOCOL))
    kept: EvaluatedByContent[str] = EvaluatedByContent(budget=2 * size + size // 2)
    kept.keep("a", "x" * 20)
    kept.keep("b", "y" * 20)
    assert kept.get("a") == "x" * 20  # a is now the most recent
    kept.keep("c", "z" * 20)  # three pickles pass the budget: b, the least recent, goes
    assert (kept.get("a"), kept.get("b"), kept.get("c")) == ("x" * 20, None, "z" * 20)
    kept.keep("d", "w" * 3 * size)  # over the whole budget: not kept, and nothing else goes
    assert (kept.get("d"), kept.get("a")) == (None, "x" * 20)


def test_a_template_rendered_before_is_not_rendered_again(calls: list[str]) -> None:
    template = unique(PLAIN)
    first = render_probes(template, TOKENS)
    again = render_probes(template, TOKENS)
    assert calls == ["render_prompts"] and again == first
    assert (
        first["user (add_generation_prompt=off)"].text == "<|user|>What is the capital of France?\n"
    )
    render_probes(template, {**TOKENS, "eos_token": "<|end|>"})  # other variables: rendered
    assert calls == ["render_prompts"] * 2


def test_a_walk_renders_each_template_once(calls: list[str]) -> None:
    one, two, three = (unique(PLAIN + suffix) for suffix in ("1", "2", "3"))
    diff_chat_templates({"default": one}, {"default": two}, TOKENS, TOKENS, {})
    diff_chat_templates({"default": two}, {"default": three}, TOKENS, TOKENS, {})
    reverted = diff_chat_templates({"default": three}, {"default": one}, TOKENS, TOKENS, {})
    assert calls == ["render_prompts"] * 3
    assert [c.kind for c in reverted] == ["rendering_changed"]


def test_a_template_stopped_by_a_limit_renders_again_each_time(calls: list[str]) -> None:
    template = unique("{{ 'x'|center(900000000) }}")
    for _ in range(2):
        rendered = render_probes(template, {})
        assert all("|center width 900000000" in (r.error or "") for r in rendered.values())
    assert calls == ["render_prompts"] * 2


def corpus_templates(corpus_dir: Path) -> dict[str, str]:
    """Every chat template the corpus records, by where it came from."""
    found = {
        str(path.relative_to(corpus_dir)): path.read_text("utf-8")
        for path in corpus_dir.rglob("chat_template.jinja")
    }
    for path in corpus_dir.rglob("tokenizer_config.json"):
        template = json.loads(path.read_text("utf-8-sig")).get("chat_template")
        if isinstance(template, str):
            found[str(path.relative_to(corpus_dir))] = template
    return found


def test_kept_renders_equal_new_renders_for_every_corpus_template(
    corpus_dir: Path, calls: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    templates = corpus_templates(corpus_dir)
    assert len(templates) >= 40
    for tokens in ({}, TOKENS):
        # a fresh store each time: every template is rendered by a worker, then kept
        monkeypatch.setattr(
            template_probes, "_RENDERED", EvaluatedByContent(template_probes.RENDERED_BUDGET)
        )
        rendered = {where: render_probes(t, tokens) for where, t in templates.items()}
        calls.clear()
        for where, template in templates.items():
            assert render_probes(template, tokens) == rendered[where], where
        assert calls == []


def make_tokenizer(vocab: list[str]) -> bytes:
    built = Tokenizer(models.WordLevel({t: i for i, t in enumerate(vocab)}, unk_token="[UNK]"))
    built.pre_tokenizer = pre_tokenizers.Whitespace()
    built.add_special_tokens([f"<{uuid.uuid4()}>"])  # content no other test loads
    return built.to_str().encode()


def test_a_tokenizer_file_loaded_before_is_not_loaded_again(calls: list[str]) -> None:
    data = make_tokenizer(["[UNK]", "Hello", ",", "world", "!"])
    first = parse_tokenizer(data)
    assert parse_tokenizer(bytes(data)) == first  # equal bytes, another object
    assert calls == ["summarize_tokenizer"]
    assert first.vocab_size == 6 and first.encodings[0][:2] == (1, 2)


def test_a_tokenizer_file_that_does_not_load_says_so_each_time_from_one_load(
    calls: list[str],
) -> None:
    broken = b'{"model": {"type": "' + str(uuid.uuid4()).encode() + b'"}}'
    messages = []
    for _ in range(2):
        with pytest.raises(TokenizerParseError) as raised:
            parse_tokenizer(broken)
        messages.append(str(raised.value))
    assert messages[0] == messages[1] and "tokenizers cannot load it" in messages[0]
    assert calls == ["summarize_tokenizer"]


def test_a_tokenizer_file_stopped_by_a_limit_loads_again(
    calls: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tokenizer, "PARSE_WALL_SECONDS", 0.0)  # no worker answers at once
    data = make_tokenizer(["[UNK]", *(f"w{i}" for i in range(50_000))])  # ~50 ms to load
    for _ in range(2):
        with pytest.raises(TokenizerParseError, match="within limits"):
            parse_tokenizer(data)
    assert calls == ["summarize_tokenizer"] * 2
