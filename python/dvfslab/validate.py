"""Validation against published measurements: run a campaign, then compare every published cell
with the simulated one.

    dvfslab validate intel-invariance [--json] [--iterations N] [--out DIR] [--jobs N]

The published numbers ship in dvfslab/data/calibration/ as four CSVs per campaign (see the README
there): `<name>-ratios.csv` (result / baseline per machine, benchmark and configuration, a gmean
over parameters, `neutral=1` where the publication printed `~`), `<name>-power-watts.csv`
(average package power), `<name>-perf-per-watt-ratios.csv` and `<name>-detail.csv` (per-parameter
values). Each becomes a list of `Cell`s, one per published number, with the simulated value from
`dvfslab.report.build_report` beside it.

Scores (`scores`):
    direction_agreement      ratio cells whose direction (improved / regressed / neutral) is the
                             published one; neutral = the publication's `~`, or within +-2%
    median_abs_ln_error      median over ratio cells of |ln(simulated / published)|
    power_within_25pct       power cells whose simulated watts are within +-25% of the published
    ppw_direction_agreement  as direction_agreement, over the perf-per-watt cells
Cells without a simulated value (a platform or configuration not run) count in no score.

Each simulated ratio also carries its 90% interval over the iterations, which are model variants
unless the campaign ran `--nominal` (`simulated_ci`, the report's interval of the gmean ratio),
and the report's verdict on it (`simulated_verdict`: improved, regressed, neutral or uncertain).
The scores of the intervals, over the ratio cells:
    coverage                       published ratios inside the simulated 90% interval
    called_share                   cells with a verdict other than uncertain
    confident_direction_agreement  called cells whose verdict is the published direction
    median_ci_halfwidth            median of (high - low) / 2 of the intervals
"""

from __future__ import annotations

import csv
import dataclasses
import io
import math
import statistics
import sys
from collections.abc import Collection
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING, Any, Literal, TextIO

import pandas as pd

from dvfslab._core import ConfigError
from dvfslab._table import print_markdown_table, print_table
from dvfslab.stats import NEUTRAL_BAND

if TYPE_CHECKING:
    from dvfslab.report import Report

VALIDATE_SCHEMA = "dvfslab-validate/2"
POWER_TOLERANCE = 0.25
"""A simulated power within +-25% of the published one agrees."""

TableName = Literal["ratios", "power", "perf-per-watt", "detail"]
TABLES: tuple[TableName, ...] = ("ratios", "power", "perf-per-watt", "detail")
_FILES = {
    "ratios": "ratios",
    "power": "power-watts",
    "perf-per-watt": "perf-per-watt-ratios",
    "detail": "detail",
}
Direction = Literal["improved", "regressed", "neutral"]


@dataclass(frozen=True)
class Cell:
    """One published number and its simulated counterpart."""

    table: TableName
    machine: str
    benchmark: str
    param: str
    """The sweep point for detail cells ("clients=8"; "" for none), "" for the others."""
    config: str
    published: float
    better: str = "higher"
    """Of the published quantity: perf ratios follow the benchmark, ppw is always higher."""
    neutral: bool = False
    """The publication printed `~`."""
    unit: str = ""
    simulated: float | None = None
    published_ratio: float | None = None
    """Detail cells: the published value over the baseline's at the same parameter."""
    simulated_ratio: float | None = None
    simulated_ci: tuple[float, float] | None = None
    """Ratio cells: the 90% interval of the simulated ratio over the iterations."""
    simulated_verdict: str | None = None
    """Ratio cells: improved / regressed / neutral / uncertain (`dvfslab.stats.verdict`)."""

    @property
    def agree(self) -> bool | None:
        """Does the simulation agree with the publication on this cell? None: not simulated.

        ratios and perf-per-watt: same direction; power: within +-25%; detail: the per-parameter
        ratio to the baseline has the same direction (absolute values of scaled-down benchmarks
        are not comparable).
        """
        if self.simulated is None or not math.isfinite(self.simulated):
            return None
        if self.table == "power":
            return power_agrees(self.published, self.simulated)
        if self.table == "detail":
            if self.published_ratio is None or self.simulated_ratio is None:
                return None
            if not math.isfinite(self.simulated_ratio):
                return None
            return direction(self.published_ratio, self.better) == direction(
                self.simulated_ratio, self.better
            )
        return direction(self.published, self.better, self.neutral) == direction(
            self.simulated, self.better
        )

    @property
    def covered(self) -> bool | None:
        """Ratio cells: is the published ratio inside the simulated interval? None: no interval."""
        if self.table != "ratios" or self.simulated_ci is None:
            return None
        lo, hi = self.simulated_ci
        return lo - 1e-12 <= self.published <= hi + 1e-12

    @property
    def called(self) -> bool | None:
        """Ratio cells: did the simulation give a verdict other than uncertain? None: no verdict."""
        if self.table != "ratios" or self.simulated_verdict is None:
            return None
        return self.simulated_verdict != "uncertain"

    @property
    def called_right(self) -> bool | None:
        """Called ratio cells: is the verdict the published direction? None: not called."""
        if not self.called:
            return None
        return self.simulated_verdict == direction(self.published, self.better, self.neutral)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "table": self.table,
            "machine": self.machine,
            "benchmark": self.benchmark,
            "param": self.param,
            "config": self.config,
            "published": self.published,
            "simulated": _finite_or_none(self.simulated),
            "agree": self.agree,
            "better": self.better,
            "neutral": self.neutral,
        }
        if self.table == "detail":
            out["unit"] = self.unit
            out["published_ratio"] = _finite_or_none(self.published_ratio)
            out["simulated_ratio"] = _finite_or_none(self.simulated_ratio)
        if self.table == "ratios":
            out["simulated_ci"] = list(self.simulated_ci) if self.simulated_ci else None
            out["simulated_verdict"] = self.simulated_verdict
            out["covered"] = self.covered
        return out


