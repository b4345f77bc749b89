"""The chat template row's differ: the templates transformers would load, compared as prompts.

A template may live in tokenizer_config.json's ``chat_template``, in
chat_template.json or in chat_template.jinja; the later overrides the
earlier, as transformers loads them. This view gathers the effective
templates and the bos/eos/pad/unk texts they render with at both revisions
and hands them to ``tracker.diff.chat_template``, which renders the probes.
"""

from __future__ import annotations

from typing import Any

from storage.records import Change, Severity
from tracker.diff.chat_template import ARTIFACT, diff_chat_templates
from tracker.untrusted.artifacts import ArtifactParseError, Side, templates_from

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
    """Rendered-prompt changes of the effective templates, then each JSON file whose
    template text changed; nothing for a first revision."""
    if old is None:
        return []
    old_templates, old_sources = effective_templates(old)
    new_templates, new_sources = effective_templates(new)
    old_tokens, new_tokens = special_tokens(old), special_tokens(new)
    sources = _source_changes(old, new, new_sources)
    if old_templates == new_templates and old_tokens == new_tokens:
        return sources
    return (
        diff_chat_templates(
            old_templates, new_templates, old_tokens, new_tokens, {**old_sources, **new_sources}
        )
        + sources
    )


def _source_changes(old: Side, new: Side, effective: dict[str, str]) -> list[Change]:
    """A JSON file's ``chat_template`` text that changed, as written (the rendered
    prompts above are what users see; this records the text itself, and says when a
    later file overrides it so that nothing renders differently)."""
    changes = []
    for path in TEMPLATE_SOURCES[:2]:
        before, after = _written(path, old.value(path)), _written(path, new.value(path))
        if before == after:
            continue
        overridden = sorted({p for p in effective.values() if p != path})
        shadow = (
            f"; {', '.join(overridden)} overrides it, so no prompt changes"
            if overridden and path not in effective.values()
            else "; the rendered prompts say what users see"
        )
        changes.append(
            Change(
                ARTIFACT,
                path,
                "template_source",
                None if before is None else {"chat_template": before},
                None if after is None else {"chat_template": after},
                Severity.INFO,
                f"{path}: chat_template text {_size(before)} -> {_size(after)}{shadow}",
            )
        )
    return changes


def _written(path: str, value: Any) -> Any:
    """The ``chat_template`` value as the file writes it (a string or named templates)."""
    if path == "tokenizer_config.json":
        return value.get("chat_template") if isinstance(value, dict) else None
    if not isinstance(value, dict):
        return None
    if list(value) == ["default"]:
        return value["default"]
    return [{"name": name, "template": text} for name, text in value.items()]


def _size(value: Any) -> str:
    if value is None:
        return "(unset)"
    if isinstance(value, str):
        return f"{len(value):,} chars"
    return f"{len(value)} named templates" if isinstance(value, list) else "(not a template)"


__all__ = ["diff_template_view", "effective_templates", "special_tokens"]
