"""The score-distribution chart: a histogram laid out in Python, drawn as inline SVG by the
submission page's template (no script, nothing loaded from elsewhere)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass
class Bar:
    x: float
    y: float
    width: float
    height: float
    count: int
    label: str


@dataclass
class Histogram:
    width: int
    height: int
    left: int
    bottom: int
    bars: list[Bar]
    max_count: int
    lo: float
    hi: float
    total: int
    y_ticks: list[tuple[float, int]]
    x_ticks: list[tuple[float, str]]


def histogram(values: Sequence[float], *, bins: int = 10, width: int = 560,
              height: int = 220) -> Histogram:
    """Bars of how many episodes scored in each of ``bins`` equal ranges of [0, 1] (widened
    to the values' range for a suite scored on another scale); the last range includes its
    upper end, so a perfect score is counted."""
    lo = min([0.0, *values])
    hi = max([1.0, *values])
    span = (hi - lo) or 1.0
    counts = [0] * bins
    for value in values:
        index = min(bins - 1, int((value - lo) / span * bins))
        counts[index] += 1
    left, bottom, top, right = 40, 30, 10, 10
    plot_w = width - left - right
    plot_h = height - bottom - top
    max_count = max(counts) if counts else 0
    bars = []
    step = plot_w / bins
    for i, count in enumerate(counts):
        h = plot_h * count / max_count if max_count else 0.0
        a = lo + span * i / bins
        b = lo + span * (i + 1) / bins
        closing = "]" if i == bins - 1 else ")"
        bars.append(Bar(x=left + i * step + 1, y=top + plot_h - h, width=max(1.0, step - 2),
                        height=h, count=count, label=f"[{a:.2g}, {b:.2g}{closing}"))
    y_ticks = []
    if max_count:
        for fraction in (0.0, 0.5, 1.0):
            count = round(max_count * fraction)
            y_ticks.append((top + plot_h - plot_h * count / max_count, count))
    x_ticks = [(left + plot_w * f, f"{lo + span * f:.2g}") for f in (0.0, 0.25, 0.5, 0.75, 1.0)]
    return Histogram(width=width, height=height, left=left, bottom=height - bottom, bars=bars,
                     max_count=max_count, lo=lo, hi=hi, total=len(values), y_ticks=y_ticks,
                     x_ticks=x_ticks)
