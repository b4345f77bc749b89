"""The model page's pictures, drawn by pygal as static SVG: no script, nothing from a CDN.

Three pictures, all at the plan's stated workload:

- memory over the revision history, one line per method, with dashed card
  lines (the stated card's, and the smallest card each method fits): the room
  that card leaves for the model (its memory divided by the headroom, less
  its CUDA context). The plotted value is what the card
  table's fit rule compares with it (reserved bytes: device bytes less the
  CUDA context), so a point under a card's line is a fit in the table and a
  point above it is not (a test holds this to the table for every corpus
  model);
- the largest batch per card and method as grouped bars;
- the memory breakdown per method (weights, gradients, optimizer state,
  activations, KV cache, the rest) as stacked bars.

Every text in the SVG (shas, titles, card names) is escaped by pygal's XML
writer; shas are shown seven characters long, rotated and thinned out to at
most ``MAX_XLABELS``, so they never run together.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import pygal
from markupsafe import Markup
from pygal.etree import etree
from pygal.style import Style

from estimator import Plan
from estimator.cards import Card
from estimator.deltas import GIB, METHOD_LABELS, stored_plan
from estimator.memory.overhead import context_bytes
from storage.publishing import RevisionEntry

# pygal appends a legacy import hook for its map plugins (pygal.maps.*, unused here) that
# has no find_spec, so every later import warns; this app imports no map plugin.
sys.meta_path[:] = [f for f in sys.meta_path if type(f).__name__ != "PluginImportFixer"]

SHORT_SHA: Final = 7
MAX_XLABELS: Final = 12
WIDTH: Final = 900
HEIGHT: Final = 420
COLORS: Final = ("#1f6feb", "#d1242f", "#1a7f37", "#8250df")
CARD_COLOR: Final = "#9a6700"
BREAKDOWN: Final = (
    ("weights", "weights"),
    ("gradients", "gradients"),
    ("optimizer_state", "optimizer state"),
    ("activations", "activations"),
    ("kv_cache", "KV cache"),
    ("adapters", "adapters"),
    ("quantization_overhead", "quantization overhead"),
    ("framework_overhead", "framework"),
)
STYLE: Final = Style(
    background="white",
    plot_background="white",
    font_family="system-ui, sans-serif",
    colors=COLORS + (CARD_COLOR,) * 32,
    label_font_size=11,
    major_label_font_size=11,
    legend_font_size=11,
    title_font_size=13,
    guide_stroke_color="#eaeef2",
    major_guide_stroke_color="#d0d7de",
    guide_stroke_dasharray="1,0",
    major_guide_stroke_dasharray="1,0",
)


@dataclass(frozen=True)
class CardLine:
    """One card's room for the model, in the chart's unit (bytes)."""

    card: str
    room_bytes: float


@dataclass(frozen=True)
class Chart:
    """What the history picture plots: per method the needed bytes, per card its room."""

    shas: tuple[str, ...]
    titles: tuple[str, ...]
    needed: tuple[tuple[str, tuple[int, ...]], ...]  # method -> reserved bytes per revision
    lines: tuple[CardLine, ...]
    workload: str
    card: str  # the stated card


def room_bytes(card: Card, headroom: float, gpus: int) -> float:
    """What ``card`` leaves for the model: memory over the headroom, less the CUDA context.

    The card table's rule (``estimator.fit``) fits a method when reserved bytes
    plus this context stay under memory / headroom; this is that limit.
    """
    return card.usable_bytes / headroom - context_bytes(card.context_bytes, gpus)


def history_chart(history: Sequence[RevisionEntry]) -> Chart | None:
    """The history of a page (newest first, as storage lists it); None without plans.

    Only revisions whose plan shares the newest plan's workload are drawn, so
    no point stands at a workload the picture does not state.
    """
    planned = [
        (entry, plan)
        for entry in reversed(history)
        if entry.stored.on_main and (plan := stored_plan(entry.plan)) is not None
    ]
    if not planned:
        return None
    newest = planned[-1][1]
    planned = [(e, p) for e, p in planned if p.workload == newest.workload]
    w = newest.workload
    needed = tuple(
        (
            method,
            tuple(dict(p.memory)[method].reserved_bytes for _, p in planned),
        )
        for method in METHOD_LABELS
        if method in dict(newest.memory)
    )
    lines = tuple(
        CardLine(f.card.name, room_bytes(f.card, w.headroom, w.gpus)) for f in newest.cards
    )
    return Chart(
        tuple(e.stored.revision.sha for e, _ in planned),
        tuple(e.stored.revision.title for e, _ in planned),
        needed,
        lines,
        f"batch {w.batch} × {w.seq_len} tokens",
        w.card,
    )


def history_svg(chart: Chart) -> Markup:
    """Memory per method over the revisions, with the card lines inside the plotted range."""
    # Cards with the same room share a line. Drawn: the stated card's, and for each
    # method the smallest room its newest point fits under (where it starts to fit).
    rooms: dict[float, list[str]] = {}
    for line in chart.lines:
        rooms.setdefault(round(line.room_bytes / GIB, 2), []).append(line.card)
    stated = next(r for r, cards in rooms.items() if chart.card in cards)
    shown = {stated}
    for _, values in chart.needed:
        above = [r for r in rooms if r * GIB >= values[-1]]
        if above:
            shown.add(min(above))
    svg = _base(pygal.Line, f"Memory per method at {chart.workload}, by revision (GiB)")
    svg.x_labels = [sha[:SHORT_SHA] for sha in chart.shas]
    svg.x_label_rotation = 30
    svg.show_minor_x_labels = False
    svg.x_labels_major_every = max(1, math.ceil(len(chart.shas) / MAX_XLABELS))
    svg.truncate_label = -1
    for method, values in chart.needed:
        svg.add(
            METHOD_LABELS[method],
            [
                {"value": v / GIB, "label": f"{sha[:SHORT_SHA]} {title[:60]}"}
                for v, sha, title in zip(values, chart.shas, chart.titles, strict=True)
            ],
        )
    for room in sorted(shown):
        svg.add(
            f"{' · '.join(rooms[room])}: room {room:g} GiB",
            [room] * len(chart.shas),
            show_dots=False,
            stroke_style={"width": 1.5, "dasharray": "6, 4"},
        )
    return _render(svg, "memory-history")


def batch_svg(plan: Plan) -> Markup:
    """Largest batch per card and method at the stated sequence length (log scale)."""
    svg = _base(
        pygal.Bar,
        f"Largest batch per card at {plan.workload.seq_len} tokens (0: does not fit)",
        logarithmic=True,
    )
    svg.x_labels = [f.card.name for f in plan.cards]
    svg.x_label_rotation = 30
    for i, method in enumerate(METHOD_LABELS):
        values = [
            next((m.largest_batch for m in f.methods if m.method == method), 0) for f in plan.cards
        ]
        svg.add(
            METHOD_LABELS[method],
            [v if v > 0 else None for v in values],
            stroke_style={"width": 1},
            color=COLORS[i],
        )
    return _render(svg, "largest-batch")


def breakdown_svg(plan: Plan) -> Markup:
    """Each method's peak memory at the stated workload, split by what holds it (GiB)."""
    w = plan.workload
    svg = _base(pygal.StackedBar, f"Memory breakdown at batch {w.batch} × {w.seq_len} tokens (GiB)")
    memory = dict(plan.memory)
    methods = [m for m in METHOD_LABELS if m in memory]
    svg.x_labels = [METHOD_LABELS[m] for m in methods]
    palette = (
        "#0969da",
        "#bf8700",
        "#cf222e",
        "#1a7f37",
        "#8250df",
        "#57606a",
        "#e16f24",
        "#6e7781",
    )
    for (key, label), color in zip(BREAKDOWN, palette, strict=True):
        values = [dict(memory[m].breakdown).get(key, 0) / GIB for m in methods]
        if any(values):
            svg.add(label, values, color=color)
    return _render(svg, "breakdown")


