"""Comparison reports: a campaign's results table, turned into the tables kernel engineers read.

Input is one row per run (`RESULT_COLUMNS`) and the name of the baseline configuration. Output
is a `Report`: a `summary` DataFrame (one row per platform, benchmark and configuration: the
ratio to the baseline as a geometric mean over parameters, its interval, power, performance per
watt, a verdict) and a `detail` DataFrame (one row per platform, benchmark, parameter and
configuration: MMTests' statistics, percentage difference and significance). docs/report-json.md
documents both as JSON.

Exporters render a report, one per format, all with `write(report, out)`:
    text      MMTests compare-kernels tables (rich on a terminal, aligned plain text otherwise)
    markdown  the same tables as pipe tables
    csv       the summary (or, with table="detail", the detail) as one flat table
    json      {"schema": "dvfslab-report/2", "summary": [...], "detail": [...]}
`export(report, "markdown", out)` picks one by name.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Literal, Protocol, TextIO

from dvfslab import stats
from dvfslab._core import ConfigError
from dvfslab._table import print_markdown_table, print_table

if TYPE_CHECKING:
    import pandas as pd

REPORT_SCHEMA = "dvfslab-report/2"
RESULT_COLUMNS = (
    "platform",
    "benchmark",
    "config",
    "param",
    "iteration",
    "metric_value",
    "metric_unit",
    "better",
    "energy_j",
    "sim_time_s",
    "avg_package_w",
)
PPW_NEUTRAL = 0.005
"""A PPW ratio that rounds to 1.00 prints as "~", as in the published tables."""

Layout = Literal["mmtests", "changelog"]


@dataclass(frozen=True)
class Report:
    """A comparison of every configuration with `baseline`, per platform and benchmark."""

    baseline: str
    summary: pd.DataFrame
    detail: pd.DataFrame
    significance: Literal["ci", "ttest"] = "ci"
    level: float = stats.INTERVAL_LEVEL
    neutral_band: float = stats.NEUTRAL_BAND

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data (schema "dvfslab-report/2"); NaN becomes None."""
        summary = []
        for row in self.summary.to_dict("records"):
            row["perf_ratio_ci"] = [row["perf_ratio_ci_low"], row["perf_ratio_ci_high"]]
            summary.append({k: row[k] for k in _SUMMARY_JSON})
        detail = [{k: row[k] for k in _DETAIL_COLUMNS} for row in self.detail.to_dict("records")]
        clean: dict[str, Any] = _json_clean(
            {
                "schema": REPORT_SCHEMA,
                "baseline": self.baseline,
                "significance": self.significance,
                "level": self.level,
                "neutral_band": self.neutral_band,
                "summary": summary,
                "detail": detail,
            }
        )
        return clean

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)


# -- building ------------------------------------------------------------------------------------


def build_report(
    results: pd.DataFrame,
    baseline: str,
    *,
    significance: Literal["ci", "ttest"] = "ci",
    level: float = stats.INTERVAL_LEVEL,
    neutral_band: float = stats.NEUTRAL_BAND,
) -> Report:
    """Compare every configuration in `results` with `baseline`.

    results:      one row per run, with the columns of RESULT_COLUMNS
    baseline:     the configuration every other is compared with, on each platform
    significance: "ci" (MMTests since 2024: mean +- 1.96 sd bands apart) or "ttest" (before),
                  for the per-parameter detail rows
    level:        of the ratio intervals over the iterations (the model variants)
    neutral_band: a ratio whose interval lies within 1 +- this is neutral (`stats.verdict`)

    Raises ConfigError when a column is missing, `better` is not higher/lower, a benchmark mixes
    directions or units, or the baseline has no runs for a platform and benchmark.
    """
    import pandas as pd

    if significance not in ("ci", "ttest"):
        raise ConfigError(f"significance must be 'ci' or 'ttest' (got {significance!r})")
    df = _checked_results(results, baseline)
    detail: list[dict[str, Any]] = []
    summary: list[dict[str, Any]] = []
    for (platform, benchmark), runs in df.groupby(["platform", "benchmark"], sort=False):
        group = _Group(str(platform), str(benchmark), runs, baseline)
        detail += group.detail_rows(significance)
        summary += group.summary_rows(level, neutral_band)
    return Report(
        baseline=baseline,
        summary=pd.DataFrame(summary, columns=list(_SUMMARY_COLUMNS)),
        detail=pd.DataFrame(detail, columns=list(_DETAIL_COLUMNS)),
        significance=significance,
        level=level,
        neutral_band=neutral_band,
    )


