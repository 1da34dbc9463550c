"""Charts drawn on the server: the geometry of a stacked bar chart, which a template renders as inline SVG.

No JavaScript and no charting library to serve: the page reads the same with scripts off, and the
template's CSS gives each series its colour (the admin's variables, so dark mode works). Every bar
carries a text alternative (its `title`) and the chart a one-line summary.
"""

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

# The drawing's own units (the SVG's viewBox); the page scales it to its width.
WIDTH, HEIGHT = 720, 200
LEFT, RIGHT, TOP, BOTTOM = 40, 24, 10, 22  # room for the y axis' numbers, the last label, the x axis' labels
MAX_X_LABELS = 12


@dataclass(frozen=True)
class Column:
    """One bar's input: its label, its value per series, and where it links (optional)."""

    label: str
    values: Mapping[str, int]
    title: str = ""  # the label in full for the text alternative (a date with its weekday, say)
    link: str = ""


@dataclass(frozen=True)
class Segment:
    series: str
    value: int
    y: float
    height: float


@dataclass(frozen=True)
class Bar:
    label: str
    title: str  # text alternative: "Mon 3 Mar 2025: 3 completed, 1 failed, 0 open"
    link: str
    x: float
    width: float
    total: int
    segments: tuple[Segment, ...]
    show_label: bool  # with many bars, one label in a few, so they never overlap

    @property
    def label_x(self) -> float:
        return round(self.x + self.width / 2, 1)


@dataclass(frozen=True)
class Tick:
    value: int
    y: float


@dataclass(frozen=True)
class StackedBarChart:
    title: str
    summary: str
    series: tuple[tuple[str, str], ...]  # (key, label), bottom of the stack first
    bars: tuple[Bar, ...]
    ticks: tuple[Tick, ...]
    width: int = WIDTH
    height: int = HEIGHT
    left: int = LEFT
    right: int = WIDTH - RIGHT
    top: int = TOP
    baseline: int = HEIGHT - BOTTOM
    label_y: int = HEIGHT - 6  # the x axis' labels
    tick_x: int = LEFT - 6  # the y axis' numbers, right-aligned here

    @property
    def plot_height(self) -> int:
        return self.baseline - self.top


def axis_step(top: int, *, steps: int = 4) -> int:
    """A round step (1, 2 or 5 times a power of ten) that divides 0..top into about `steps` ticks."""
    raw = max(top, 1) / steps
    power = 10 ** math.floor(math.log10(raw)) if raw >= 1 else 1
    for multiple in (1, 2, 5, 10):
        if multiple * power >= raw:
            return max(1, multiple * power)
    return 10 * power


def stacked_bar_chart(*, title: str, columns: Sequence[Column], series: Sequence[tuple[str, str]]) -> StackedBarChart:
    """The bars (one per column, stacked by series in order), the y axis' ticks and a summary."""
    labels = dict(series)
    totals = [sum(column.values.get(key, 0) for key in labels) for column in columns]
    step = axis_step(max(totals, default=0))
    top = step * max(1, math.ceil(max(totals, default=0) / step))
    plot_height = HEIGHT - TOP - BOTTOM
    slot = (WIDTH - LEFT - RIGHT) / max(len(columns), 1)
    every = math.ceil(len(columns) / MAX_X_LABELS) or 1

    def y_of(value: float) -> float:
        return round(HEIGHT - BOTTOM - value / top * plot_height, 1)

    bars = []
    for index, (column, total) in enumerate(zip(columns, totals, strict=True)):
        segments, below = [], 0
        for key, _ in series:
            value = column.values.get(key, 0)
            if value:
                segments.append(Segment(key, value, y_of(below + value), round(value / top * plot_height, 1)))
            below += value
        parts = ", ".join(f"{column.values.get(key, 0)} {label}" for key, label in series)
        bars.append(
            Bar(
                label=column.label,
                title=f"{column.title or column.label}: {parts}",
                link=column.link,
                x=round(LEFT + index * slot + slot * 0.15, 1),
                width=round(slot * 0.7, 1),
                total=total,
                segments=tuple(segments),
                # Counted from the last bar, so today's is always labelled.
                show_label=(len(columns) - 1 - index) % every == 0,
            )
        )
    ticks = tuple(Tick(value, y_of(value)) for value in range(0, top + 1, step))
    sums = ", ".join(f"{sum(c.values.get(key, 0) for c in columns)} {label}" for key, label in series)
    summary = f"{sum(totals)} in all: {sums}"
    if columns and max(totals):
        busiest = max(range(len(columns)), key=lambda i: (totals[i], i))
        summary += f"; the most, {totals[busiest]}, on {columns[busiest].title or columns[busiest].label}"
    return StackedBarChart(title=title, summary=summary + ".", series=tuple(series), bars=tuple(bars), ticks=ticks)