# -- scoring -------------------------------------------------------------------------------------


def direction(
    ratio: float, better: str, neutral: bool = False, band: float = NEUTRAL_BAND
) -> Direction:
    """improved / regressed / neutral for a ratio result/baseline.

    Neutral when flagged (the publication's `~`) or within 1 +- band; otherwise improved when the
    ratio moved the way `better` ("higher" or "lower") prefers.
    """
    if neutral or abs(ratio - 1.0) <= band + 1e-9:
        return "neutral"
    return "improved" if (ratio > 1.0) == (better == "higher") else "regressed"


def power_agrees(published: float, simulated: float, tolerance: float = POWER_TOLERANCE) -> bool:
    return published > 0 and abs(simulated / published - 1.0) <= tolerance + 1e-12


def direction_agreement(cells: list[Cell]) -> float | None:
    """Share of the simulated cells that agree (each cell's own rule); None if none simulated."""
    return share([c.agree for c in cells])


def median_abs_ln_error(cells: list[Cell]) -> float | None:
    """Median over the simulated cells of |ln(simulated / published)|."""
    errors = [
        abs(math.log(c.simulated / c.published))
        for c in cells
        if c.simulated is not None and c.simulated > 0 and c.published > 0
    ]
    return statistics.median(errors) if errors else None


def share(flags: list[bool | None]) -> float | None:
    """The share of True among the flags that are not None; None when all are."""
    judged = [f for f in flags if f is not None]
    return sum(judged) / len(judged) if judged else None


def interval_scores(cells: list[Cell]) -> dict[str, Any]:
    """The scores of the ratio cells' intervals and verdicts (see the module docstring)."""
    ratios = [c for c in cells if c.table == "ratios" and c.simulated is not None]
    halves = [(c.simulated_ci[1] - c.simulated_ci[0]) / 2 for c in ratios if c.simulated_ci]
    return {
        "coverage": share([c.covered for c in ratios]),
        "called_share": share([c.called for c in ratios]),
        "confident_direction_agreement": share([c.called_right for c in ratios]),
        "median_ci_halfwidth": statistics.median(halves) if halves else None,
    }


def scores(cells: list[Cell]) -> dict[str, Any]:
    """The headline scores and how many cells each one judged."""
    by = {t: [c for c in cells if c.table == t] for t in TABLES}
    return {
        **interval_scores(cells),
        "direction_agreement": direction_agreement(by["ratios"]),
        "median_abs_ln_error": median_abs_ln_error(by["ratios"]),
        "power_within_25pct": direction_agreement(by["power"]),
        "ppw_direction_agreement": direction_agreement(by["perf-per-watt"]),
        "detail_direction_agreement": direction_agreement(by["detail"]),
        "power_median_abs_ln_error": median_abs_ln_error(by["power"]),
        "judged": {t: sum(c.agree is not None for c in by[t]) for t in TABLES},
        "published": {t: len(by[t]) for t in TABLES},
    }


# -- published cells -----------------------------------------------------------------------------


