"""One self-contained HTML file for a report: tables and inline SVG charts, no script, no CDN.

`write_html(path, report)` writes it atomically. Per platform: the ratio of each configuration
to the baseline per benchmark (with its 95% interval), average package power, performance per
watt, and the summary tables; per benchmark: the mean per parameter for each configuration
(+- its standard deviation) and the MMTests detail table. Two optional DataFrames add:

time_in_freq  frequency residency: freq_khz, time_s (e.g. `SimResult.df_cpus_time_in_freq()`),
              optionally cpu and the labels platform, benchmark, config, param
timeline      per-CPU timelines: time_s, cpu, and freq_khz and/or util_avg
              (`pd.concat([r.df_cpus_frequency(), r.df_cpus_util()])`), optionally labelled
"""

from __future__ import annotations

import math
import os
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dvfslab._core import ConfigError
from dvfslab._files import replace_atomically
from dvfslab.report import Report, Table, detail_table, summary_tables, svg

if TYPE_CHECKING:
    import pandas as pd

LABELS = ("platform", "benchmark", "config", "param")
"""Columns that may label the rows of the optional DataFrames; one chart per distinct label."""
TIMELINE_MAX_CPUS = 8
TIMELINE_POINTS = 800
"""Timelines are cut into this many time bins, each kept as its first, min, max, last value."""

STYLE = """
body { font-family: system-ui, sans-serif; margin: 24px auto; max-width: 1200px; color: #222; }
h1 { font-size: 22px; } h2 { font-size: 18px; border-bottom: 1px solid #ccc; }
h3 { font-size: 15px; margin-top: 28px; }
p.note { color: #555; font-size: 13px; }
div.scroll { overflow-x: auto; margin: 8px 0 16px; }
table { border-collapse: collapse; font-size: 12px; }
p.caption { font-weight: bold; font-size: 13px; margin: 4px 0; }
th, td { padding: 2px 8px; border-bottom: 1px solid #eee; white-space: pre; }
th { background: #f4f4f4; text-align: left; }
td.num { text-align: right; font-family: ui-monospace, monospace; }
td.sig { font-weight: bold; }
svg.chart { display: block; margin: 8px 0; }
"""


def write_html(
    path: str | os.PathLike[str],
    report: Report,
    *,
    time_in_freq: pd.DataFrame | None = None,
    timeline: pd.DataFrame | None = None,
    title: str = "dvfslab report",
) -> Path:
    """Write the report as one HTML file at `path`, atomically; return the path."""
    path = Path(path)
    if not path.absolute().parent.is_dir():
        raise ConfigError(f"cannot write {path}: directory {path.absolute().parent} does not exist")
    text = render_html(report, time_in_freq=time_in_freq, timeline=timeline, title=title)
    replace_atomically(path, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))
    return path


def render_html(
    report: Report,
    *,
    time_in_freq: pd.DataFrame | None = None,
    timeline: pd.DataFrame | None = None,
    title: str = "dvfslab report",
) -> str:
    """The report as an HTML document (a string)."""
    body = [
        f"<h1>{escape(title)}</h1>",
        f'<p class="note">Every configuration is compared with <b>{escape(report.baseline)}</b>. '
        "A ratio is result / baseline, the geometric mean over a benchmark's parameters, with its "
        f"{report.level:.0%} interval over the iterations (each a model variant: the model's "
        "uncertain constants drawn over their ranges); above 1 is better for higher-is-better "
        "benchmarks, below 1 for lower-is-better ones. A ratio is improved or regressed only when "
        f"its whole interval lies beyond 1 +- {report.neutral_band:.0%}, neutral (~) when it lies "
        "within, and uncertain (?) otherwise: the model cannot tell. "
        "Performance per watt is relative to the baseline, higher is better. Detail tables follow "
        "MMTests: a positive percentage is an improvement, *starred* when significant "
        f"({'mean +- 1.96 sd bands apart' if report.significance == 'ci' else 't-test p < 0.10'})."
        "</p>",
    ]
    if report.runs is not None and not report.runs.complete:
        body.append(f'<p class="note"><b>{escape(report.runs.describe())}</b></p>')
    # One colour per configuration in every chart, the baseline's first.
    colors = svg.colors_for([report.baseline, *map(str, report.summary["config"])])
    for platform, rows in report.summary.groupby("platform", sort=False):
        body.append(f"<h2>{escape(str(platform))}</h2>")
        body += _platform_charts(rows, report.baseline, report.level, colors)
        body += [
            html_table(t) for t in summary_tables(report, show_ci=True, platform=str(platform))
        ]
        details = report.detail[report.detail["platform"] == platform]
        for benchmark, detail in details.groupby("benchmark", sort=False):
            body.append(f"<h3>{escape(str(benchmark))}</h3>")
            body.append(_param_chart(detail, colors))
            body.append(html_table(detail_table(detail)))
    if time_in_freq is not None:
        body.append("<h2>Frequency residency</h2>")
        body += _residency_charts(time_in_freq, colors)
    if timeline is not None:
        body.append("<h2>Timelines</h2>")
        body += _timeline_charts(timeline)
    return page(title, body)