def _base(kind: type[pygal.Graph], title: str, logarithmic: bool = False) -> pygal.Graph:
    return kind(
        title=title,
        style=STYLE,
        width=WIDTH,
        height=HEIGHT,
        js=(),  # no script: the SVG is a static picture
        disable_xml_declaration=True,
        legend_at_bottom=True,
        legend_at_bottom_columns=4,
        truncate_legend=-1,
        logarithmic=logarithmic,
        value_formatter=lambda v: f"{v:,.2f}" if isinstance(v, float) else f"{v:,}",
        print_values=False,
        explicit_size=True,
        include_x_axis=not logarithmic,  # memory starts at zero: heights are proportional
    )


def _render(graph: pygal.Graph, name: str) -> Markup:
    """pygal's SVG without its script (its tooltips' configuration), marked safe to place inline.

    pygal's XML writer escaped every text; the tree is serialised again by the
    same writer after the script elements are taken out. pygal names each
    chart by a random uuid (its CSS is scoped by it); ``name`` replaces it, so
    one plan renders to the same bytes every time (ETags hold).
    """
    tree = graph.render_tree()
    for parent in list(tree.iter()):
        for child in list(parent):
            if isinstance(child.tag, str) and child.tag.rsplit("}", 1)[-1] == "script":
                parent.remove(child)
    return Markup(etree.tostring(tree, encoding="unicode").replace(graph.uuid, name))


__all__ = [
    "CardLine",
    "Chart",
    "batch_svg",
    "breakdown_svg",
    "history_chart",
    "history_svg",
    "room_bytes",
]
