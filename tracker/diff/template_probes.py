"""The probe conversations a chat template is rendered over, and what each render says.

Every template, at every revision, is rendered over the same probes: one conversation
per shape a template family may support (``data/probe_conversations.json``: plain chat,
a system message, multi-turn, tool definitions, tool calls with their results), each with
``add_generation_prompt`` off and on. Comparing two revisions on the same probes is what
lets a tool-calling rewrite show up as a tool-calling change, instead of the old template
never having been tried with tools.

What a template does with one shape (``Support``) is read from its two renders:

- ``renders``: it renders, and the prompt holds the shape's marker (the system message,
  the earlier assistant turn, the tool name, the tool result);
- ``ignores``: it renders but the marker is absent: the part is silently dropped;
- ``refuses``: it calls ``raise_exception`` (e.g. "System role not supported"): the
  template refuses the shape by design, as its authors meant;
- ``fails``: any other error (a bug, or a limit of the sandbox).

All probes of one template render in one call to an isolated worker
(``tracker.untrusted.isolation``), which is killed if it runs past its deadline. The
outcomes are kept by the template's text, the probes and the special tokens they render
with (``tracker.untrusted.evaluated``), so a template met again (the next revision's old
side, a revert, another repo's copy) is not rendered again; outcomes a limit stopped are
not kept, and that template renders again under the same limits.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from functools import cache
from importlib import resources
from typing import Any

from tracker.diff.sandbox import RENDER_SECONDS, ProbeOutcome, render_prompts
from tracker.untrusted.evaluated import EvaluatedByContent, content_key
from tracker.untrusted.isolation import LimitExceeded, RemoteError, default_pool

RENDER_WALL_SECONDS = RENDER_SECONDS + 1.0
"""Wall time one template's probes may take before its worker is killed."""
LIMITED = "template could not be rendered within limits ({})"
RENDERED_BUDGET = 8 * 1024 * 1024
"""Pickled bytes of probe outcomes kept: a template's are a few KB (held in about twice
that), so some two thousand templates; outcomes near the output cap are not kept."""
_RENDERED: EvaluatedByContent[tuple[ProbeOutcome, ...]] = EvaluatedByContent(RENDERED_BUDGET)


@dataclass(frozen=True)
class Probe:
    """One conversation of one shape, with add_generation_prompt off or on."""

    name: str
    shape: str
    marker: str
    messages: tuple[Mapping[str, Any], ...]
    tools: tuple[Mapping[str, Any], ...] | None
    add_generation_prompt: bool

    @property
    def label(self) -> str:
        """``name (add_generation_prompt=on|off)``: how results and messages name the probe."""
        return (
            f"{self.name} (add_generation_prompt={'on' if self.add_generation_prompt else 'off'})"
        )


@dataclass(frozen=True)
class Rendering:
    """One probe's prompt, or why there is none (``refused``: raise_exception)."""

    text: str | None
    error: str | None = None
    refused: bool = False


class Support(Enum):
    """What a template does with one conversation shape, best first."""

    RENDERS = "renders"
    IGNORES = "ignores"
    REFUSES = "refuses"
    FAILS = "fails"


@dataclass(frozen=True)
class ShapeSupport:
    """A template's support for one shape, with the error that decided it, if any."""

    shape: str
    support: Support
    error: str | None = None


@cache
def _probe_data() -> tuple[datetime, tuple[Probe, ...]]:
    raw = resources.files("tracker").joinpath("data/probe_conversations.json").read_text("utf-8")
    data = json.loads(raw)
    probes = tuple(
        Probe(
            c["name"],
            c["shape"],
            c["marker"],
            tuple(c["messages"]),
            tuple(c["tools"]) if "tools" in c else None,
            agp,
        )
        for c in data["conversations"]
        for agp in (False, True)
    )
    return datetime.fromisoformat(data["date"]), probes


def probes() -> tuple[Probe, ...]:
    """Every probe, in the data file's order: the same for every template."""
    return _probe_data()[1]


def shapes() -> tuple[str, ...]:
    """The conversation shapes, in the data file's order."""
    return tuple(dict.fromkeys(p.shape for p in probes()))


def render_probes(template: str, special_tokens: Mapping[str, str]) -> dict[str, Rendering]:
    """Every probe's rendered prompt (or its error) for one template, in one isolated call
    unless the same template was rendered with the same variables before.

    Raises only if no worker can be had at all (tracker.untrusted.isolation's
    WorkerUnavailable, PoolClosed): then nothing about the template is known,
    and the revision is retried rather than recorded wrongly.
    """
    now, every = _probe_data()
    variable_sets = [_variables(probe, special_tokens) for probe in every]
    key = content_key(template, now.isoformat(), json.dumps(variable_sets))
    outcomes = _RENDERED.get(key)
    if outcomes is None:
        try:
            outcomes = tuple(
                default_pool().call(
                    render_prompts, template, now, variable_sets, wall_seconds=RENDER_WALL_SECONDS
                )
            )
        except LimitExceeded as exc:
            failed = Rendering(None, LIMITED.format(exc.reason))
            return dict.fromkeys((p.label for p in every), failed)
        except RemoteError as exc:  # e.g. the worker's memory ran out sending the prompts back
            failed = Rendering(None, LIMITED.format(exc))
            return dict.fromkeys((p.label for p in every), failed)
        if not any(o.limited for o in outcomes):  # a limit's verdict may differ next time
            _RENDERED.keep(key, outcomes)
    return {p.label: _rendering(o) for p, o in zip(every, outcomes, strict=True)}


def support_of(rendered: Mapping[str, Rendering]) -> dict[str, ShapeSupport]:
    """Shape -> what the template does with it, from its renders (the worse of off and on)."""
    out: dict[str, ShapeSupport] = {}
    order = list(Support)
    for probe in probes():
        rendering = rendered.get(probe.label)
        if rendering is None:
            continue
        found = _support(probe, rendering)
        known = out.get(probe.shape)
        if known is None or order.index(found.support) > order.index(known.support):
            out[probe.shape] = found
    return out


def describe_support(support: Mapping[str, ShapeSupport], wanted: Sequence[Support]) -> str:
    """'refuses system message, tool calls and results; ignores tool definitions'."""
    parts = []
    for kind in wanted:
        named = [s.shape for s in support.values() if s.support is kind]
        if named:
            parts.append(f"{kind.value} {', '.join(named)}")
    return "; ".join(parts)


def _support(probe: Probe, rendering: Rendering) -> ShapeSupport:
    if rendering.refused:
        return ShapeSupport(probe.shape, Support.REFUSES, rendering.error)
    if rendering.text is None:
        return ShapeSupport(probe.shape, Support.FAILS, rendering.error)
    if probe.marker not in rendering.text:
        return ShapeSupport(probe.shape, Support.IGNORES)
    return ShapeSupport(probe.shape, Support.RENDERS)


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
    return Rendering(outcome.text, outcome.error, refused=outcome.refused)


__all__ = [
    "LIMITED",
    "Probe",
    "Rendering",
    "ShapeSupport",
    "Support",
    "describe_support",
    "probes",
    "render_probes",
    "shapes",
    "support_of",
]