def calibration_names() -> list[str]:
    """Campaigns with published numbers shipped in dvfslab/data/calibration/."""
    directory = resources.files("dvfslab") / "data" / "calibration"
    if not directory.is_dir():
        return []
    # A campaign is named by its ratios table; the perf-per-watt table also ends in "-ratios".
    ratios, ppw = f"-{_FILES['ratios']}.csv", f"-{_FILES['perf-per-watt']}.csv"
    return sorted(
        e.name[: -len(ratios)]
        for e in directory.iterdir()
        if e.name.endswith(ratios) and not e.name.endswith(ppw)
    )


def _read_csv(name: str, table: TableName) -> list[dict[str, str]]:
    path = resources.files("dvfslab") / "data" / "calibration" / f"{name}-{_FILES[table]}.csv"
    if not path.is_file():
        return []
    return list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))))


def published_power(name: str) -> pd.DataFrame:
    """The published power table of campaign `name`: machine, benchmark, config, package_watts."""
    table = pd.DataFrame(_read_csv(name, "power"))
    if not table.empty:
        table["package_watts"] = table["package_watts"].astype(float)
    return table


def published_cells(name: str) -> list[Cell]:
    """Every published cell of campaign `name`, without simulated values."""
    if name not in calibration_names():
        known = ", ".join(calibration_names()) or "none"
        raise ConfigError(f"no published measurements for campaign {name!r} (shipped: {known})")
    better_of: dict[tuple[str, str], str] = {}
    cells: list[Cell] = []
    for row in _read_csv(name, "ratios"):
        better_of[(row["machine"], row["benchmark"])] = row["better"]
        cells.append(
            Cell(
                "ratios",
                row["machine"],
                row["benchmark"],
                "",
                row["config"],
                float(row["ratio"]),
                better=row["better"],
                neutral=row.get("neutral", "0") == "1",
            )
        )
    for row in _read_csv(name, "power"):
        cells.append(
            Cell(
                "power",
                row["machine"],
                row["benchmark"],
                "",
                row["config"],
                float(row["package_watts"]),
                better="lower",
                unit="W",
            )
        )
    for row in _read_csv(name, "perf-per-watt"):
        cells.append(
            Cell(
                "perf-per-watt",
                row["machine"],
                row["benchmark"],
                "",
                row["config"],
                float(row["perf_per_watt_ratio"]),
                better="higher",
                neutral=row.get("neutral", "0") == "1",
            )
        )
    detail = _read_csv(name, "detail")
    base_values = {
        (r["machine"], r["benchmark"], r["param"]): float(r["value"])
        for r in detail
        if r["config"] == _baseline_in(detail)
    }
    for row in detail:
        param = "" if row["param"] in ("none", "-") else row["param"]
        base = base_values.get((row["machine"], row["benchmark"], row["param"]))
        value = float(row["value"])
        cells.append(
            Cell(
                "detail",
                row["machine"],
                row["benchmark"],
                param,
                row["config"],
                value,
                better=row["better"],
                unit=row["unit"],
                published_ratio=value / base if base else None,
            )
        )
    return cells


def _baseline_in(detail: list[dict[str, str]]) -> str:
    """The detail table's baseline: the configuration listed first."""
    return detail[0]["config"] if detail else ""


# -- simulated values ----------------------------------------------------------------------------


def fill_simulated(cells: list[Cell], report: Report) -> list[Cell]:
    """The cells with their simulated values from `report` (None where nothing was run)."""
    summary: dict[tuple[str, str, str], dict[str, Any]] = {
        (r["platform"], r["benchmark"], r["config"]): r for r in report.summary.to_dict("records")
    }
    detail: dict[tuple[str, str, str, str], dict[str, Any]] = {
        (r["platform"], r["benchmark"], r["param"], r["config"]): r
        for r in report.detail.to_dict("records")
    }
    out = []
    for cell in cells:
        if cell.table == "detail":
            row = detail.get((cell.machine, cell.benchmark, cell.param, cell.config))
            if row is None:
                out.append(cell)
                continue
            base = detail.get((cell.machine, cell.benchmark, cell.param, report.baseline))
            sim_ratio = float(row["mean"]) / float(base["mean"]) if base else None
            out.append(
                dataclasses.replace(cell, simulated=float(row["mean"]), simulated_ratio=sim_ratio)
            )
            continue
        srow = summary.get((cell.machine, cell.benchmark, cell.config))
        if srow is None:
            out.append(cell)
            continue
        column = {
            "ratios": "perf_ratio",
            "power": "avg_package_w",
            "perf-per-watt": "perf_per_watt_ratio",
        }[cell.table]
        ci = (float(srow["perf_ratio_ci_low"]), float(srow["perf_ratio_ci_high"]))
        is_ratio = cell.table == "ratios"
        known = is_ratio and all(math.isfinite(x) for x in ci)
        out.append(
            dataclasses.replace(
                cell,
                simulated=float(srow[column]),
                simulated_ci=ci if known else None,
                simulated_verdict=str(srow["verdict"]) if is_ratio else None,
            )
        )
    return out


