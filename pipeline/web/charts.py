"""Chart geometry for the status page: numbers in, rectangles and labels out. The template
(templates/status.html.j2) draws them as inline SVG, so the page needs no script and no asset,
and every text in a chart goes through the template's autoescaping."""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass, field
from typing import Callable, Sequence

WIDTH, HEIGHT = 580, 220  # two charts side by side in a 1280-pixel window
LEFT, RIGHT, TOP, BOTTOM = 56, 12, 12, 34  # plot margins: y labels left, dates below


@dataclass
class Rect:
    x: float
    y: float
    w: float
    h: float
    series: int  # index into the chart's legend (its colour class)
    title: str  # the tooltip: what this rectangle counts


@dataclass
class Label:
    x: float
    y: float
    text: str
    anchor: str = "middle"


@dataclass
class Chart:
    id: str
    title: str
    width: int
    height: int
    legend: list[str]
    rects: list[Rect] = field(default_factory=list)
    labels: list[Label] = field(default_factory=list)
    grid: list[float] = field(default_factory=list)  # y of horizontal grid lines
    summary: str = ""  # one line for screen readers (the svg's <desc>)
    empty: bool = False


def nice_ceiling(value: float) -> float:
    """The smallest 1, 2 or 5 × 10^k at or above `value` (1 for 0): a readable axis top."""
    if value <= 0:
        return 1
    exp = math.floor(math.log10(value))
    for step in (1, 2, 5, 10):
        top = step * 10 ** exp
        if top >= value:
            return top
    return 10 ** (exp + 1)  # pragma: no cover - the loop always returns


def short_number(value: float) -> str:
    if value >= 1_000_000:
        return f"{value / 1_000_000:g}M"
    if value >= 1_000:
        return f"{value / 1_000:g}k"
    return f"{value:g}"


def day_bars(id: str, title: str, days: Sequence[dt.date], series: Sequence[tuple[str, Sequence[float]]],
             fmt: Callable[[float], str] = short_number) -> Chart:
    """Vertical bars per day, the series stacked bottom-up; dates under every 5th bar."""
    chart = Chart(id, title, WIDTH, HEIGHT, [name for name, _ in series])
    totals = [sum(values[i] for _, values in series) for i in range(len(days))]
    top = nice_ceiling(max(totals, default=0))
    chart.empty = not any(totals)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    slot = plot_w / max(len(days), 1)
    for k in range(5):  # grid lines and y labels at 0, 1/4 … of the top
        y = TOP + plot_h - plot_h * k / 4
        chart.grid.append(round(y, 1))
        chart.labels.append(Label(LEFT - 6, round(y + 4, 1), fmt(top * k / 4), "end"))
    for i, day in enumerate(days):
        x = LEFT + i * slot + slot * 0.15
        base = TOP + plot_h
        for s, (name, values) in enumerate(series):
            h = plot_h * values[i] / top
            if h > 0:
                base -= h
                chart.rects.append(Rect(round(x, 1), round(base, 1), round(slot * 0.7, 1), round(h, 1), s,
                                        f"{day.isoformat()}: {fmt(values[i])} {name}"))
        if i % 5 == 0 or i == len(days) - 1:
            chart.labels.append(Label(round(x + slot * 0.35, 1), HEIGHT - BOTTOM + 16, day.strftime("%m-%d")))
    chart.summary = f"{title}, {days[0]} to {days[-1]}: total {fmt(sum(totals))}" if days else title
    return chart


def share_bars(id: str, title: str, rows: Sequence[tuple[str, Sequence[int]]], legend: Sequence[str]) -> Chart:
    """One horizontal bar per row, split into the share of each bucket (labels: the row's name
    left, its total right)."""
    bar_h, gap, label_w, total_w = 18, 6, 190, 70
    height = TOP + max(len(rows), 1) * (bar_h + gap) + 6
    chart = Chart(id, title, WIDTH, height, list(legend))
    chart.empty = not rows
    plot_w = WIDTH - label_w - total_w
    for r, (name, counts) in enumerate(rows):
        y = TOP + r * (bar_h + gap)
        total = sum(counts)
        chart.labels.append(Label(label_w - 8, y + bar_h - 5, name, "end"))
        chart.labels.append(Label(label_w + plot_w + 8, y + bar_h - 5, f"{total}", "start"))
        x = float(label_w)
        for s, n in enumerate(counts):
            if n and total:
                w = plot_w * n / total
                chart.rects.append(Rect(round(x, 1), y, round(w, 1), bar_h, s,
                                        f"{name}: {n} of {total} contexts {legend[s]}"))
                x += w
    chart.summary = f"{title}: {len(rows)} rows"
    return chart
