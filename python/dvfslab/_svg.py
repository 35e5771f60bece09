"""Small inline-SVG charts for the HTML report: grouped bars, category lines, step lines.

Each function returns one `<svg>` element as a string, sized in CSS pixels, with no script and
no external reference, so a report opens offline. Values that are NaN or None are left out.
Hovering a bar or a point shows its exact value (an SVG <title>).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from html import escape

WIDTH_PX = 880
PLOT_HEIGHT_PX = 240
MARGIN_LEFT_PX = 64
MARGIN_RIGHT_PX = 16
TITLE_PX = 28
AXIS_LABELS_PX = 56
LEGEND_LINE_PX = 18
LOG_SPAN = 20.0
"""Line charts whose values span more than this factor get a logarithmic y axis."""
CHAR_PX = 6.6
"""Approximate width of one 11 px sans-serif character, to lay out legends and labels."""

# Okabe-Ito, then Tableau: distinguishable, also in grey print and for colour-blind readers.
PALETTE = (
    "#0072B2",
    "#E69F00",
    "#009E73",
    "#D55E00",
    "#CC79A7",
    "#56B4E9",
    "#F0E442",
    "#000000",
    "#8c564b",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)

Bar = tuple[float, float, float]
"""value, interval low, interval high (NaN low/high: no error bar)."""


def color(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def bar_chart(
    title: str,
    groups: Sequence[str],
    series: Sequence[str],
    values: Mapping[tuple[str, str], Bar],
    *,
    y_label: str = "",
    base: float = 0.0,
    decimals: int = 2,
) -> str:
    """Bars per group (x) and series (colour), drawn from `base` (1.0 for ratios), with
    interval whiskers where given."""
    points = [v for v in values.values() if _finite(v[0])]
    extent = [base] + [x for v in points for x in v if _finite(x)]
    frame = _Frame(title, series, y_label, min(extent), max(extent), include=base)
    out = frame.open()
    slot = frame.plot_w / max(1, len(groups))
    bar_w = min(28.0, 0.8 * slot / max(1, len(series)))
    for gi, group in enumerate(groups):
        x0 = frame.left + gi * slot + (slot - bar_w * len(series)) / 2
        for si, name in enumerate(series):
            v = values.get((group, name))
            if v is None or not _finite(v[0]):
                continue
            value, lo, hi = v
            x = x0 + si * bar_w
            top, bottom = sorted((frame.y(value), frame.y(base)))
            tip = f"{group} / {name}: {value:.{decimals}f}"
            if _finite(lo) and _finite(hi):
                tip += f" [{lo:.{decimals}f}, {hi:.{decimals}f}]"
            out.append(
                f'<rect x="{x:.1f}" y="{top:.1f}" width="{bar_w * 0.9:.1f}" '
                f'height="{max(bottom - top, 0.5):.1f}" fill="{color(si)}">'
                f"<title>{escape(tip)}</title></rect>"
            )
            if _finite(lo) and _finite(hi):
                out.append(_whisker(x + bar_w * 0.45, frame.y(lo), frame.y(hi), 3))
        out.append(frame.x_label(frame.left + (gi + 0.5) * slot, group, len(groups)))
    if base != 0.0:
        out.append(frame.hline(base, dashed=True))
    return frame.close(out)


def line_chart(
    title: str,
    categories: Sequence[str],
    series: Mapping[str, Sequence[tuple[float, float] | None]],
    *,
    y_label: str = "",
    decimals: int = 2,
) -> str:
    """One line per series over categorical x, each point (value, error) with a +- whisker.

    The y axis is logarithmic when every value is positive and they span more than LOG_SPAN.
    """
    values = [p[0] for pts in series.values() for p in pts if p is not None and _finite(p[0])]
    log = bool(values) and min(values) > 0 and max(values) / min(values) > LOG_SPAN
    extent = [
        y + s * e
        for pts in series.values()
        for p in pts
        if p is not None and _finite(p[0])
        for y, e in [(p[0], p[1] if _finite(p[1]) else 0.0)]
        for s in (-1, 1)
    ] or [0.0, 1.0]
    if log:
        extent = [min(values), max(values)]
    frame = _Frame(title, list(series), y_label, min(extent), max(extent), log=log)
    out = frame.open()
    slot = frame.plot_w / max(1, len(categories))
    for ci, category in enumerate(categories):
        out.append(frame.x_label(frame.left + (ci + 0.5) * slot, category, len(categories)))
    for si, (name, pts) in enumerate(series.items()):
        path: list[str] = []
        for ci, p in enumerate(pts):
            if p is None or not _finite(p[0]):
                continue
            x, y = frame.left + (ci + 0.5) * slot, frame.y(p[0])
            path.append(f"{'L' if path else 'M'}{x:.1f},{y:.1f}")
            if _finite(p[1]) and p[1] > 0:
                out.append(_whisker(x, frame.y(p[0] - p[1]), frame.y(p[0] + p[1]), 3, color(si)))
            tip = f"{categories[ci]} / {name}: {p[0]:.{decimals}f}"
            if _finite(p[1]):
                tip += f" +- {p[1]:.{decimals}f}"
            out.append(
                f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{color(si)}">'
                f"<title>{escape(tip)}</title></circle>"
            )
        if path:
            out.append(
                f'<path d="{" ".join(path)}" fill="none" stroke="{color(si)}" stroke-width="1.5"/>'
            )
    return frame.close(out)


def step_chart(
    title: str,
    series: Mapping[str, tuple[Sequence[float], Sequence[float]]],
    *,
    x_label: str = "",
    y_label: str = "",
) -> str:
    """Step lines over numeric x: each series (xs, ys) holds its value until the next x."""
    xs_all = [x for xs, _ in series.values() for x in xs if _finite(x)] or [0.0, 1.0]
    ys_all = [y for _, ys in series.values() for y in ys if _finite(y)] or [0.0, 1.0]
    frame = _Frame(title, list(series), y_label, min(ys_all), max(ys_all), include=0.0)
    x_lo, x_hi = min(xs_all), max(xs_all)
    x_span = (x_hi - x_lo) or 1.0

    def sx(x: float) -> float:
        return frame.left + (x - x_lo) / x_span * frame.plot_w

    out = frame.open()
    for tick in _nice_ticks(x_lo, x_hi, 8):
        out.append(frame.x_tick(sx(tick), _fmt_tick(tick)))
    if x_label:
        out.append(frame.axis_caption(x_label))
    for si, (_, (xs, ys)) in enumerate(series.items()):
        path: list[str] = []
        for x, y in zip(xs, ys):
            if not (_finite(x) and _finite(y)):
                continue
            px, py = sx(x), frame.y(y)
            path.append(f"H{px:.1f}V{py:.1f}" if path else f"M{px:.1f},{py:.1f}")
        if path:
            path.append(f"H{sx(x_hi):.1f}")
            out.append(
                f'<path d="{"".join(path)}" fill="none" stroke="{color(si)}" '
                'stroke-width="1.2" stroke-opacity="0.85"/>'
            )
    return frame.close(out)


class _Frame:
    """Title, legend, y axis with gridlines: what every chart shares."""

    def __init__(
        self,
        title: str,
        series: Sequence[str],
        y_label: str,
        y_min: float,
        y_max: float,
        include: float | None = None,
        log: bool = False,
    ) -> None:
        self.title, self.series, self.y_label, self.log = title, list(series), y_label, log
        if log:
            self.ticks = _log_ticks(y_min, y_max)
        else:
            if include is not None:
                y_min, y_max = min(y_min, include), max(y_max, include)
            pad = (y_max - y_min) * 0.05 or abs(y_max) * 0.05 or 1.0
            lo = y_min if y_min == include else y_min - pad
            if y_min >= 0 > lo:  # padding never takes an all-positive axis below zero
                lo = 0.0
            self.ticks = _nice_ticks(lo, y_max + pad, 6)
        self.y_lo, self.y_hi = self.ticks[0], self.ticks[-1]
        self.left = MARGIN_LEFT_PX
        self.plot_w = WIDTH_PX - MARGIN_LEFT_PX - MARGIN_RIGHT_PX
        self.legend = _legend_rows(self.series, self.plot_w)
        self.top = TITLE_PX + LEGEND_LINE_PX * len(self.legend)
        self.bottom = self.top + PLOT_HEIGHT_PX
        self.height = self.bottom + AXIS_LABELS_PX

    def y(self, value: float) -> float:
        if self.log:
            lo, hi = math.log10(self.y_lo), math.log10(self.y_hi)
            value = math.log10(max(value, self.y_lo))
        else:
            lo, hi = self.y_lo, self.y_hi
        return self.bottom - (value - lo) / ((hi - lo) or 1.0) * PLOT_HEIGHT_PX

    def open(self) -> list[str]:
        out = [
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH_PX}" height="{self.height}" '
            f'viewBox="0 0 {WIDTH_PX} {self.height}" role="img" class="chart" '
            'font-family="sans-serif" font-size="11">',
            f"<title>{escape(self.title)}</title>",
            f'<text x="{self.left}" y="18" font-size="13" font-weight="bold">'
            f"{escape(self.title)}</text>",
        ]
        for row_i, row in enumerate(self.legend):
            row_y = TITLE_PX + row_i * LEGEND_LINE_PX + 10
            for x, si in row:
                out.append(
                    f'<rect x="{self.left + x:.1f}" y="{row_y - 8}" width="10" height="10" '
                    f'fill="{color(si)}"/><text x="{self.left + x + 14:.1f}" y="{row_y + 1}">'
                    f"{escape(self.series[si])}</text>"
                )
        for tick in self.ticks:
            y = self.y(tick)
            out.append(
                f'<line x1="{self.left}" x2="{self.left + self.plot_w}" y1="{y:.1f}" '
                f'y2="{y:.1f}" stroke="#ddd"/><text x="{self.left - 6}" y="{y + 4:.1f}" '
                f'text-anchor="end">{escape(_fmt_tick(tick))}</text>'
            )
        if self.y_label:
            cy = (self.top + self.bottom) / 2
            out.append(
                f'<text transform="translate(14,{cy:.1f}) rotate(-90)" text-anchor="middle">'
                f"{escape(self.y_label)}</text>"
            )
        out.append(
            f'<line x1="{self.left}" x2="{self.left}" y1="{self.top}" y2="{self.bottom}" '
            'stroke="#888"/>'
        )
        return out

    def close(self, out: list[str]) -> str:
        out.append(
            f'<line x1="{self.left}" x2="{self.left + self.plot_w}" y1="{self.bottom}" '
            f'y2="{self.bottom}" stroke="#888"/>'
        )
        out.append("</svg>")
        return "\n".join(out)

    def hline(self, value: float, dashed: bool = False) -> str:
        y = self.y(value)
        dash = ' stroke-dasharray="4 3"' if dashed else ""
        return (
            f'<line x1="{self.left}" x2="{self.left + self.plot_w}" y1="{y:.1f}" y2="{y:.1f}" '
            f'stroke="#333"{dash}/>'
        )

    def x_label(self, x: float, text: str, count: int) -> str:
        """A category label under the axis, slanted when the categories are crowded."""
        slot = self.plot_w / max(1, count)
        if len(text) * CHAR_PX <= slot:
            return (
                f'<text x="{x:.1f}" y="{self.bottom + 16}" text-anchor="middle">'
                f"{escape(text)}</text>"
            )
        return (
            f'<text transform="translate({x:.1f},{self.bottom + 12}) rotate(-30)" '
            f'text-anchor="end">{escape(text)}</text>'
        )

    def x_tick(self, x: float, text: str) -> str:
        return (
            f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{self.bottom}" y2="{self.bottom + 4}" '
            f'stroke="#888"/><text x="{x:.1f}" y="{self.bottom + 16}" text-anchor="middle">'
            f"{escape(text)}</text>"
        )

    def axis_caption(self, text: str) -> str:
        return (
            f'<text x="{self.left + self.plot_w / 2:.1f}" y="{self.bottom + 36}" '
            f'text-anchor="middle">{escape(text)}</text>'
        )


def _legend_rows(series: Sequence[str], width: float) -> list[list[tuple[float, int]]]:
    """Legend entries flowed into rows: (x offset, series index) per entry."""
    rows: list[list[tuple[float, int]]] = []
    x: float = width
    for i, name in enumerate(series):
        w = 14 + len(name) * CHAR_PX + 16
        if x + w > width:
            rows.append([])
            x = 0.0
        rows[-1].append((x, i))
        x += w
    return rows


def _whisker(x: float, y1: float, y2: float, half: float, stroke: str = "#222") -> str:
    return (
        f'<path d="M{x:.1f},{y1:.1f}V{y2:.1f}M{x - half:.1f},{y1:.1f}H{x + half:.1f}'
        f'M{x - half:.1f},{y2:.1f}H{x + half:.1f}" stroke="{stroke}" fill="none"/>'
    )


def _nice_ticks(lo: float, hi: float, count: int) -> list[float]:
    """Round tick values covering [lo, hi]: steps of 1, 2 or 5 times a power of ten."""
    if not (_finite(lo) and _finite(hi)):
        return [0.0, 1.0]
    if hi <= lo:
        lo, hi = lo - 0.5 * (abs(lo) or 1.0), hi + 0.5 * (abs(hi) or 1.0)
    raw = (hi - lo) / max(1, count)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.floor(lo / step) * step
    ticks = []
    t = first
    while t < hi + step * 1e-9:
        ticks.append(round(t, 12))
        t += step
    if ticks[-1] < hi:
        ticks.append(round(t, 12))
    return ticks


def _log_ticks(lo: float, hi: float) -> list[float]:
    """1, 2 and 5 times the powers of ten from just below lo to just above hi."""
    ticks = []
    for k in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1):
        ticks += [m * 10.0**k for m in (1, 2, 5)]
    below = [t for t in ticks if t <= lo]
    above = [t for t in ticks if t >= hi]
    first, last = below[-1] if below else ticks[0], above[0] if above else ticks[-1]
    return [t for t in ticks if first <= t <= last]


def _fmt_tick(x: float) -> str:
    if x != 0 and (abs(x) >= 1e6 or abs(x) < 1e-3):
        return f"{x:.3g}"
    return f"{x:,.6f}".rstrip("0").rstrip(".")


def _finite(x: object) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x)