def validate_report(
    name: str,
    report: Report,
    benchmarks: Collection[str] | None = None,
    platforms: Collection[str] | None = None,
) -> dict[str, Any]:
    """The validation of campaign `name`'s published cells against `report`, as JSON-ready data;
    only the cells of `benchmarks` on `platforms` when given (a partial validation)."""
    cells = [
        c
        for c in published_cells(name)
        if (benchmarks is None or c.benchmark in benchmarks)
        and (platforms is None or c.machine in platforms)
    ]
    cells = fill_simulated(cells, report)
    only = {
        key: sorted(set(names))
        for key, names in (("benchmarks", benchmarks), ("platforms", platforms))
        if names is not None
    }
    return {
        "schema": VALIDATE_SCHEMA,
        "campaign": name,
        **({"only": only} if only else {}),
        **scores(cells),
        "cells": [c.to_dict() for c in cells],
    }


# -- text view -----------------------------------------------------------------------------------

SCORE_ROWS: tuple[tuple[str, TableName, str], ...] = (
    ("direction_agreement", "ratios", "ratio cells with the published direction"),
    ("median_abs_ln_error", "ratios", "median |ln(simulated / published)| over ratio cells"),
    ("power_within_25pct", "power", "power cells within +-25%"),
    ("power_median_abs_ln_error", "power", "median |ln(simulated / published)| over power cells"),
    ("ppw_direction_agreement", "perf-per-watt", "perf-per-watt cells with the direction"),
    ("detail_direction_agreement", "detail", "detail cells with the per-parameter direction"),
    ("coverage", "ratios", "published ratios inside the simulated 90% interval"),
    ("called_share", "ratios", "ratio cells with a verdict other than uncertain"),
    ("confident_direction_agreement", "ratios", "called ratio cells with the published direction"),
    ("median_ci_halfwidth", "ratios", "median half-width of the ratio cells' 90% intervals"),
)
"""Each score with the table whose cells it counts and what it measures (both views)."""


def print_validation(result: dict[str, Any]) -> None:
    cells = result["cells"]
    titles = {
        "ratios": "performance ratio to the baseline (gmean over parameters; ~ = published "
        "neutral); agree = same direction (neutral within +-2%); verdict = what the simulated "
        "90% interval over the iterations says (? = uncertain)",
        "power": "average package power [W]; agree = within +-25%",
        "perf-per-watt": "performance-per-watt ratio to the baseline; agree = same direction",
        "detail": "per-parameter values (a timed workload run shorter than published compares "
        "by its ratio to the baseline); agree = same direction of that ratio",
    }
    for table in TABLES:
        rows = []
        for c in (c for c in cells if c["table"] == table):
            row: list[object] = [
                c["machine"],
                c["benchmark"],
                *([c["param"] or "-"] if table == "detail" else []),
                c["config"],
                ("~" if c["neutral"] else "") + fmt_value(c["published"]),
                fmt_value(c["simulated"]),
            ]
            if table == "detail":
                row += [fmt_value(c["published_ratio"]), fmt_value(c["simulated_ratio"])]
            if table == "ratios":
                ci = c["simulated_ci"]
                row.append(f"{fmt_value(ci[0], 3)}-{fmt_value(ci[1], 3)}" if ci else "-")
                row.append(c["simulated_verdict"] or "-")
            row.append({True: "yes", False: "NO", None: "-"}[c["agree"]])
            rows.append(row)
        if not rows:
            continue
        headers = ["machine", "benchmark"]
        headers += ["param"] if table == "detail" else []
        headers += ["config", "published", "simulated"]
        headers += ["pub ratio", "sim ratio"] if table == "detail" else []
        headers += ["sim 90% interval", "verdict"] if table == "ratios" else []
        headers += ["agree"]
        numeric = {"published", "simulated", "pub ratio", "sim ratio", "sim 90% interval", "agree"}
        print_table(headers, rows, right=numeric, title=f"{table}: {titles[table]}")
        print()
    judged, published = result["judged"], result["published"]
    only = result.get("only", {})
    part = "; ".join(f"{key} {', '.join(names)}" for key, names in only.items())
    print(
        f"validation of {result['campaign']}"
        + (f" (only {part})" if part else "")
        + " against the published measurements"
    )
    for key, table, what in SCORE_ROWS:
        print(
            f"  {key:30s} {fmt_value(result[key], 3):>7s}  {what} ({judged[table]} of "
            f"{published[table]} cells simulated)"
        )
    cross = result.get("cross_validated")
    if cross is not None:
        print("cross-validated: each machine scored with the fitted constants refitted without it")
        for key, _, what in SCORE_ROWS:
            print(f"  {key:30s} {fmt_value(cross[key], 3):>7s}  {what}")


