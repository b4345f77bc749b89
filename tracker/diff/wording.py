"""Wording rules for JSON fields whose meaning a fixed sentence cannot carry.

The field table (``data/json_fields.json``) names a rule under ``explain``;
each rule sees the old and new values (None when unset) and returns the
severity and the reason to show, and may replace the ``old -> new`` text
when the raw values would hide what changed (a token object whose only
change is its ``normalized`` flag).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from storage.records import Severity
from tracker.diff.common import UNSET, DiffContext, format_value, plausible_size, shown_bytes

SHOWN = 5
"""Tokens or ids a message names before it says "and N more"."""


@dataclass(frozen=True)
class Wording:
    """What a wording rule says of one field change: its severity, the reason, the values' text."""

    severity: Severity
    why: str
    what: str | None = None
    """Replaces ``old -> new`` in the message when set."""


Explainer = Callable[[Any, Any, Severity, str, DiffContext], Wording]


def _ids(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]


def _stop_tokens(old: Any, new: Any, severity: Severity, why: str, ctx: DiffContext) -> Wording:
    """Name the stop tokens gained and lost, by their text when the tokenizer knows it."""
    old_ids, new_ids = _ids(old), _ids(new)
    gained = [ctx.token(i) for i in new_ids if i not in old_ids]
    lost = [ctx.token(i, old=True) for i in old_ids if i not in new_ids]
    if gained and lost:
        return Wording(
            severity, f"generation now stops at {', '.join(gained)} instead of {', '.join(lost)}"
        )
    if gained:
        return Wording(severity, f"generation now also stops at {', '.join(gained)}")
    if lost:
        return Wording(severity, f"generation no longer stops at {', '.join(lost)}")
    return Wording(Severity.INFO, "same stop tokens, written differently")


def _token_ids(old: Any, new: Any, severity: Severity, why: str, ctx: DiffContext) -> Wording:
    names = [ctx.token(i) for i in _ids(new) if isinstance(i, int)]
    return Wording(severity, f"{why} (now {', '.join(names)})" if names else why)


def _content(token: Any) -> Any:
    return token.get("content") if isinstance(token, dict) else token


def _shown_token(token: Any) -> str:
    if token is None:
        return UNSET
    content = _content(token)
    return json.dumps(content, ensure_ascii=False) if content == "" else format_value(content)


def _token_role(old: Any, new: Any, severity: Severity, why: str, ctx: DiffContext) -> Wording:
    """bos/eos/pad/unk: named by the token's text; same text is said to be the same token."""
    if old is None or new is None or _content(old) != _content(new):
        return Wording(severity, why, f"{_shown_token(old)} -> {_shown_token(new)}")
    text = format_value(_content(new))
    if not (isinstance(old, dict) and isinstance(new, dict)):
        forms = " -> ".join("object" if isinstance(v, dict) else "string" for v in (old, new))
        return Wording(
            Severity.LOW, f"the token is still {text}, written anew", f"{text} ({forms})"
        )
    flags = [
        f"{key} {format_value(old.get(key))} -> {format_value(new.get(key))}"
        for key in sorted(set(old) | set(new), key=str)
        if key != "content" and old.get(key) != new.get(key)
    ]
    return Wording(
        Severity.LOW,
        f"the token is still {text}; only how it is matched changed",
        ", ".join(flags),
    )


def _added_flag(token: str) -> Explainer:
    """add_bos_token / add_eos_token: say which way, not "gain or lose"."""
    place = "start with" if token == "BOS" else "end with"

    def explain(old: Any, new: Any, severity: Severity, why: str, ctx: DiffContext) -> Wording:
        if new is True and old is not True:
            return Wording(severity, f"encoded prompts now {place} the {token} token")
        if old is True and new is not True:
            return Wording(severity, f"encoded prompts no longer {place} the {token} token")
        if old is None:
            return Wording(
                Severity.MODERATE,
                f"now explicitly {format_value(new)}; before, the tokenizer class's default "
                f"decided whether encoded prompts {place} the {token} token",
            )
        return Wording(
            Severity.MODERATE,
            f"now unset: the tokenizer class's default decides whether encoded prompts {place} "
            f"the {token} token",
        )

    return explain


