"""Small SVG charts drawn on the server: bars, histograms and line charts.

The viewer runs offline and adds no JavaScript dependency, so its plots are plain SVG text
that the page inserts as it is. Every label comes from a run (task metadata, metric names), so
every one is escaped here; numbers are formatted here too.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence

#: Colours of a line chart's series, in order (repeated past the last).
SERIES_COLOURS = ("#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2")
BAR_COLOUR = "#2563eb"
FONT = 'font-family="system-ui, sans-serif" font-size="11"'


def _text(value: object) -> str:
    return html.escape(str(value), quote=True)


def _number(value: float, span: float | None = None) -> str:
    """A tick or value label: short, whatever the magnitude, yet with enough digits that the
    two ends of an axis spanning ``span`` read differently (an entropy from 4.4827 to
    4.4819 must not print 4.48 twice)."""
    if value == 0:
        return "0"
    digits = 3
    if span:
        digits = max(3, 1 + math.ceil(math.log10(abs(value) / span)))
    return f"{value:.{digits}g}"


def bar_chart(labels: Sequence[str], values: Sequence[float | None], *, title: str,
              maximum: float | None = None, percent: bool = False,
              notes: Sequence[str] | None = None) -> str:
    """Horizontal bars, one per label (long label lists stay readable). ``maximum`` fixes
    the scale (1.0 for rates); ``percent`` prints values as percentages; ``notes`` adds a
    text after each value (such as the group's size)."""
    row_height, width, label_chars = 20, 420, 30
    # Wide enough for the longest label shown (about 6.5 px a character at this font size).
    left = 10 + math.ceil(6.5 * max((len(_short(label, label_chars)) for label in labels),
                                    default=1))
    height = 28 + row_height * max(len(labels), 1)
    top = max((v for v in values if v is not None), default=0.0)
    scale_max = maximum if maximum is not None else (top or 1.0)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" '
             f'width="{left + width + 120}" height="{height}" {FONT}>',
             f'<title>{_text(title)}</title>',
             f'<text x="0" y="14" font-weight="bold">{_text(title)}</text>']
    for index, (label, value) in enumerate(zip(labels, values, strict=True)):
        y = 24 + index * row_height
        parts.append(f'<text x="{left - 6}" y="{y + 13}" text-anchor="end">'
                     f'{_text(_short(label, label_chars))}</text>')
        if value is None:
            parts.append(f'<text x="{left + 4}" y="{y + 13}" fill="#6b7280">n/a</text>')
            continue
        bar = 0.0 if scale_max <= 0 else max(0.0, min(value / scale_max, 1.0)) * width
        shown = f"{100 * value:.0f}%" if percent else _number(value)
        if notes is not None:
            shown += f" {notes[index]}"
        parts.append(f'<rect x="{left}" y="{y + 3}" width="{bar:.1f}" height="{row_height - 6}" '
                     f'fill="{BAR_COLOUR}"><title>{_text(label)}: {_text(shown)}</title></rect>')
        parts.append(f'<text x="{left + bar + 4:.1f}" y="{y + 13}">{_text(shown)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def histogram(labels: Sequence[str], counts: Sequence[int], *, title: str,
              x_label: str) -> str:
    """Vertical bars of counts, one per bin, labelled under each bar."""
    bottom, plot_height = 40, 140
    top = max(counts, default=0) or 1
    left = max(36, 8 + math.ceil(6.5 * len(str(top))))  # room for the top count's digits
    bar_width = max(14, min(40, 480 // max(len(counts), 1)))
    width = left + bar_width * len(counts) + 20
    height = 24 + plot_height + bottom
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" '
             f'width="{max(width, 200)}" height="{height}" {FONT}>',
             f'<title>{_text(title)}</title>',
             f'<text x="0" y="14" font-weight="bold">{_text(title)}</text>',
             f'<text x="{left - 4}" y="30" text-anchor="end">{top}</text>',
             f'<text x="{left - 4}" y="{24 + plot_height}" text-anchor="end">0</text>']
    for index, (label, count) in enumerate(zip(labels, counts, strict=True)):
        x = left + index * bar_width
        bar = plot_height * count / top
        parts.append(f'<rect x="{x + 1}" y="{24 + plot_height - bar:.1f}" width="{bar_width - 2}" '
                     f'height="{bar:.1f}" fill="{BAR_COLOUR}"><title>{_text(label)}: {count}'
                     f'</title></rect>')
        if len(counts) <= 12 or index % max(1, len(counts) // 10) == 0:
            parts.append(f'<text x="{x + bar_width / 2:.1f}" y="{24 + plot_height + 14}" '
                         f'text-anchor="middle">{_text(label)}</text>')
    parts.append(f'<text x="{left}" y="{height - 4}">{_text(x_label)}</text></svg>')
    return "".join(parts)


def line_chart(series: dict[str, Sequence[tuple[float, float]]], *, title: str,
               x_label: str = "step") -> str:
    """Lines of (x, y) points, one per named series, on shared axes (empty when no series
    has a finite point)."""
    finite = {name: [(x, y) for x, y in points if math.isfinite(x) and math.isfinite(y)]
              for name, points in series.items()}
    finite = {name: points for name, points in finite.items() if points}
    if not finite:
        return ""
    top, plot_width, plot_height = 24, 420, 160
    xs = [x for points in finite.values() for x, _ in points]
    ys = [y for points in finite.values() for _, y in points]
    x_min, x_max = min(xs), max(xs)
    y_min, y_max = min(ys), max(ys)
    # One x (a single logged step) or one y: the axis spans around it, so the point sits in
    # the middle with its own value as the only tick, instead of on an empty frame's edge.
    one_x, one_y = x_max == x_min, y_max == y_min
    if one_x:
        x_min, x_max = x_min - 1, x_max + 1
    if one_y:
        pad = abs(y_min) * 0.1 or 0.5
        y_min, y_max = y_min - pad, y_max + pad
    y_ticks = ([(ys[0], _number(ys[0]))] if one_y else
               [(y_max, _number(y_max, y_max - y_min)), (y_min, _number(y_min, y_max - y_min))])
    # Wide enough for the longest tick label (about 6.5 px a character at this font size).
    left = max(40, 8 + math.ceil(6.5 * max(len(label) for _, label in y_ticks)))

    def px(x: float) -> float:
        return left + plot_width * (x - x_min) / (x_max - x_min)

    def py(y: float) -> float:
        return top + plot_height * (1 - (y - y_min) / (y_max - y_min))

    height = top + plot_height + 36 + 14 * len(finite)
    x_ticks = ([f'<text x="{px(xs[0]):.1f}" y="{top + plot_height + 14}" text-anchor="middle">'
                f'{_number(xs[0])}</text>'] if one_x else
               [f'<text x="{left}" y="{top + plot_height + 14}">{_number(x_min)}</text>',
                f'<text x="{left + plot_width}" y="{top + plot_height + 14}" '
                f'text-anchor="end">{_number(x_max)}</text>'])
    label_x = left + plot_width * (0.75 if one_x else 0.5)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" '
             f'width="{left + plot_width + 20}" height="{height}" {FONT}>',
             f'<title>{_text(title)}</title>',
             f'<text x="0" y="14" font-weight="bold">{_text(_short(title, 70))}</text>',
             f'<rect x="{left}" y="{top}" width="{plot_width}" height="{plot_height}" '
             'fill="none" stroke="#d1d5db"/>',
             *(f'<text x="{left - 4}" y="{py(value) + 4:.1f}" text-anchor="end">{label}</text>'
               for value, label in y_ticks),
             *x_ticks,
             f'<text x="{label_x:.1f}" y="{top + plot_height + 14}" '
             f'text-anchor="middle">{_text(x_label)}</text>']
    for index, (name, points) in enumerate(finite.items()):
        colour = SERIES_COLOURS[index % len(SERIES_COLOURS)]
        path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in sorted(points))
        parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="1.5" '
                     f'points="{path}"><title>{_text(name)}</title></polyline>')
        if len(points) == 1:
            x, y = points[0]
            parts.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="{colour}"/>')
        legend_y = top + plot_height + 30 + 14 * index
        parts.append(f'<rect x="{left}" y="{legend_y - 8}" width="10" height="3" '
                     f'fill="{colour}"/><text x="{left + 14}" y="{legend_y}">'
                     f'{_text(_short(name, 70))}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "\u2026"
