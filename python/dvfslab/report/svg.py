"""Inline-SVG charts for the HTML report, drawn by matplotlib: grouped bars, category lines,
step lines, scatter plots.

Each function returns one `<svg>` element as a string, with no script and no external
reference, so a report opens offline. Text stays text (svg.fonttype "none"), so it is small,
selectable and searchable. Values that are NaN or None are left out. Hovering a bar or a point
shows its exact value (an SVG <title>, added to the element matplotlib tagged with a gid).

Only the object-oriented API is used (matplotlib.figure.Figure, no pyplot): nothing global,
no GUI backend, safe in worker processes.
"""

from __future__ import annotations

import hashlib
import io
import math
import re
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

WIDTH_PX = 880
PLOT_HEIGHT_PX = 240
TITLE_PX = 28
AXIS_LABELS_PX = 56
LEGEND_LINE_PX = 18
PX_PER_INCH = 96
"""CSS pixels per inch: a figure of WIDTH_PX / PX_PER_INCH inches is WIDTH_PX wide on screen."""
LOG_SPAN = 20.0
"""Line charts whose values span more than this factor get a logarithmic y axis."""
PT_PER_PX = 0.75
"""matplotlib sizes text and paddings in points: 72 per inch, against 96 CSS pixels."""
Y_AXIS_PX = 80
"""Room left of the plot for the y tick labels and the y caption, to size bars and legends."""
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

STYLE: dict[Any, Any] = {
    "svg.fonttype": "none",
    # ids of clip paths and markers from the content alone: the same chart, the same bytes
    "svg.hashsalt": "dvfslab",
    "font.family": "sans-serif",
    "font.size": 11 * PT_PER_PX,
    "axes.edgecolor": "#888",
    "axes.grid": True,
    "axes.grid.axis": "y",
    "axes.axisbelow": True,
    "grid.color": "#ddd",
    "axes.spines.top": False,
    "axes.spines.right": False,
    "legend.frameon": False,
    "axes.formatter.useoffset": False,  # tick labels show the values themselves
}

Bar = tuple[float, float, float]
"""value, interval low, interval high (NaN low/high: no error bar)."""