def page(title: str, body: list[str]) -> str:
    """An HTML document of `body`'s elements under `title`, with the report's style."""
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{escape(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
        + "\n".join(body)
        + "\n</body>\n</html>\n"
    )


# -- the report's charts -------------------------------------------------------------------------


def _platform_charts(
    rows: pd.DataFrame, baseline: str, level: float, colors: dict[str, str]
) -> list[str]:
    records = rows.to_dict("records")
    configs = list(dict.fromkeys(r["config"] for r in records))
    others = [c for c in configs if c != baseline]
    groups = list(dict.fromkeys(r["benchmark"] for r in records))
    label = {r["benchmark"]: f"{r['benchmark']} ({r['better']})" for r in records}
    ratio, ppw, power = {}, {}, {}
    for r in records:
        key = (label[r["benchmark"]], r["config"])
        ratio[key] = (r["perf_ratio"], r["predicted_ci_low"], r["predicted_ci_high"])
        ppw[key] = (r["perf_per_watt_ratio"], math.nan, math.nan)
        power[key] = (r["avg_package_w"], math.nan, math.nan)
    labels = [label[g] for g in groups]
    return [
        svg.bar_chart(
            f"Performance ratio to {baseline} ({level:.0%} interval)",
            labels,
            others,
            ratio,
            y_label="result / baseline",
            base=1.0,
            colors=colors,
        ),
        svg.bar_chart(
            "Average package power",
            labels,
            configs,
            power,
            y_label="W",
            decimals=1,
            colors=colors,
        ),
        svg.bar_chart(
            f"Performance per watt relative to {baseline}",
            labels,
            others,
            ppw,
            y_label="PPW ratio (higher is better)",
            base=1.0,
            colors=colors,
        ),
    ]


def _param_chart(detail: pd.DataFrame, colors: dict[str, str]) -> str:
    """The benchmark's mean per parameter, one line per configuration, +- its spread."""
    records = detail.to_dict("records")
    params = list(dict.fromkeys(r["param"] for r in records))
    configs = list(dict.fromkeys(r["config"] for r in records))
    cell = {(r["param"], r["config"]): r for r in records}
    first = records[0]
    kind = "Hmean" if first["mean_kind"] == "hmean" else "Amean"
    series = {
        c: [
            (float(cell[(p, c)]["mean"]), float(cell[(p, c)]["stddev"])) if (p, c) in cell else None
            for p in params
        ]
        for c in configs
    }
    return svg.line_chart(
        f"{first['benchmark']}: {kind} per parameter (+- {'H' if kind == 'Hmean' else ''}Stddev;"
        f" {first['better']} is better)",
        params,
        series,
        y_label=str(first["metric_unit"]),
        colors=colors,
    )


def html_table(table: Table) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in table.headers)
    rows = []
    for row in table.rows:
        cells = []
        for header, text in zip(table.headers, row):
            classes = ["num"] if header in table.right else []
            if text.rstrip().endswith("%*"):
                classes.append("sig")
            attr = f' class="{" ".join(classes)}"' if classes else ""
            cells.append(f"<td{attr}>{escape(text)}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return (
        f'<div class="scroll"><p class="caption">{escape(table.title)}</p>'
        f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
    )


# -- optional DataFrames -------------------------------------------------------------------------


