"""The model page's picture: parameters and peak memory per method over the revision history.

Laid out here, drawn by ``templates/chart.html`` as inline SVG: the page
needs no script, and every text in it (shas, titles, card names) goes
through the template's autoescape. Each on-main revision with a stored plan
is one point per series, oldest on the left. Both panels start at zero, so
a point's height is proportional to its value. The memory panel draws each
card memory limit (the newest plan's cards, grouped by usable bytes) that
falls inside its range as a labelled horizontal line; a card fits a method
when its device bytes times the headroom stay under the line, a little
above the peak plotted.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

from estimator import Plan
from estimator.deltas import GIB, METHOD_LABELS, gib, stored_plan
from storage.publishing import RevisionEntry

WIDTH: Final = 760
LEFT: Final = 78
RIGHT: Final = 560  # plot's right edge; card labels go to its right
PARAMETERS_TOP: Final = 34
PARAMETERS_HEIGHT: Final = 110
MEMORY_TOP: Final = 190
MEMORY_HEIGHT: Final = 300
HEIGHT: Final = MEMORY_TOP + MEMORY_HEIGHT + 48
LABEL_GAP: Final = 10.5
HEADROOM: Final = 1.1  # the top of a panel is 10% above its largest value
COLORS: Final = {"full": "#1f6feb", "lora": "#d1242f", "qlora": "#1a7f37", "serve": "#8250df"}
PARAMETERS_COLOR: Final = "#57606a"
SHORT_SHA: Final = 7
MAX_XLABELS: Final = 10


@dataclass(frozen=True)
class Point:
    x: float
    y: float
    value: int
    sha: str
    text: str


@dataclass(frozen=True)
class Series:
    key: str
    label: str
    color: str
    points: tuple[Point, ...]

    @property
    def path(self) -> str:
        """The polyline's points attribute."""
        return " ".join(f"{p.x:.1f},{p.y:.1f}" for p in self.points)


@dataclass(frozen=True)
class Tick:
    y: float
    text: str


@dataclass(frozen=True)
class Panel:
    top: float
    height: float
    top_value: float
    ticks: tuple[Tick, ...]
    series: tuple[Series, ...]

    def y(self, value: float) -> float:
        """The height of ``value`` in this panel (zero at the bottom edge)."""
        return _y(self.top, self.height, self.top_value, value)


@dataclass(frozen=True)
class Limit:
    y: float
    label_y: float
    usable_bytes: int
    text: str


@dataclass(frozen=True)
class XLabel:
    x: float
    text: str
    title: str


@dataclass(frozen=True)
class Chart:
    width: int
    height: int
    left: float
    right: float
    parameters: Panel
    memory: Panel
    limits: tuple[Limit, ...]
    xlabels: tuple[XLabel, ...]

    @property
    def points(self) -> int:
        return len(self.xlabels)

    @property
    def label_every(self) -> int:
        """Every how many revisions a sha is printed under the axis (at most ten printed)."""
        return max(1, math.ceil(len(self.xlabels) / MAX_XLABELS))


