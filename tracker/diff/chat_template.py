"""Chat template changes judged by the prompts they render, not by their text.

Both revisions' templates are rendered in the sandbox over the same probe
conversations (``tracker.diff.template_probes``: plain chat, system message,
multi-turn, tool definitions, tool calls and results; ``add_generation_prompt``
off and on), and each change is classified by what a user of the template sees:

- a prompt that renders differently (HIGH, naming the shapes and the first
  difference), or what ``add_generation_prompt`` appends (HIGH);
- a shape the new template refuses by design (``raise_exception``, MODERATE:
  callers that pass it now get an error) or accepts again (LOW);
- a shape that no longer renders at all (HIGH);
- a reformatted template that renders every probe the same (INFO); a template
  whose text is unchanged (only a special token it reads changed) and that
  renders every probe the same is no change of its own.

The first differing prompt is shown aligned on its first difference
(``tracker.diff.shapes.excerpt``): what both prompts share just before it,
what was removed, inserted or replaced there, and what follows.

A template added at a revision says which shapes it refuses, ignores or cannot
render; refusing a system message on purpose is not a failure to render. A
hostile template costs a few seconds of one isolated worker, never the daemon.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from storage.records import Change, Severity
from tracker.diff.common import format_value
from tracker.diff.shapes import MAX_LINE_CHARS, excerpt
from tracker.diff.template_probes import (
    LIMITED,
    Probe,
    Rendering,
    ShapeSupport,
    Support,
    describe_support,
    probes,
    render_probes,
    support_of,
)

ARTIFACT = "chat_template"
MIN_EXCERPT_CHARS = 100
SHOWN_SHAPES = 3
MAX_REASON_CHARS = 100
"""The least of the two prompts a rendering line quotes, however long its lead."""
ACCEPTED = (Support.RENDERS, Support.IGNORES)
"""Shapes a caller can pass without an error."""
_BEFORE = {Support.REFUSES: "refused by design", Support.FAILS: "failed to render"}


def diff_chat_templates(
    old: Mapping[str, str],
    new: Mapping[str, str],
    old_tokens: Mapping[str, str],
    new_tokens: Mapping[str, str],
    sources: Mapping[str, str],
) -> list[Change]:
    """Changes between two revisions' effective templates (name -> source).

    ``sources`` names the file each new (or removed) template came from, for
    the change's path.
    """
    changes: list[Change] = []
    for name in sorted(set(old) | set(new)):
        path = sources.get(name, "chat_template")
        label = "chat template" if name == "default" else f"chat template {name!r}"
        if name not in new:
            changes.append(
                Change(
                    ARTIFACT,
                    path,
                    "removed",
                    old[name],
                    None,
                    Severity.HIGH,
                    f"{label} removed: callers fall back to another template or fail",
                )
            )
        elif name not in old:
            changes.append(_added(path, label, new[name], new_tokens))
        elif old[name] != new[name] or dict(old_tokens) != dict(new_tokens):
            changes.extend(_compared(path, label, old[name], new[name], old_tokens, new_tokens))
    return changes


def _added(path: str, label: str, template: str, tokens: Mapping[str, str]) -> Change:
    rendered = render_probes(template, tokens)
    support = support_of(rendered)
    plain = next(iter(support.values()), None)
    if plain is not None and plain.support is Support.FAILS:
        probe = next(k for k, r in rendered.items() if r.text is None and not r.refused)
        return Change(
            ARTIFACT,
            path,
            "render_error",
            None,
            {k: r.error for k, r in rendered.items() if r.error},
            Severity.HIGH,
            f"{label} added but fails to render {probe}: {rendered[probe].error}",
        )
    notes = describe_support(support, (Support.REFUSES, Support.IGNORES, Support.FAILS))
    return Change(
        ARTIFACT,
        path,
        "added",
        None,
        template,
        Severity.MODERATE,
        f"{label} added: prompts built with apply_chat_template change"
        + (f"; it {notes}" if notes else ""),
    )


def _compared(
    path: str,
    label: str,
    old: str,
    new: str,
    old_tokens: Mapping[str, str],
    new_tokens: Mapping[str, str],
) -> list[Change]:
    before, after = render_probes(old, old_tokens), render_probes(new, new_tokens)
    broken = {
        k: r.error
        for k, r in after.items()
        if r.text is None and not r.refused and (before[k].text is not None or before[k].refused)
    }
    if broken:
        probe, error = next(iter(broken.items()))
        return [
            Change(
                ARTIFACT,
                path,
                "render_error",
                None,
                broken,
                Severity.HIGH,
                f"{label} no longer renders {probe}: {error}",
            )
        ]
    was, now = support_of(before), support_of(after)
    changes = _acceptance_changes(path, label, was, now)
    differing = [
        k
        for k in after
        if before[k].text is not None and after[k].text is not None and before[k] != after[k]
    ]
    if differing:
        changes.insert(0, _rendering_change(path, label, differing, before, after, was, now))
    suffix = _generation_prompt_change(path, label, before, after)
    if suffix is not None:
        changes.append(suffix)
    compared = [k for k in after if before[k].text is not None and after[k].text is not None]
    if not changes and old != new:  # same text, other tokens: the token lines say it
        changes.append(
            Change(
                ARTIFACT,
                path,
                "modified",
                None,
                None,
                Severity.INFO,
                _unchanged_renders(label, before, after, compared),
            )
        )
    return changes


def _unchanged_renders(
    label: str,
    before: Mapping[str, Rendering],
    after: Mapping[str, Rendering],
    compared: list[str],
) -> str:
    """A changed text with no prompt rendered differently: how many probes say so, and
    why the others could not (refused by design, or stopped on both sides)."""
    left = [k for k in after if k not in compared]
    if not left:
        return f"{label} text changed; the {len(compared)} probe prompts render identically"
    reason = after[left[0]].error or before[left[0]].error or "not rendered"
    why = f"{left[0]}: {format_value(reason, MAX_REASON_CHARS)}"
    if not compared:
        return f"{label} text changed; no probe prompt renders on both sides to compare ({why})"
    return (
        f"{label} text changed; the {len(compared)} probe prompts it renders on both sides "
        f"render identically ({len(left)} not compared: {why})"
    )


def _acceptance_changes(
    path: str, label: str, was: Mapping[str, ShapeSupport], now: Mapping[str, ShapeSupport]
) -> list[Change]:
    """Shapes refused by design now that were accepted before, and the reverse."""
    refused = [
        s for s, n in now.items() if n.support is Support.REFUSES and was[s].support in ACCEPTED
    ]
    accepted = [
        s for s, n in now.items() if n.support in ACCEPTED and was[s].support not in ACCEPTED
    ]
    changes = []
    if refused:
        reason = now[refused[0]].error
        changes.append(
            Change(
                ARTIFACT,
                path,
                "shape_refused",
                {s: was[s].support.value for s in refused},
                {s: now[s].error for s in refused},
                Severity.MODERATE,
                f"{label} now refuses {', '.join(refused)} ({reason}): apply_chat_template "
                "raises for such conversations",
            )
        )
    if accepted:
        changes.append(
            Change(
                ARTIFACT,
                path,
                "shape_accepted",
                {s: was[s].error for s in accepted},
                {s: now[s].support.value for s in accepted},
                Severity.LOW,
                f"{label} now accepts {', '.join(accepted)} "
                f"({_BEFORE[was[accepted[0]].support]} before: {was[accepted[0]].error})",
            )
        )
    return changes


def _rendering_change(
    path: str,
    label: str,
    differing: list[str],
    before: Mapping[str, Rendering],
    after: Mapping[str, Rendering],
    was: Mapping[str, ShapeSupport],
    now: Mapping[str, ShapeSupport],
) -> Change:
    first = differing[0]
    by_label = {p.label: p for p in probes()}
    touched = list(dict.fromkeys(by_label[k].shape for k in differing if k in by_label))
    uses = [
        s
        for s in touched
        if was[s].support is Support.IGNORES and now[s].support is Support.RENDERS
    ]
    drops = [
        s
        for s in touched
        if was[s].support is Support.RENDERS and now[s].support is Support.IGNORES
    ]
    notes = ""
    if uses:
        notes += f"; now uses {', '.join(uses)}, which it ignored before"
    if drops:
        notes += f"; now drops {', '.join(drops)}"
    shapes = ", ".join(touched[:SHOWN_SHAPES])
    if len(touched) > SHOWN_SHAPES:
        shapes += f" and {len(touched) - SHOWN_SHAPES} more"
    said = (
        f"{label} renders {len(differing)} of {len(after)} probe prompts differently "
        f"({shapes}){notes}; first {first}: "
    )
    room = max(MIN_EXCERPT_CHARS, MAX_LINE_CHARS - len(said))
    return Change(
        ARTIFACT,
        path,
        "rendering_changed",
        {k: before[k].text for k in differing},
        {k: after[k].text for k in differing},
        Severity.HIGH,
        said + excerpt(before[first].text or "", after[first].text or "", room),
    )


def _generation_prompt_change(
    path: str, label: str, before: Mapping[str, Rendering], after: Mapping[str, Rendering]
) -> Change | None:
    """What add_generation_prompt appends, if that changed (e.g. a new ``<think>\\n``)."""
    old_suffix, new_suffix = _suffixes(before), _suffixes(after)
    if old_suffix is None or new_suffix is None or old_suffix == new_suffix:
        return None
    return Change(
        ARTIFACT,
        path,
        "generation_prompt_changed",
        old_suffix,
        new_suffix,
        Severity.HIGH,
        f"{label}: add_generation_prompt now appends {json.dumps(new_suffix)} "
        f"instead of {json.dumps(old_suffix)}",
    )


def _suffixes(rendered: Mapping[str, Rendering]) -> str | None:
    off = rendered.get("user (add_generation_prompt=off)")
    on = rendered.get("user (add_generation_prompt=on)")
    if off is None or on is None or off.text is None or on.text is None:
        return None
    if not on.text.startswith(off.text):
        return None
    return on.text[len(off.text) :]


__all__ = ["LIMITED", "Probe", "Rendering", "diff_chat_templates", "render_probes"]