def _residency_charts(df: pd.DataFrame, colors: dict[str, str]) -> list[str]:
    """Share of time at each frequency, one chart per (platform, benchmark), bars per config."""
    _require(df, ("freq_khz", "time_s"), "time_in_freq")
    charts = []
    for key, part in _groups(df, [c for c in ("platform", "benchmark") if c in df.columns]):
        series = part["config"].astype(str) if "config" in part.columns else "all CPUs"
        seconds = (
            part.assign(series=series).groupby(["series", "freq_khz"], sort=False)["time_s"].sum()
        )
        share = 100.0 * seconds / seconds.groupby(level="series").transform("sum")
        values: dict[tuple[str, str], svg.Bar] = {
            (_mhz(khz), str(name)): (float(pct), math.nan, math.nan)
            for (name, khz), pct in share.items()
        }
        freqs = sorted({int(khz) for _, khz in share.index})
        charts.append(
            svg.bar_chart(
                _title("Time at each frequency", key),
                [_mhz(f) for f in freqs],
                list(dict.fromkeys(str(name) for name, _ in share.index)),
                values,
                y_label="% of CPU time",
                decimals=1,
                colors=colors,
            )
        )
    return charts


def _timeline_charts(df: pd.DataFrame) -> list[str]:
    """Frequency and util_avg over time, one line per CPU (the first TIMELINE_MAX_CPUS)."""
    _require(df, ("time_s", "cpu"), "timeline")
    signals = [
        (column, caption, unit, scale)
        for column, caption, unit, scale in (
            ("freq_khz", "Frequency", "MHz", 1e-3),
            ("util_avg", "util_avg", "0..1024", 1.0),
        )
        if column in df.columns
    ]
    if not signals:
        raise ConfigError("timeline DataFrame needs a freq_khz or util_avg column")
    charts = []
    for key, part in _groups(df, [c for c in LABELS if c in df.columns]):
        for column, caption, unit, scale in signals:
            cpus = sorted(part.loc[part[column].notna(), "cpu"].unique())
            if not cpus:
                continue
            shown = cpus[:TIMELINE_MAX_CPUS]
            note = (
                f" (CPUs {shown[0]}..{shown[-1]} of {len(cpus)})" if len(cpus) > len(shown) else ""
            )
            series = {}
            for cpu in shown:
                rows = part[(part["cpu"] == cpu) & part[column].notna()]
                if not rows.empty:
                    xs, ys = _downsampled(rows["time_s"], rows[column] * scale)
                    series[f"cpu{cpu}"] = (xs, ys)
            if series:
                charts.append(
                    svg.step_chart(
                        _title(caption + note, key), series, x_label="time (s)", y_label=unit
                    )
                )
    return charts


def _downsampled(times: pd.Series, values: pd.Series) -> tuple[list[float], list[float]]:
    """At most TIMELINE_POINTS bins, each kept as first, min, max, last: spikes stay visible."""
    import pandas as pd

    frame = pd.DataFrame(
        {"t": times.astype(float).to_numpy(), "v": values.astype(float).to_numpy()}
    )
    frame = frame.sort_values("t", kind="stable")
    if len(frame) <= 4 * TIMELINE_POINTS:
        return frame["t"].tolist(), frame["v"].tolist()
    t0, t1 = frame["t"].iloc[0], frame["t"].iloc[-1]
    width = (t1 - t0) / TIMELINE_POINTS or 1.0
    bins = ((frame["t"] - t0) / width).astype(int).clip(upper=TIMELINE_POINTS - 1)
    xs: list[float] = []
    ys: list[float] = []
    for _, b in frame.groupby(bins, sort=True):
        t = float(b["t"].iloc[0])
        for v in (b["v"].iloc[0], b["v"].min(), b["v"].max(), b["v"].iloc[-1]):
            xs.append(t)
            ys.append(float(v))
    return xs, ys


def _groups(df: pd.DataFrame, columns: list[str]) -> list[tuple[tuple[Any, ...], pd.DataFrame]]:
    if not columns:
        return [((), df)]
    return [
        (key if isinstance(key, tuple) else (key,), part)
        for key, part in df.groupby(columns, sort=False)
    ]


def _title(caption: str, key: tuple[Any, ...]) -> str:
    return caption if not key else f"{' '.join(map(str, key))}: {caption}"


def _mhz(khz: int) -> str:
    return f"{khz / 1000:g}"


def _require(df: pd.DataFrame, columns: tuple[str, ...], name: str) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ConfigError(f"{name} DataFrame lacks column(s) {', '.join(missing)}")