def history_chart(history: Sequence[RevisionEntry]) -> Chart | None:
    """The chart of a page's history (newest first, as storage lists it); None without plans."""
    planned = [
        (entry, plan)
        for entry in reversed(history)
        if entry.stored.on_main and (plan := stored_plan(entry.plan)) is not None
    ]
    if not planned:
        return None
    step = (RIGHT - LEFT) / len(planned)
    xs = [LEFT + step * (i + 0.5) for i in range(len(planned))]
    shas = [entry.stored.revision.sha for entry, _ in planned]
    totals = [_total(plan) for _, plan in planned]
    parameters = _panel(
        PARAMETERS_TOP,
        PARAMETERS_HEIGHT,
        max(totals),
        _count,
        lambda top: (
            Series(
                "parameters",
                "parameters",
                PARAMETERS_COLOR,
                tuple(
                    Point(x, _y(PARAMETERS_TOP, PARAMETERS_HEIGHT, top, v), v, s, f"{v:,} params")
                    for x, v, s in zip(xs, totals, shas, strict=True)
                ),
            ),
        ),
    )
    peaks = {m: [dict(plan.memory)[m].peak_allocated_bytes for _, plan in planned] for m in COLORS}
    newest = planned[-1][1]
    limits = sorted({fit.card.usable_bytes for fit in newest.cards})
    largest = max(max(values) for values in peaks.values())
    top_bytes = max(largest, limits[0] if limits else 1)
    memory = _panel(
        MEMORY_TOP,
        MEMORY_HEIGHT,
        top_bytes,
        lambda b: f"{b / GIB:g} GiB",
        lambda top: tuple(
            Series(
                method,
                METHOD_LABELS[method],
                color,
                tuple(
                    Point(
                        x,
                        _y(MEMORY_TOP, MEMORY_HEIGHT, top, v),
                        v,
                        s,
                        f"{METHOD_LABELS[method]} peak {gib(v)}",
                    )
                    for x, v, s in zip(xs, peaks[method], shas, strict=True)
                ),
            )
            for method, color in COLORS.items()
        ),
        unit=GIB,
    )
    return Chart(
        WIDTH,
        HEIGHT,
        LEFT,
        RIGHT,
        parameters,
        memory,
        _limits(newest, memory),
        tuple(
            XLabel(x, entry.stored.revision.sha[:SHORT_SHA], entry.stored.revision.title)
            for x, (entry, _) in zip(xs, planned, strict=True)
        ),
    )


def _panel(
    top: float,
    height: float,
    largest: float,
    fmt: Callable[[float], str],
    series: Callable[[float], tuple[Series, ...]],
    unit: float = 1.0,
) -> Panel:
    """A panel from zero to 10% above ``largest``, ticks at round multiples of ``unit``."""
    top_value = max(largest * HEADROOM, unit)
    step = _nice_step(top_value / unit / 5) * unit
    ticks = tuple(
        Tick(_y(top, height, top_value, i * step), fmt(i * step))
        for i in range(int(top_value // step) + 1)
    )
    return Panel(top, height, top_value, ticks, series(top_value))


def _limits(newest: Plan, memory: Panel) -> tuple[Limit, ...]:
    """One line per distinct card memory inside the panel, labels spread apart to stay legible."""
    names: dict[int, list[str]] = {}
    for fit in newest.cards:
        names.setdefault(fit.card.usable_bytes, []).append(fit.card.name)
    shown = sorted((b for b in names if b <= memory.top_value), reverse=True)  # top first
    lines = [memory.y(b) for b in shown]
    labels = _spread([y + 3.0 for y in lines], memory.top + memory.height + LABEL_GAP)
    drawn = [
        Limit(y, label_y, b, f"{' · '.join(names[b])} ({gib(b)})")
        for b, y, label_y in zip(shown, lines, labels, strict=True)
    ]
    return tuple(reversed(drawn))  # smallest card first


def _spread(wanted: list[float], lowest: float) -> list[float]:
    """Label baselines (top to bottom) at least LABEL_GAP apart, each as near its line as may be.

    Pushed down where they crowd, then back up from ``lowest`` (the lowest
    baseline allowed), so a dense cluster spreads around its lines.
    """
    placed = list(wanted)
    for i in range(1, len(placed)):
        placed[i] = max(placed[i], placed[i - 1] + LABEL_GAP)
    for i in reversed(range(len(placed))):
        below = lowest if i == len(placed) - 1 else placed[i + 1] - LABEL_GAP
        placed[i] = min(placed[i], below)
    return placed


def _y(top: float, height: float, top_value: float, value: float) -> float:
    return top + height - value / top_value * height


def _nice_step(raw: float) -> float:
    magnitude = 10.0 ** math.floor(math.log10(raw))
    return next(m * magnitude for m in (1.0, 2.0, 2.5, 5.0, 10.0) if m * magnitude >= raw)


def _count(value: float) -> str:
    for size, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")):
        if value >= size:
            return f"{value / size:g}{suffix}"
    return f"{value:g}"


def _total(plan: Plan) -> int:
    total = dict(plan.parameters).get("total")
    return total if isinstance(total, int) else 0


__all__ = ["Chart", "Limit", "Panel", "Point", "Series", "history_chart"]
