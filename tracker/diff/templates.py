"""The chat template row's differ: the templates transformers would load, compared as prompts.

A template may live in tokenizer_config.json's ``chat_template``, in
chat_template.json or in chat_template.jinja; the later overrides the
earlier, as transformers loads them. This view gathers the effective
templates and the bos/eos/pad/unk texts they render with at both revisions
and hands them to ``tracker.diff.chat_template``, which renders the probes.
"""

from __future__ import annotations

from typing import Any

from storage.records import Change
from tracker.artifacts import ArtifactParseError, Side, templates_from
from tracker.diff.chat_template import diff_chat_templates

SPECIAL_TOKEN_NAMES = ("bos_token", "eos_token", "pad_token", "unk_token")
TEMPLATE_SOURCES = ("tokenizer_config.json", "chat_template.json", "chat_template.jinja")
"""Where a chat template may live, lowest precedence first (as transformers loads them)."""


def effective_templates(side: Side) -> tuple[dict[str, str], dict[str, str]]:
    """The chat templates transformers would load (name -> source) and the file of each."""
    templates: dict[str, str] = {}
    sources: dict[str, str] = {}
    for path in TEMPLATE_SOURCES:
        found = _templates_in(path, side.value(path))
        templates.update(found)
        sources.update(dict.fromkeys(found, path))
    return templates, sources


def _templates_in(path: str, value: Any) -> dict[str, str]:
    if path == "tokenizer_config.json":
        raw = value.get("chat_template") if isinstance(value, dict) else None
        try:
            return templates_from(raw) if raw is not None else {}
        except ArtifactParseError:
            return {}
    if isinstance(value, str):
        return {"default": value}
    return value if isinstance(value, dict) else {}


def special_tokens(side: Side) -> dict[str, str]:
    """bos/eos/pad/unk token text as templates see it (tokenizer_config, then the map)."""
    out: dict[str, str] = {}
    for path in ("special_tokens_map.json", "tokenizer_config.json"):
        document = side.value(path)
        if not isinstance(document, dict):
            continue
        for name in SPECIAL_TOKEN_NAMES:
            token = document.get(name)
            if isinstance(token, dict):
                token = token.get("content")
            if isinstance(token, str):
                out[name] = token
    return out


def diff_template_view(kind: str, old: Side | None, new: Side) -> list[Change]:
    """Rendered-prompt changes of the effective templates; nothing for a first revision."""
    if old is None:
        return []
    old_templates, old_sources = effective_templates(old)
    new_templates, new_sources = effective_templates(new)
    old_tokens, new_tokens = special_tokens(old), special_tokens(new)
    if old_templates == new_templates and old_tokens == new_tokens:
        return []
    return diff_chat_templates(
        old_templates, new_templates, old_tokens, new_tokens, {**old_sources, **new_sources}
    )


__all__ = ["diff_template_view", "effective_templates", "special_tokens"]