# -- markdown view -------------------------------------------------------------------------------

_MARKDOWN_TITLES = {
    "ratios": "performance ratio to the baseline",
    "power": "average package power (W)",
    "perf-per-watt": "performance-per-watt ratio to the baseline",
}


def print_validation_markdown(result: dict[str, Any], out: TextIO | None = None) -> None:
    """The validation as Markdown to go under a document's `##` section: the scores, then per
    machine (`###`) one table (`####`) per published table with a row per benchmark and a column
    per configuration, each cell `published → simulated`, marked ✗ where they disagree and ? where
    the simulated verdict is uncertain; per detail table a row per parameter, the baseline's
    values and the others' ratios to it."""
    out = out or sys.stdout
    judged, published = result["judged"], result["published"]
    cross = result.get("cross_validated")
    rows = [
        [
            key,
            fmt_value(result[key], 3),
            *([fmt_value(cross[key], 3)] if cross is not None else []),
            f"{judged[table]} of {published[table]}",
        ]
        for key, table, _ in SCORE_ROWS
    ]
    values = ["value", *(["cross-validated"] if cross is not None else [])]
    print_markdown_table(
        ["score", *values, "cells simulated"],
        rows,
        right={*values, "cells simulated"},
        title=f"{result['campaign']}: scores",
        out=out,
    )
    cells = [c for c in result["cells"] if c["simulated"] is not None]
    for machine in dict.fromkeys(c["machine"] for c in cells):
        print(f"\n### {machine}", file=out)
        mine = [c for c in cells if c["machine"] == machine]
        for table, what in _MARKDOWN_TITLES.items():
            part = [c for c in mine if c["table"] == table]
            if part:
                print(file=out)
                _print_grid(part, "benchmark", f"{machine}: {what}", out)
        detail = [c for c in mine if c["table"] == "detail"]
        for benchmark in dict.fromkeys(c["benchmark"] for c in detail):
            part = [c for c in detail if c["benchmark"] == benchmark]
            title = f"{machine} {benchmark}: {part[0]['config']} in {part[0]['unit']}, the others'"
            print(file=out)
            _print_grid(part, "param", title + " ratio to it", out)


def _print_grid(cells: list[dict[str, Any]], row_key: str, title: str, out: TextIO) -> None:
    """One pipe table: a row per `row_key` value, a column per configuration."""
    configs = list(dict.fromkeys(c["config"] for c in cells))
    row_names = list(dict.fromkeys(c[row_key] for c in cells))
    by_key = {(c[row_key], c["config"]): c for c in cells}
    # A detail table's first configuration is its baseline: its values, the others' ratios.
    ratio_of = row_key == "param"
    rows = [
        [
            name,
            *(
                _markdown_cell(by_key.get((name, config)), ratio_of and i > 0)
                for i, config in enumerate(configs)
            ),
        ]
        for name in row_names
    ]
    print_markdown_table(
        [row_key, *configs], rows, right=set(configs), title=title, level=4, out=out
    )


def _markdown_cell(cell: dict[str, Any] | None, as_ratio: bool) -> str:
    if cell is None:
        return ""
    if as_ratio:
        published, simulated = cell["published_ratio"], cell["simulated_ratio"]
    else:
        published, simulated = cell["published"], cell["simulated"]
    text = ("~" if cell["neutral"] else "") + f"{fmt_value(published)} → {fmt_value(simulated)}"
    if cell["agree"] is False:
        text += " ✗"
    if cell.get("simulated_verdict") == "uncertain":
        text += " ?"
    return text


def fmt_value(value: float | None, decimals: int = 2) -> str:
    """A cell's number for the views: `decimals` places, one from 100 up, "-" when missing."""
    if value is None or not math.isfinite(value):
        return "-"
    if abs(value) >= 100:
        return f"{value:.1f}"
    return f"{value:.{decimals}f}"


def _finite_or_none(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None