def _system_prompt(old: Any, new: Any, severity: Severity, why: str, ctx: DiffContext) -> Wording:
    """use_default_system_prompt: say whether the default prompt is now added or dropped."""
    if new is True:
        return Wording(severity, "the default system prompt is now added to conversations")
    if old is True:
        return Wording(severity, "the default system prompt is no longer added to conversations")
    return Wording(Severity.LOW, "still not added; only written differently")


def _form(value: Any) -> tuple[frozenset[str], Any]:
    if not isinstance(value, dict):
        return frozenset(), type(value).__name__
    return frozenset(map(str, value)), value.get("rope_type", value.get("type"))


def _rope_scaling(old: Any, new: Any, severity: Severity, why: str, ctx: DiffContext) -> Wording:
    """Only a new form (keys or scaling type) may be rejected by older loaders."""
    if old is not None and new is not None and _form(old) == _form(new):
        return Wording(severity, why)
    if old is None or new is None:
        return Wording(severity, f"{why}; RoPE scaling is {'added' if old is None else 'dropped'}")
    return Wording(severity, f"{why}; the form changed, so older loaders may reject it")


def _listed(items: list[str]) -> str:
    return ", ".join(items[:SHOWN]) + (
        f" and {len(items) - SHOWN} more" if len(items) > SHOWN else ""
    )


def _came_and_went(before: list[Any], after: list[Any]) -> list[str]:
    came = [format_value(t) for t in after if t not in before]
    went = [format_value(t) for t in before if t not in after]
    parts = [f"{_listed(came)} added"] if came else []
    return parts + ([f"{_listed(went)} removed"] if went else [])


def _token_list(old: Any, new: Any, severity: Severity, why: str, ctx: DiffContext) -> Wording:
    """additional_special_tokens: name the tokens that came and went, not the whole list."""
    before = [_content(t) for t in old] if isinstance(old, list) else []
    after = [_content(t) for t in new] if isinstance(new, list) else []
    parts = _came_and_went(before, after)
    if not parts and not before:
        return Wording(Severity.INFO, "no tokens either way")
    if not parts:
        reordered = before != after
        said = "same tokens, reordered" if reordered else "same tokens, written differently"
        return Wording(Severity.LOW, said, f"{len(after)} tokens")
    return Wording(severity, why, "; ".join(parts))


def _id_list(old: Any, new: Any, severity: Severity, why: str, ctx: DiffContext) -> Wording:
    """suppress_tokens and the like: the ids that came and went, by text where known."""
    if not (isinstance(old, list) and isinstance(new, list)):
        return Wording(severity, why)
    came = [i for i in new if i not in old]
    went = [i for i in old if i not in new]
    parts = [f"{_listed([_id(i, ctx) for i in came])} added"] if came else []
    parts += [f"{_listed([_id(i, ctx, old=True) for i in went])} removed"] if went else []
    if not parts:
        return Wording(Severity.INFO, "same ids, reordered", f"{len(new)} ids")
    return Wording(severity, why, "; ".join(parts))


def _id(token_id: Any, ctx: DiffContext, *, old: bool = False) -> str:
    name = ctx.token(token_id, old=old)
    return str(token_id) if name == f"token {token_id}" else f"{token_id} ({name})"


def _declared_size(old: Any, new: Any, severity: Severity, why: str, ctx: DiffContext) -> Wording:
    """An index's ``total_size``: an implausible figure is a finding about that index (a
    loader ignores it), so the line says so instead of a difference in bytes."""
    shown = " -> ".join(UNSET if v is None else shown_bytes(v) for v in (old, new))
    for side, value in (("new", new), ("previous", old)):
        if value is not None and not plausible_size(value):
            return Wording(
                Severity.LOW,
                f"the {side} index declares an implausible total ({shown_bytes(value)} bytes); "
                "loaders do not read it, but tools that size downloads by it do",
                shown,
            )
    return Wording(severity, why, shown + " bytes")


EXPLAINERS: Mapping[str, Explainer] = {
    "stop_tokens": _stop_tokens,
    "token_ids": _token_ids,
    "token_role": _token_role,
    "add_bos": _added_flag("BOS"),
    "add_eos": _added_flag("EOS"),
    "rope_scaling": _rope_scaling,
    "token_list": _token_list,
    "id_list": _id_list,
    "system_prompt": _system_prompt,
    "declared_size": _declared_size,
}

__all__ = ["EXPLAINERS", "Explainer", "Wording"]