_SUMMARY_COLUMNS = (
    "platform",
    "benchmark",
    "metric_unit",
    "better",
    "config",
    "baseline",
    "params",
    "perf_ratio",
    "perf_ratio_ci_low",
    "perf_ratio_ci_high",
    "perf_per_watt_ratio",
    "avg_package_w",
    "verdict",
)
# The JSON has the interval as one [low, high] field.
_SUMMARY_JSON = (
    *_SUMMARY_COLUMNS[: _SUMMARY_COLUMNS.index("perf_ratio_ci_low")],
    "perf_ratio_ci",
    *_SUMMARY_COLUMNS[_SUMMARY_COLUMNS.index("perf_ratio_ci_high") + 1 :],
)
_DETAIL_COLUMNS = (
    "platform",
    "benchmark",
    "param",
    "metric_unit",
    "better",
    "config",
    "baseline",
    "mean_kind",
    "n",
    "mean",
    "stddev",
    "coeffvar",
    "min",
    "max",
    "pct_diff",
    "significant",
    "significance_score",
    "ratio",
    "avg_package_w",
    "energy_j",
)


class _Group:
    """One platform and benchmark: its configurations, parameters and samples."""

    def __init__(self, platform: str, benchmark: str, runs: pd.DataFrame, baseline: str) -> None:
        self.platform, self.benchmark, self.baseline = platform, benchmark, baseline
        self.better = _one_value(runs, "better", platform, benchmark)
        self.unit = _one_value(runs, "metric_unit", platform, benchmark)
        configs = list(dict.fromkeys(runs["config"]))
        if baseline not in configs:
            raise ConfigError(
                f"baseline {baseline!r} has no runs for {platform} {benchmark} "
                f"(configurations there: {', '.join(configs)})"
            )
        self.configs = [baseline] + [c for c in configs if c != baseline]
        self.params = sorted(dict.fromkeys(runs["param"]), key=_natural_key)
        ordered = runs.sort_values("iteration", kind="stable")
        self.cells = {key: cell for key, cell in ordered.groupby(["config", "param"], sort=False)}
        self.runs = runs

    def samples(self, config: str, param: str) -> list[float] | None:
        cell = self.cells.get((config, param))
        return None if cell is None else [float(x) for x in cell["metric_value"]]

    def detail_rows(self, method: Literal["ci", "ttest"]) -> list[dict[str, Any]]:
        rows = []
        for param in self.params:
            base = self.samples(self.baseline, param)
            base_mean = stats.mean_for(base, self.better) if base else math.nan
            for config in self.configs:
                xs = self.samples(config, param)
                if xs is None:
                    continue
                s = stats.summarise(xs, self.better)
                cell = self.cells[(config, param)]
                sig = (
                    stats.significance(base, xs, self.better, method)
                    if base is not None and config != self.baseline
                    else None
                )
                rows.append(
                    {
                        "platform": self.platform,
                        "benchmark": self.benchmark,
                        "param": param,
                        "metric_unit": self.unit,
                        "better": self.better,
                        "config": config,
                        "baseline": self.baseline,
                        "mean_kind": s.kind,
                        "n": s.n,
                        "mean": s.mean,
                        "stddev": s.stddev,
                        "coeffvar": s.coeffvar,
                        "min": s.min,
                        "max": s.max,
                        "pct_diff": stats.pct_diff(base_mean, s.mean, self.better),
                        "significant": sig is not None and sig.significant,
                        "significance_score": sig.score if sig is not None else math.nan,
                        "ratio": stats.ratio(s.mean, base_mean) if base else math.nan,
                        "avg_package_w": float(cell["avg_package_w"].mean()),
                        "energy_j": float(cell["energy_j"].mean()),
                    }
                )
        return rows

    def summary_rows(self, level: float, neutral_band: float) -> list[dict[str, Any]]:
        base_w = self.avg_package_w(self.baseline)
        rows = []
        for config in self.configs:
            pairs = []
            for param in self.params:
                base, new = self.samples(self.baseline, param), self.samples(config, param)
                if base and new:
                    pairs.append((base, new))
            is_baseline = config == self.baseline
            r = stats.summary_ratio(pairs, self.better, level)
            if is_baseline:  # exactly 1 by definition, not a comparison with itself
                r = stats.RatioSummary(1.0, 1.0, 1.0, tuple(1.0 for _ in pairs))
            power_w = self.avg_package_w(config)
            rows.append(
                {
                    "platform": self.platform,
                    "benchmark": self.benchmark,
                    "metric_unit": self.unit,
                    "better": self.better,
                    "config": config,
                    "baseline": self.baseline,
                    "params": len(pairs),
                    "perf_ratio": r.ratio,
                    "perf_ratio_ci_low": r.ci_low,
                    "perf_ratio_ci_high": r.ci_high,
                    "perf_per_watt_ratio": stats.perf_per_watt_ratio(
                        r.ratio, self.better, base_w, power_w
                    ),
                    "avg_package_w": power_w,
                    "verdict": (
                        "baseline"
                        if is_baseline
                        else stats.verdict(r.ci_low, r.ci_high, self.better, neutral_band)
                    ),
                }
            )
        return rows

    def avg_package_w(self, config: str) -> float:
        """Average package power over all the configuration's runs, weighted by their length
        (what turbostat sampling over the whole benchmark measures)."""
        runs = self.runs[self.runs["config"] == config]
        seconds = runs["sim_time_s"].astype(float)
        watts = runs["avg_package_w"].astype(float)
        total = float(seconds.sum())
        if total > 0 and math.isfinite(total):
            return float((watts * seconds).sum()) / total
        return float(watts.mean())