def color(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def colors_for(names: Sequence[str]) -> dict[str, str]:
    """One colour per name, in order: pass it to every chart of a report (`colors=`) so that a
    series keeps its colour from chart to chart, whichever series each chart shows."""
    return {name: color(i) for i, name in enumerate(dict.fromkeys(names))}


def bar_chart(
    title: str,
    groups: Sequence[str],
    series: Sequence[str],
    values: Mapping[tuple[str, str], Bar],
    *,
    y_label: str = "",
    base: float = 0.0,
    decimals: int = 2,
    colors: Mapping[str, str] | None = None,
) -> str:
    """Bars per group (x) and series (colour), drawn from `base` (1.0 for ratios), with
    interval whiskers where given. `colors` fixes a series' colour (`colors_for`)."""
    with _Chart(title, series, y_label, colors) as chart:
        # bars at most 28 px wide, as many side by side as there are series
        bar_w = min(0.8 / max(1, len(series)), 28.0 * len(groups) / chart.plot_w_px)
        for si, name in enumerate(series):
            for gi, group in enumerate(groups):
                v = values.get((group, name))
                if v is not None and _finite(v[0]):
                    x = gi + (si - (len(series) - 1) / 2) * bar_w
                    chart.bar(x, bar_w, v, base, chart.fill(si), f"{group} / {name}", decimals)
        if base != 0.0:
            chart.ax.axhline(base, color="#333", lw=1, ls=(0, (4, 3)))
        if all(x >= base for v in values.values() for x in v if _finite(x)):
            chart.ax.set_ylim(bottom=base)  # bars all grow up from base: no empty band below
        chart.categories(groups)
        return chart.svg()


def line_chart(
    title: str,
    categories: Sequence[str],
    series: Mapping[str, Sequence[tuple[float, float] | None]],
    *,
    y_label: str = "",
    decimals: int = 2,
    colors: Mapping[str, str] | None = None,
) -> str:
    """One line per series over categorical x, each point (value, error) with a +- whisker.

    The y axis is logarithmic when every value is positive and they span more than LOG_SPAN.
    """
    values = [p[0] for pts in series.values() for p in pts if p is not None and _finite(p[0])]
    with _Chart(title, list(series), y_label, colors) as chart:
        if values and min(values) > 0 and max(values) / min(values) > LOG_SPAN:
            chart.ax.set_yscale("log")
        for si, (name, pts) in enumerate(series.items()):
            xs, ys = [], []
            for ci, p in enumerate(pts):
                if p is not None and _finite(p[0]):
                    chart.point(ci, p, chart.fill(si), f"{categories[ci]} / {name}", decimals)
                    xs.append(ci)
                    ys.append(p[0])
            chart.ax.plot(xs, ys, color=chart.fill(si), lw=1.5)
        chart.categories(categories)
        return chart.svg()


def scatter_chart(
    title: str,
    series: Mapping[str, Sequence[tuple[float, float, str]]],
    *,
    x_label: str,
    y_label: str,
    decimals: int = 3,
    colors: Mapping[str, str] | None = None,
) -> str:
    """Points (x, y, label) per series, each with its label and values on hover."""
    with _Chart(title, list(series), y_label, colors) as chart:
        chart.ax.set_xlabel(x_label)
        chart.ax.grid(True, axis="both")
        for si, points in enumerate(series.values()):
            for x, y, label in points:
                if _finite(x) and _finite(y):
                    (marker,) = chart.ax.plot(x, y, "o", ms=6, color=chart.fill(si))
                    chart.tip(marker, f"{label}: {x:.{decimals}f}, {y:.{decimals}f}")
        return chart.svg()


def step_chart(
    title: str,
    series: Mapping[str, tuple[Sequence[float], Sequence[float]]],
    *,
    x_label: str = "",
    y_label: str = "",
    colors: Mapping[str, str] | None = None,
) -> str:
    """Step lines over numeric x: each series (xs, ys) holds its value until the next x."""
    xs_all = [x for xs, _ in series.values() for x in xs if _finite(x)] or [0.0, 1.0]
    ys_all = [y for _, ys in series.values() for y in ys if _finite(y)] or [0.0]
    x_hi = max(xs_all)
    with _Chart(title, list(series), y_label, colors) as chart:
        for si, (xs, ys) in enumerate(series.values()):
            points = [(x, y) for x, y in zip(xs, ys) if _finite(x) and _finite(y)]
            if points:
                # the last value holds to the end of the chart
                px = [x for x, _ in points] + [x_hi]
                py = [y for _, y in points] + [points[-1][1]]
                chart.ax.step(px, py, where="post", color=chart.fill(si), lw=1.2, alpha=0.85)
        chart.ax.set_xlim(min(xs_all), x_hi)
        chart.ax.set_ylim(bottom=min(0.0, *ys_all))
        chart.ax.grid(True, axis="both")
        if x_label:
            chart.ax.set_xlabel(x_label)
        return chart.svg()


class _Chart:
    """One figure with one axes: title, legend (a swatch per series) above the plot, y label,
    and the hover texts to add to the SVG."""

    def __init__(
        self,
        title: str,
        series: Sequence[str],
        y_label: str,
        colors: Mapping[str, str] | None = None,
    ) -> None:
        import matplotlib

        self.title, self.series, self.y_label = title, list(series), y_label
        self.colors = dict(colors or {})
        self.plot_w_px = WIDTH_PX - Y_AXIS_PX
        self.legend_columns = _legend_columns(self.series, self.plot_w_px)
        self.legend_rows = -(-len(self.series) // self.legend_columns)
        self.tips: dict[str, str] = {}
        self._style = matplotlib.rc_context(STYLE)

    def __enter__(self) -> _Chart:
        from matplotlib.figure import Figure

        self._style.__enter__()
        height_px = TITLE_PX + LEGEND_LINE_PX * self.legend_rows + PLOT_HEIGHT_PX + AXIS_LABELS_PX
        self.fig = Figure(
            figsize=(WIDTH_PX / PX_PER_INCH, height_px / PX_PER_INCH),
            dpi=PX_PER_INCH,
            layout="constrained",
        )
        self.ax = self.fig.add_subplot()
        # the legend sits between the title and the plot: the title is padded over its rows
        self.ax.set_title(
            self.title,
            loc="left",
            fontsize=13 * PT_PER_PX,
            fontweight="bold",
            pad=4 + LEGEND_LINE_PX * PT_PER_PX * self.legend_rows,
        )
        if self.y_label:
            self.ax.set_ylabel(self.y_label)
        return self

    def __exit__(self, *exc: object) -> None:
        self._style.__exit__(None, None, None)

    def fill(self, i: int) -> str:
        """The colour of series `i`: its own in `colors`, else the palette's i-th."""
        return self.colors.get(self.series[i], color(i)) if i < len(self.series) else color(i)

    def tip(self, artist: Any, text: str) -> None:
        """Show `text` when the pointer is over `artist`."""
        gid = f"tip{len(self.tips)}"
        artist.set_gid(gid)
        self.tips[gid] = text

    def bar(
        self, x: float, width: float, v: Bar, base: float, fill: str, label: str, decimals: int
    ) -> None:
        """One bar from base to its value, with its interval's whisker if it has one."""
        value, lo, hi = v
        tip = f"{label}: {value:.{decimals}f}"
        if _finite(lo) and _finite(hi):
            tip += f" [{lo:.{decimals}f}, {hi:.{decimals}f}]"
            whisker = [[value - lo], [hi - value]]
            self.ax.errorbar(x, value, yerr=whisker, color="#222", capsize=3, lw=1)
        (rect,) = self.ax.bar(x, value - base, bottom=base, width=width * 0.9, color=fill)
        self.tip(rect, tip)

    def point(self, x: float, p: tuple[float, float], fill: str, label: str, decimals: int) -> None:
        """One point (value, error) with a +- whisker when the error is positive."""
        value, error = p
        tip = f"{label}: {value:.{decimals}f}"
        if _finite(error):
            tip += f" +- {error:.{decimals}f}"
            if error > 0:
                self.ax.errorbar(x, value, yerr=error, color=fill, capsize=3, lw=1)
        (marker,) = self.ax.plot(x, value, "o", ms=5, color=fill)
        self.tip(marker, tip)

    def categories(self, labels: Sequence[str]) -> None:
        """Category labels under the axis, slanted when they are crowded."""
        slot = self.plot_w_px / max(1, len(labels))
        crowded = any(len(text) * CHAR_PX > slot for text in labels)
        self.ax.set_xticks(range(len(labels)))
        self.ax.set_xticklabels(
            labels, rotation=30 if crowded else 0, ha="right" if crowded else "center"
        )
        self.ax.set_xlim(-0.5, len(labels) - 0.5)

    def svg(self) -> str:
        """The figure as one inline <svg> element, its hover texts added."""
        from matplotlib.patches import Patch

        if self.series:
            self.ax.legend(
                handles=[Patch(color=self.fill(i), label=s) for i, s in enumerate(self.series)],
                loc="lower left",
                bbox_to_anchor=(0.0, 1.0),
                borderaxespad=0.2,
                borderpad=0.0,
                ncols=self.legend_columns,
                handlelength=0.9,
                handleheight=0.9,
                columnspacing=1.2,
            )
        buffer = io.StringIO()
        self.fig.savefig(buffer, format="svg", metadata=_NO_METADATA)
        return _inline(buffer.getvalue(), self.title, self.tips)


_NO_METADATA: dict[str, Any] = {"Creator": None, "Date": None, "Format": None, "Type": None}


def _inline(svg: str, title: str, tips: Mapping[str, str]) -> str:
    """matplotlib's SVG document as an element for HTML: no XML prolog, a class for the page's
    style sheet, the chart's title, a <title> inside each tagged group, and ids unique in the
    page."""
    svg = svg[svg.index("<svg") :]
    svg = svg.replace("<svg ", '<svg class="chart" role="img" ', 1)
    head_end = svg.index(">") + 1
    svg = svg[:head_end] + f"\n<title>{escape(title)}</title>" + svg[head_end:]

    def titled(match: re.Match[str]) -> str:
        return f"{match.group(0)}<title>{escape(tips[match.group(1)])}</title>"

    svg = re.sub(r'<g id="(tip\d+)">', titled, svg)
    return _unique_ids(svg).strip()


def _unique_ids(svg: str) -> str:
    """Every id (and reference to it) prefixed with a digest of the chart: matplotlib numbers
    them per figure ("axes_1", "patch_2"), and a page holds many figures."""
    prefix = "c" + hashlib.sha1(svg.encode()).hexdigest()[:8] + "-"
    return re.sub(r'(id="|href="#|url\(#)(?=[^"#)]+["\)])', lambda m: m.group(1) + prefix, svg)


def _legend_columns(series: Sequence[str], width_px: float) -> int:
    """As many legend entries side by side as fit the width (at least one)."""
    widest = max((14 + len(name) * CHAR_PX + 16 for name in series), default=1.0)
    return max(1, min(len(series), int(width_px // widest)))


def _finite(x: object) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x)
