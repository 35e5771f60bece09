"""A report laid out as tables, format-neutral (every cell already text): per platform the
ratio, power and performance-per-watt tables of the published evaluations, and per benchmark
the MMTests compare-kernels table. The exporters (`dvfslab.report.exporters`) and the HTML
report print them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Literal, get_args

from dvfslab._core import ConfigError
from dvfslab.report import stats
from dvfslab.report.build import Report

if TYPE_CHECKING:
    import pandas as pd

Layout = Literal["mmtests", "changelog"]
"""A detail table's layout (`detail_table`)."""
LAYOUTS: tuple[Layout, ...] = get_args(Layout)

PPW_NEUTRAL = 0.005
"""A PPW ratio that rounds to 1.00 prints as "~", as in the published tables."""


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
    (widened by the model discrepancy when the report has one) unless that is a point.
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
    if layout not in LAYOUTS:
        layouts = " or ".join(repr(x) for x in LAYOUTS)
        raise ConfigError(f"layout must be {layouts} (got {layout!r})")
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
    # The interval the verdict rests on: the model's, widened by the discrepancy when it has one.
    lo, hi = row["predicted_ci_low"], row["predicted_ci_high"]
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