def _checked_results(results: pd.DataFrame, baseline: str) -> pd.DataFrame:
    missing = [c for c in RESULT_COLUMNS if c not in results.columns]
    if missing:
        raise ConfigError(
            f"results table lacks column(s) {', '.join(missing)} "
            f"(a report needs {', '.join(RESULT_COLUMNS)})"
        )
    if results.empty:
        raise ConfigError("results table has no runs: nothing to report")
    bad = sorted(set(map(str, results["better"])) - {"higher", "lower"})
    if bad:
        raise ConfigError(f"column better must hold 'higher' or 'lower' (found {bad})")
    configs = set(results["config"])
    if baseline not in configs:
        raise ConfigError(
            f"baseline {baseline!r} is not a configuration of these results "
            f"(there are: {', '.join(sorted(map(str, configs)))})"
        )
    import pandas as pd

    df = results.copy()
    for column in ("platform", "benchmark", "config", "param", "metric_unit", "better"):
        df[column] = df[column].astype(str)
    for column in ("iteration", "metric_value", "energy_j", "sim_time_s", "avg_package_w"):
        try:
            df[column] = pd.to_numeric(df[column])
        except (TypeError, ValueError) as e:
            raise ConfigError(f"column {column} must hold numbers ({e})") from None
    return df


def _one_value(runs: pd.DataFrame, column: str, platform: str, benchmark: str) -> str:
    values = list(dict.fromkeys(runs[column]))
    if len(values) != 1:
        raise ConfigError(
            f"{platform} {benchmark}: runs disagree on {column} ({', '.join(values)}); "
            "a benchmark has one metric"
        )
    return str(values[0])


def _natural_key(text: str) -> tuple[tuple[int, float, str], ...]:
    """Sort key putting "clients=8" before "clients=16": numbers compare as numbers."""
    parts = re.split(r"(\d+(?:\.\d+)?)", text)
    return tuple((1, float(p), "") if i % 2 else (0, 0.0, p) for i, p in enumerate(parts) if p)


# -- tables --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Table:
    """A rendered table, format-neutral: every cell is already text."""

    title: str
    headers: list[str]
    rows: list[list[str]]
    right: frozenset[str] = field(default_factory=frozenset)


def summary_tables(
    report: Report, show_ci: bool = False, platform: str | None = None
) -> list[Table]:
    """Per platform (or only `platform`): ratio to the baseline, average package power (W),
    performance per watt.

    Rows are benchmarks, columns configurations, as in the published evaluations. A ratio is
    "~" when its verdict is neutral and followed by "?" when uncertain (`stats.verdict`), a PPW
    ratio is "~" when it rounds to 1.00; with show_ci a ratio is followed by its interval
    unless that is a point.
    """
    tables = []
    for name, rows in report.summary.groupby("platform", sort=False):
        if platform is not None and name != platform:
            continue
        configs = list(dict.fromkeys(rows["config"]))
        others = [c for c in configs if c != report.baseline]
        records = rows.to_dict("records")
        benchmarks = list(dict.fromkeys(r["benchmark"] for r in records))
        better = {r["benchmark"]: r["better"] for r in records}
        cells = {(r["benchmark"], r["config"]): r for r in records}
        ratio_rows = _grid(cells, benchmarks, others, lambda r: _ratio_text(r, show_ci))
        tables += [
            Table(
                f"{name}: performance ratio to {report.baseline} "
                "(geometric mean over parameters; ~ neutral, ? uncertain)",
                ["benchmark", "better", *others],
                [[row[0], better[row[0]], *row[1:]] for row in ratio_rows],
                frozenset(others),
            ),
            Table(
                f"{name}: average package power (W)",
                ["benchmark", *configs],
                _grid(cells, benchmarks, configs, lambda r: _fixed(r["avg_package_w"], 2)),
                frozenset(configs),
            ),
            Table(
                f"{name}: performance-per-watt ratio to {report.baseline} (higher is better)",
                ["benchmark", *others],
                _grid(cells, benchmarks, others, _ppw_text),
                frozenset(others),
            ),
        ]
    return tables


