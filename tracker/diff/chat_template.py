"""Chat template changes judged by the prompts they render, not by their text.

Both revisions' templates are rendered in the sandbox over the fixed probe
conversations in ``data/probe_conversations.json`` (with
``add_generation_prompt`` off and on, and with tools when a template mentions
them). A reformatted template that renders the same prompts is an INFO
change; one that renders differently names the first probe that differs and
shows both prompts around the difference; one that no longer renders is a
HIGH change of its own.

All probes of one template render in one call to an isolated worker
(``tracker.isolation``), which is killed if it runs past its deadline. A
template refused by a limit, stopped, or killed is recorded like any other
that fails to render, with "template could not be rendered within limits
(why)": a hostile template costs a few seconds of one worker, never the daemon.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from importlib import resources
from typing import Any

from storage.records import Change, Severity
from tracker.diff.sandbox import RENDER_SECONDS, ProbeOutcome, render_prompts
from tracker.isolation import LimitExceeded, RemoteError, default_pool

ARTIFACT = "chat_template"
CONTEXT_CHARS = 60
RENDER_WALL_SECONDS = RENDER_SECONDS + 1.0
"""Wall time one template's probes may take before its worker is killed."""
LIMITED = "template could not be rendered within limits ({})"


@dataclass(frozen=True)
class Probe:
    name: str
    messages: tuple[Mapping[str, Any], ...]
    tools: tuple[Mapping[str, Any], ...] | None
    add_generation_prompt: bool

    @property
    def label(self) -> str:
        return (
            f"{self.name} (add_generation_prompt={'on' if self.add_generation_prompt else 'off'})"
        )


@dataclass(frozen=True)
class Rendering:
    text: str | None
    error: str | None = None


@cache
def _probe_data() -> tuple[datetime, tuple[Probe, ...]]:
    raw = resources.files("tracker").joinpath("data/probe_conversations.json").read_text("utf-8")
    data = json.loads(raw)
    probes = tuple(
        Probe(c["name"], tuple(c["messages"]), tuple(c["tools"]) if "tools" in c else None, agp)
        for c in data["conversations"]
        for agp in (False, True)
    )
    return datetime.fromisoformat(data["date"]), probes


def probes_for(template: str) -> tuple[Probe, ...]:
    """The probes a template is rendered over: tool probes only if it mentions tools."""
    _, probes = _probe_data()
    takes_tools = "tools" in template
    return tuple(p for p in probes if p.tools is None or takes_tools)


def render_probes(template: str, special_tokens: Mapping[str, str]) -> dict[str, Rendering]:
    """Every probe's rendered prompt (or its error) for one template, in one isolated call.

    Raises only if no worker can be had at all (tracker.isolation's
    WorkerUnavailable, PoolClosed): then nothing about the template is known,
    and the revision is retried rather than recorded wrongly.
    """
    now, _ = _probe_data()
    probes = probes_for(template)
    variable_sets = [_variables(probe, special_tokens) for probe in probes]
    try:
        outcomes = default_pool().call(
            render_prompts, template, now, variable_sets, wall_seconds=RENDER_WALL_SECONDS
        )
    except LimitExceeded as exc:
        failed = Rendering(None, LIMITED.format(exc.reason))
        return dict.fromkeys((p.label for p in probes), failed)
    except RemoteError as exc:  # e.g. the worker's memory ran out sending the prompts back
        failed = Rendering(None, LIMITED.format(exc))
        return dict.fromkeys((p.label for p in probes), failed)
    return {p.label: _rendering(o) for p, o in zip(probes, outcomes, strict=True)}


def _variables(probe: Probe, special_tokens: Mapping[str, str]) -> dict[str, Any]:
    variables: dict[str, Any] = {
        **special_tokens,
        "messages": [dict(m) for m in probe.messages],
        "add_generation_prompt": probe.add_generation_prompt,
    }
    if probe.tools is not None:
        variables["tools"] = [dict(t) for t in probe.tools]
    return variables


def _rendering(outcome: ProbeOutcome) -> Rendering:
    if outcome.limited:
        return Rendering(None, LIMITED.format(outcome.error))
    return Rendering(outcome.text, outcome.error)


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
    errors = {k: r.error for k, r in rendered.items() if r.error}
    if errors:
        first = next(iter(errors.items()))
        return Change(
            ARTIFACT,
            path,
            "render_error",
            None,
            errors,
            Severity.HIGH,
            f"{label} added but fails to render {first[0]}: {first[1]}",
        )
    return Change(
        ARTIFACT,
        path,
        "added",
        None,
        template,
        Severity.MODERATE,
        f"{label} added: prompts built with apply_chat_template change",
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
    broken = {k: r.error for k, r in after.items() if r.error and not before.get(k, r).error}
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
    differing = [k for k in after if k in before and before[k] != after[k]]
    if not differing:
        return [
            Change(
                ARTIFACT,
                path,
                "modified",
                None,
                None,
                Severity.INFO,
                f"{label} text changed; the {len(after)} probe prompts render identically",
            )
        ]
    changes = [_rendering_change(path, label, differing, before, after)]
    suffix = _generation_prompt_change(path, label, before, after)
    if suffix is not None:
        changes.append(suffix)
    return changes


def _rendering_change(
    path: str,
    label: str,
    differing: list[str],
    before: Mapping[str, Rendering],
    after: Mapping[str, Rendering],
) -> Change:
    first = differing[0]
    if before[first].error is not None:
        excerpt = f"used to fail ({before[first].error}), now renders"
    else:
        excerpt = _excerpt(before[first].text or "", after[first].text or "")
    return Change(
        ARTIFACT,
        path,
        "rendering_changed",
        {k: before[k].text or before[k].error for k in differing},
        {k: after[k].text for k in differing},
        Severity.HIGH,
        f"{label} renders {len(differing)} of {len(after)} probe prompts differently; "
        f"first {first}: {excerpt}",
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


def _excerpt(old: str, new: str) -> str:
    """Both prompts around their first difference, JSON-quoted so whitespace shows."""
    start = next(
        (i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a != b),
        min(len(old), len(new)),
    )
    lo = max(0, start - CONTEXT_CHARS // 2)
    return (
        f"{json.dumps(old[lo : start + CONTEXT_CHARS])} -> "
        f"{json.dumps(new[lo : start + CONTEXT_CHARS])}"
    )


__all__ = ["LIMITED", "Probe", "Rendering", "diff_chat_templates", "probes_for", "render_probes"]
