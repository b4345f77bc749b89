"""Hostile chat templates are refused or stopped within limits; real ones render as before."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import pytest

from storage.records import Severity
from tracker.diff.chat_template import LIMITED, diff_chat_templates, render_probes
from tracker.diff.template_probes import probes

LIMIT_PHRASE = LIMITED.split("(")[0]
SECONDS_PER_HOSTILE_TEMPLATE = 3.0
DOUBLING = (
    "{% set ns = namespace(v=SEED) %}{% for i in range(64) %}{% set ns.v = STEP %}{% endfor %}"
)

HOSTILE = {
    "nested powers": ("{{ ((((9**64)**64)**64)**64)**64 }}", "integer power"),
    "center filter": ("{{ 'x'|center(900000000) }}", "|center width 900000000 exceeds"),
    "ljust": ("{{ 'x'.ljust(900000000) }}", "str.ljust width"),
    "rjust": ("{{ 'x'.rjust(900000000) }}", "str.rjust width"),
    "zfill": ("{{ 'a'.zfill(10**9) }}", "str.zfill width"),
    "expandtabs": ("{{ '\\t\\t'.expandtabs(10**9) }}", "str.expandtabs would pass"),
    "str.format width": ("{{ '{:>900000000}'.format(1) }}", "format width/precision"),
    "str.format nested width": ("{{ '{:>{w}}'.format(1, w=900000000) }}", "format width"),
    "format_map precision": (
        "{{ '{a:.900000000f}'.format_map({'a': 1.5}) }}",
        "format width/precision",
    ),
    "markup format": ("{{ ('{:>900000000}'|safe).format(1) }}", "format width"),
    "percent width": ("{{ '%900000000d' % 1 }}", "%-format width 900000000"),
    "percent precision": ("{{ '%.900000000f' % 1.5 }}", "%-format precision"),
    "percent star width": ("{{ '%*d' % (900000000, 1) }}", "%-format * width"),
    "format filter": ("{{ '%900000000s'|format('x') }}", "%-format width"),
    "format filter star": ("{{ '%*s'|format(900000000, 'x') }}", "%-format * width"),
    "indent filter": ("{{ 'a\\nb'|indent(900000000) }}", "|indent width"),
    "wordwrap filter": ("{{ 'a b'|wordwrap(900000000) }}", "|wordwrap width"),
    "wordwrap wrapstring": (
        "{{ ('a ' * 50000)|wordwrap(1, wrapstring='x' * 50000) }}",
        "|wordwrap would pass",
    ),
    "truncate filter": ("{{ 'abc'|truncate(10**9) }}", "|truncate length"),
    "batch filter": ("{{ ['a']|batch(10**9, 'y')|list }}", "|batch linecount"),
    "slice filter": ("{{ [1]|slice(10**9)|list }}", "|slice slices"),
    "string repeat chain": ("{{ ('x' * 1000) * 1000 * 1000 }}", "repeating a sequence"),
    "list repeat": ("{{ [0] * 10**9 }}", "repeating a sequence"),
    "huge range": ("{{ range(10**9)|list|length }}", "Range too big"),
    "nested loops": (
        "{% for i in range(99999) %}{% for j in range(99999) %}{% endfor %}{% endfor %}",
        "took longer than",
    ),
    "macro recursion": ("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", "recursed"),
    "recursive loop": (
        "{% for x in [[1]] recursive %}{{ loop([x]) }}{% endfor %}",
        "recursed too deeply",
    ),
    "deeply nested source": ("{{ " + "(" * 3000 + "1" + ")" * 3000 + " }}", "recursed"),
    "set doubling with ~": (
        DOUBLING.replace("SEED", "'x'").replace("STEP", "ns.v ~ ns.v") + "{{ ns.v|length }}",
        "~ concatenation would pass",
    ),
    "set doubling with +": (
        DOUBLING.replace("SEED", "'x'").replace("STEP", "ns.v + ns.v") + "{{ ns.v|length }}",
        "concatenation would pass",
    ),
    "namespace list growth": (
        DOUBLING.replace("SEED", "[0]").replace("STEP", "ns.v + ns.v + [i]") + "{{ ns.v|length }}",
        "concatenation would pass",
    ),
    "integer squaring loop": (
        DOUBLING.replace("SEED", "3").replace("STEP", "ns.v * ns.v") + "{{ ns.v % 7 }}",
        "integer product",
    ),
    "tojson of a self-doubling list": (
        DOUBLING.replace("SEED", "[1]").replace("STEP", "[ns.v, ns.v]") + "{{ ns.v|tojson }}",
        "tojson would pass",
    ),
    "printing a self-doubling dict": (
        DOUBLING.replace("SEED", "{}").replace("STEP", "{'a': ns.v, 'b': ns.v}") + "{{ ns.v }}",
        "printing a value would pass",
    ),
    "string filter of a self-doubling list": (
        DOUBLING.replace("SEED", "[1]").replace("STEP", "[ns.v, ns.v]") + "{{ ns.v|string }}",
        "|string would pass",
    ),
    "join filter of a big range": ("{{ range(100000)|join('x' * 10000) }}", "|join would pass"),
    "str.join with a big separator": (
        "{{ ('y' * 50000).join(range(30)|map('string')) }}",
        "str.join would pass",
    ),
    "str.replace growth": ("{{ ('a' * 99999).replace('a', 'b' * 99999) }}", "str.replace"),
    "replace filter growth": ("{{ ('a' * 99999)|replace('a', 'bb' * 40000) }}", "|replace"),
    "lipsum": ("{{ lipsum(10**6) }}", "lipsum(1000000"),
    "cycler in a long loop": (
        "{% set c = cycler('a', 'b') %}{% for i in range(99999) %}{% for j in range(99999) %}"
        "{% set _ = c.next() %}{% endfor %}{% endfor %}",
        "took longer than",
    ),
    "output size": ("{% for i in range(100000) %}{{ 'x' * 99 }}{% endfor %}", "rendered prompt"),
}


def test_the_hostile_corpus_has_at_least_twenty_templates() -> None:
    assert len(HOSTILE) >= 20


@pytest.mark.parametrize(("template", "reason"), HOSTILE.values(), ids=HOSTILE.keys())
def test_hostile_template_is_refused_or_stopped_within_limits(template: str, reason: str) -> None:
    started = time.monotonic()
    rendered = render_probes(template, {})
    elapsed = time.monotonic() - started
    errors = [r.error or "" for r in rendered.values()]
    assert all(r.text is None for r in rendered.values())
    # A slow refusal may leave the later probes to the shared deadline; all are limits.
    assert all(e.startswith(LIMIT_PHRASE) for e in errors), errors
    assert reason in errors[0], errors[0]
    assert elapsed < SECONDS_PER_HOSTILE_TEMPLATE


def rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def test_the_daemon_process_does_not_grow_while_hostile_templates_render() -> None:
    render_probes("{{ messages[0].content }}", {})  # the pool and its imports are warm
    before = rss_bytes()
    for template, _ in HOSTILE.values():
        render_probes(template, {})
    assert rss_bytes() - before < 5 * 1024 * 1024


def test_a_refused_template_is_a_recorded_high_change_naming_the_limit() -> None:
    (change,) = diff_chat_templates(
        {"default": "{{ messages[0].content }}"},
        {"default": "{{ 'x'|center(900000000) }}"},
        {},
        {},
        {"default": "tokenizer_config.json"},
    )
    assert change.kind == "render_error" and change.severity is Severity.HIGH
    assert "template could not be rendered within limits (|center width 900000000" in (
        change.message
    )


def test_templates_within_the_caps_still_render() -> None:
    template = (
        "{{ 'x'|center(9) }}|{{ '{:>6.2f}'.format(3.14159) }}|{{ '%5d' % 42 }}|{{ 2 ** 10 }}|"
        "{{ (9 ** 64) % 1000 }}|{{ [1, 2]|tojson }}|{{ 'a' ~ 'b' }}|{{ range(3)|join(',') }}"
    )
    (text,) = {r.text for r in render_probes(template, {}).values()}
    assert text == "    x    |  3.14|   42|1024|" + str(9**64 % 1000) + "|[1, 2]|ab|0,1,2"


def smollm3_template(corpus_dir: Path) -> str:
    return (corpus_dir / "HuggingFaceTB/SmolLM3-3B/unknown/chat_template.jinja").read_text()


def test_smollm3_generation_tag_template_renders(corpus_dir: Path) -> None:
    template = smollm3_template(corpus_dir)
    assert "{% generation %}" in template
    rendered = render_probes(template, {})
    assert all(r.error is None for r in rendered.values())
    reply = rendered["multi-turn (add_generation_prompt=off)"].text or ""
    assert "<|im_start|>assistant\n" in reply and reply.endswith("<|im_end|>\n")


def recorded_renders() -> dict[str, dict[str, str]]:
    path = Path(__file__).parents[1] / "data/corpus_template_renders.json"
    renders: dict[str, dict[str, str]] = json.loads(path.read_text("utf-8"))["renders"]
    return renders


def corpus_templates(corpus_dir: Path, key: str) -> tuple[str, dict[str, str]]:
    path, name = key.rsplit("#", 1)
    file = corpus_dir / path
    if file.name == "chat_template.jinja":
        return file.read_text("utf-8"), {}
    document = json.loads(file.read_text("utf-8-sig"))
    raw = document["chat_template"]
    templates = (
        {"default": raw} if isinstance(raw, str) else {t["name"]: t["template"] for t in raw}
    )
    tokens = {}
    for token_name in ("bos_token", "eos_token", "pad_token", "unk_token"):
        token = document.get(token_name)
        token = token.get("content") if isinstance(token, dict) else token
        if isinstance(token, str):
            tokens[token_name] = token
    return templates[name], tokens


def fingerprint(text: str | None, error: str | None) -> str:
    return f"sha256:{hashlib.sha256(text.encode()).hexdigest()}" if text else f"error:{error}"


# Templates from different families: Llama 3 with tools, Mistral, Gemma, DeepSeek, gpt-oss, Phi-3.
SAMPLED = (
    "meta-llama/Llama-3.2-3B-Instruct/45026b798cd537efe6a1abcb93040ad21d416c43/tokenizer_config.json#default",
    "mistralai/Mistral-7B-Instruct-v0.3/b0693ea4ce84f1a6a70ee5ac7c8efb0df82875f6/tokenizer_config.json#default",
    "google/gemma-2b-it/070afe6bcc9aa811d33bfadb368f09e90955bfa4/tokenizer_config.json#default",
    "deepseek-ai/DeepSeek-R1/7bae4bacd0f64d020364cc43d9560588893e94cc/tokenizer_config.json#default",
    "openai/gpt-oss-20b/03fd454aae9be5799e9531726db7f6d0673675cb/chat_template.jinja#default",
    "microsoft/Phi-3-mini-4k-instruct/unknown/tokenizer_config.json#default",
)


@pytest.mark.parametrize("key", SAMPLED, ids=[k.split("/")[1] for k in SAMPLED])
def test_corpus_template_renders_the_prompts_recorded_before_isolation(
    corpus_dir: Path, key: str
) -> None:
    template, tokens = corpus_templates(corpus_dir, key)
    rendered = render_probes(template, tokens)
    recorded = recorded_renders()[key]  # recorded before tool probes ran for every template
    got = {p: fingerprint(r.text, r.error) for p, r in rendered.items()}
    assert set(got) == {p.label for p in probes()} >= set(recorded)
    assert {p: got[p] for p in recorded} == recorded


@pytest.mark.slow
def test_every_corpus_template_renders_as_recorded_except_smollm3_which_now_renders(
    corpus_dir: Path,
) -> None:
    for key, recorded in recorded_renders().items():
        template, tokens = corpus_templates(corpus_dir, key)
        rendered = render_probes(template, tokens)
        if key.startswith("HuggingFaceTB/SmolLM3-3B/"):
            assert all("unknown tag 'generation'" in r for r in recorded.values())
            assert all(r.error is None for r in rendered.values())
            continue
        got = {p: fingerprint(r.text, r.error) for p, r in rendered.items()}
        assert {p: got[p] for p in recorded} == recorded, key