def detail_tables(report: Report, layout: Layout = "mmtests") -> list[Table]:
    """Per platform and benchmark, the MMTests compare-kernels table (`detail_table`)."""
    return [
        detail_table(rows, layout)
        for _, rows in report.detail.groupby(["platform", "benchmark"], sort=False)
    ]


def detail_table(rows: pd.DataFrame, layout: Layout = "mmtests") -> Table:
    """One platform and benchmark's rows of `Report.detail` as an MMTests table.

    layout "mmtests": rows are statistic x parameter (Hmean/Amean, then (H)Stddev, then
    (H)CoeffVar), each cell `value (pct%)`, the mean row `value *pct%*` when significant.
    layout "changelog": one row per parameter, `mean +- CoeffVar% (pct%)`, the baseline's
    parentheses blank, as in SUSE changelog tables.
    """
    if layout not in ("mmtests", "changelog"):
        raise ConfigError(f"layout must be 'mmtests' or 'changelog' (got {layout!r})")
    records = rows.to_dict("records")
    configs = list(dict.fromkeys(r["config"] for r in records))
    params = list(dict.fromkeys(r["param"] for r in records))
    cells = {(r["param"], r["config"]): r for r in records}
    first = records[0]
    kind = first["mean_kind"].capitalize()
    decimals = _decimals([r["mean"] for r in records])
    title = (
        f"{first['platform']} {first['benchmark']} ({first['metric_unit']}, {kind}, "
        f"{first['better']} is better)"
    )
    if layout == "changelog":
        body = [
            [kind, p, *(_changelog_cell(cells.get((p, c)), decimals) for c in configs)]
            for p in params
        ]
    else:
        prefix = "H" if kind == "Hmean" else ""
        body = [
            [label, p, *(_mmtests_cell(cells, p, c, column, decimals) for c in configs)]
            for label, column in (
                (kind, "mean"),
                (f"{prefix}Stddev", "stddev"),
                (f"{prefix}CoeffVar", "coeffvar"),
            )
            for p in params
        ]
    return Table(title, ["statistic", "param", *configs], body, frozenset(configs))


def _grid(
    cells: dict[tuple[str, str], dict[str, Any]],
    benchmarks: list[str],
    configs: list[str],
    text: Callable[[dict[str, Any]], str],
) -> list[list[str]]:
    """One row per benchmark: its name, then text(cell) per configuration ("-" if none)."""
    return [
        [b, *("-" if (b, c) not in cells else text(cells[(b, c)]) for c in configs)]
        for b in benchmarks
    ]


def _ratio_text(row: dict[str, Any], show_ci: bool) -> str:
    text = stats.fmt_ratio(row["perf_ratio"], row["verdict"] == "neutral")
    if row["verdict"] == "uncertain":
        text += "?"
    lo, hi = row["perf_ratio_ci_low"], row["perf_ratio_ci_high"]
    if show_ci and hi > lo:  # a point interval (answers that do not spread) says nothing more
        text += f" [{lo:.2f}, {hi:.2f}]"
    return text


def _ppw_text(row: dict[str, Any]) -> str:
    ppw = row["perf_per_watt_ratio"]
    return stats.fmt_ratio(ppw, abs(ppw - 1.0) < PPW_NEUTRAL)


def _mmtests_cell(
    cells: dict[tuple[str, str], dict[str, Any]],
    param: str,
    config: str,
    column: str,
    decimals: int,
) -> str:
    """`value (pct%)`, or `value *pct%*` on a significant mean row (MMTests PrintGeneric).

    The mean row's percentage follows the metric's direction; the spread rows' is always
    lower-is-better (pndiff): a smaller spread is an improvement.
    """
    row = cells.get((param, config))
    if row is None:
        return "-"
    value = row[column]
    if column == "mean":
        return f"{_fixed(value, decimals)} {_pct(row['pct_diff'], bool(row['significant']))}"
    base = cells.get((param, row["baseline"]))
    pct = stats.pct_diff(base[column], value, "lower") if base else math.nan
    return f"{_fixed(value, 2 if column == 'coeffvar' else decimals)} {_pct(pct, False)}"


