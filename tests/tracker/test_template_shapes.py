"""Chat templates are probed with every conversation shape, and changes say what users see.

Corpus templates are read from the recorded upstream files; what a template does with a
shape is checked against its own text (the raise_exception message it holds), not
against the differ's output.
"""

from __future__ import annotations

import json
from pathlib import Path

from storage.records import Severity
from tracker.diff.chat_template import diff_chat_templates
from tracker.diff.template_probes import Support, probes, render_probes, shapes, support_of

GEMMA = "google/gemma-2b-it/fa36ef48a7630e91415badb498d31254ee395eb7"
MISTRAL = "mistralai/Mistral-7B-Instruct-v0.3"
SMOLLM3 = "HuggingFaceTB/SmolLM3-3B/unknown/chat_template.jinja"
USERS_ONLY = (
    "{% for m in messages %}{% if m.role == 'user' %}<u>{{ m.content }}</u>{% endif %}{% endfor %}"
)


def tokenizer_template(corpus_dir: Path, folder: str) -> tuple[str, dict[str, str]]:
    document = json.loads((corpus_dir / folder / "tokenizer_config.json").read_text("utf-8-sig"))
    tokens = {
        k: v if isinstance(v, str) else v["content"]
        for k, v in document.items()
        if k in ("bos_token", "eos_token") and v is not None
    }
    return str(document["chat_template"]), tokens


def test_both_revisions_are_rendered_over_every_shape_even_without_tools() -> None:
    rendered = render_probes("{{ messages[0].content }}", {})
    assert set(rendered) == {p.label for p in probes()}
    assert len(shapes()) == 6 and len(rendered) == 12  # each shape, generation prompt off and on
    assert {"tool definitions", "tool calls and results", "system message"} <= set(shapes())


def test_a_template_refusing_system_messages_by_design_is_added_not_broken(
    corpus_dir: Path,
) -> None:
    template, tokens = tokenizer_template(corpus_dir, GEMMA)
    assert "raise_exception('System role not supported')" in template
    support = support_of(render_probes(template, tokens))
    assert support["system message"].support is Support.REFUSES
    assert "System role not supported" in (support["system message"].error or "")
    assert support["plain chat"].support is Support.RENDERS
    (change,) = diff_chat_templates({}, {"default": template}, {}, tokens, {})
    assert (change.kind, change.severity) == ("added", Severity.MODERATE)
    assert "refuses system message" in change.message and "fails" not in change.message


def test_a_tool_calling_rewrite_is_named_as_a_tool_change(corpus_dir: Path) -> None:
    # b0693ea taught the v0.3 template [AVAILABLE_TOOLS]; 43ee8f4 before it never read tools.
    old, tokens = tokenizer_template(
        corpus_dir, f"{MISTRAL}/43ee8f4afb6fc9e4304a8ed87aaa3a36a0e06939"
    )
    new, _ = tokenizer_template(corpus_dir, f"{MISTRAL}/b0693ea4ce84f1a6a70ee5ac7c8efb0df82875f6")
    assert "tools" not in old and "[AVAILABLE_TOOLS]" in new
    changes = diff_chat_templates({"default": old}, {"default": new}, tokens, tokens, {})
    rendering = next(c for c in changes if c.kind == "rendering_changed")
    assert rendering.severity is Severity.HIGH
    assert "(tool definitions)" in rendering.message
    assert "now uses tool definitions, which it ignored before" in rendering.message
    assert set(rendering.new) == {
        "tools offered (add_generation_prompt=off)",
        "tools offered (add_generation_prompt=on)",
    }
    assert all("[AVAILABLE_TOOLS]" in text for text in rendering.new.values())
    assert not any(c.severity is Severity.INFO for c in changes)


def test_a_shape_refused_by_design_after_an_update_is_moderate_and_named() -> None:
    old = "{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}"
    new = (
        "{% if messages[0].role == 'system' %}{{ raise_exception('System role not supported') }}"
        "{% endif %}" + old
    )
    changes = diff_chat_templates({"default": old}, {"default": new}, {}, {}, {})
    (refused,) = [c for c in changes if c.kind == "shape_refused"]
    assert refused.severity is Severity.MODERATE
    assert refused.message.startswith(
        "chat template now refuses system message, system message + multi-turn "
        "(TemplateError: System role not supported)"
    )
    assert not any(c.kind == "render_error" for c in changes)
    back = diff_chat_templates({"default": new}, {"default": old}, {}, {}, {})
    assert [(c.kind, c.severity) for c in back] == [("shape_accepted", Severity.LOW)]


def test_a_template_that_drops_system_messages_is_seen_to_ignore_them() -> None:
    support = support_of(render_probes(USERS_ONLY, {}))
    assert support["system message"].support is Support.IGNORES
    assert support["multi-turn"].support is Support.IGNORES  # the assistant turn is dropped
    assert support["plain chat"].support is Support.RENDERS


def test_a_real_failure_on_plain_chat_is_still_high() -> None:
    (change,) = diff_chat_templates({}, {"default": "{{ messages[0].content.nope() }}"}, {}, {}, {})
    assert (change.kind, change.severity) == ("render_error", Severity.HIGH)


def test_smollm3_generation_tag_renders_every_shape(corpus_dir: Path) -> None:
    template = (corpus_dir / SMOLLM3).read_text("utf-8")
    assert "{% generation %}" in template
    support = support_of(render_probes(template, {}))
    assert {s.support for s in support.values()} == {Support.RENDERS}