def _changelog_cell(row: dict[str, Any] | None, decimals: int) -> str:
    """`mean +- CoeffVar% (pct%)`; the baseline's parentheses are left blank."""
    if row is None:
        return "-"
    spread = f"{_fixed(row['mean'], decimals)} +- {_fixed(row['coeffvar'], 2)}%"
    if row["config"] == row["baseline"]:
        return f"{spread} (        )"
    return f"{spread} {_pct(row['pct_diff'], bool(row['significant']))}"


def _pct(pct: float, starred: bool) -> str:
    """MMTests' percentage: ` (   3.21%)`, or `*   3.21%*` when significant."""
    shown = 0.0 if round(pct, 2) == 0 else pct  # never "-0.00"
    text = "    n/a" if math.isnan(pct) else f"{shown:7.2f}"
    return f"*{text}%*" if starred else f"({text}%)"


def _fixed(x: float, decimals: int) -> str:
    return "-" if x is None or math.isnan(x) else f"{x:.{decimals}f}"


def _decimals(means: list[float]) -> int:
    """2 decimals as MMTests prints, more when the means are small: ~4 significant digits."""
    finite = [abs(float(m)) for m in means if m and math.isfinite(m)]
    if not finite:
        return 2
    return int(min(6, max(2, 3 - math.floor(math.log10(min(finite))))))


# -- exporters -----------------------------------------------------------------------------------


class Exporter(Protocol):
    """Renders a report in one format."""

    def write(self, report: Report, out: TextIO) -> None: ...


@dataclass(frozen=True)
class TextExporter:
    """Summary tables, then detail tables: rich on a terminal, aligned plain text otherwise."""

    layout: Layout = "mmtests"
    show_ci: bool = True

    def write(self, report: Report, out: TextIO) -> None:
        for i, table in enumerate(_all_tables(report, self.layout, self.show_ci)):
            if i:
                print(file=out)
            print_table(
                table.headers,
                table.rows,
                right=table.right,
                title=table.title,
                out=out,
                no_wrap=True,
            )


@dataclass(frozen=True)
class MarkdownExporter:
    """The text tables as GitHub pipe tables under `###` headings."""

    layout: Layout = "mmtests"
    show_ci: bool = True

    def write(self, report: Report, out: TextIO) -> None:
        for i, table in enumerate(_all_tables(report, self.layout, self.show_ci)):
            if i:
                print(file=out)
            print_markdown_table(
                table.headers, table.rows, right=table.right, title=table.title, out=out
            )


@dataclass(frozen=True)
class CsvExporter:
    """One flat table: the summary (table="summary") or the detail (table="detail")."""

    table: Literal["summary", "detail"] = "summary"
    columns: ClassVar[dict[str, tuple[str, ...]]] = {
        "summary": _SUMMARY_COLUMNS,
        "detail": _DETAIL_COLUMNS,
    }

    def write(self, report: Report, out: TextIO) -> None:
        if self.table not in self.columns:
            raise ConfigError(f"csv table must be 'summary' or 'detail' (got {self.table!r})")
        frame = report.summary if self.table == "summary" else report.detail
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(self.columns[self.table])
        for row in frame.itertuples(index=False):
            writer.writerow([_csv_value(v) for v in row])


@dataclass(frozen=True)
class JsonExporter:
    """The whole report as one JSON document (docs/report-json.md)."""

    def write(self, report: Report, out: TextIO) -> None:
        out.write(report.to_json() + "\n")


EXPORTERS: dict[str, type[Exporter]] = {
    "text": TextExporter,
    "markdown": MarkdownExporter,
    "csv": CsvExporter,
    "json": JsonExporter,
}


def export(report: Report, fmt: str = "text", out: TextIO | None = None, **options: Any) -> None:
    """Write `report` to `out` (stdout) in format `fmt`; options go to the exporter."""
    exporter = EXPORTERS.get(fmt)
    if exporter is None:
        raise ConfigError(f"report format must be one of {', '.join(EXPORTERS)} (got {fmt!r})")
    exporter(**options).write(report, out or sys.stdout)


def render(report: Report, fmt: str = "text", **options: Any) -> str:
    """The report in format `fmt`, as a string (text comes out plain)."""
    buffer = io.StringIO()
    export(report, fmt, buffer, **options)
    return buffer.getvalue()


def _all_tables(report: Report, layout: Layout, show_ci: bool) -> list[Table]:
    return summary_tables(report, show_ci) + detail_tables(report, layout)


def _csv_value(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return ""
    return value


def _json_clean(value: Any) -> Any:
    """NaN and infinities to None, numpy scalars to Python ones, recursively."""
    if isinstance(value, dict):
        return {k: _json_clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_clean(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
