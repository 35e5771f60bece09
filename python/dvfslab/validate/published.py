"""A campaign's published numbers (dvfslab/data/calibration/) as cells, the simulated values of a
report beside them, and the validation that scores them (`validate_report`)."""

from __future__ import annotations

import csv
import dataclasses
import io
import math
from collections.abc import Collection
from importlib import resources
from typing import TYPE_CHECKING, Any

import pandas as pd

from dvfslab._core import ConfigError
from dvfslab.validate.cells import PER_PARAMETER, Cell, TableName, scores

if TYPE_CHECKING:
    from dvfslab.report.build import Report
    from dvfslab.validate.calibrated import Discrepancy

VALIDATE_SCHEMA = "dvfslab-validate/2"
"""The schema of `validate_report`'s result (`dvfslab validate --json`)."""

CALIBRATION_FILES: dict[TableName, str] = {
    "ratios": "ratios",
    "power": "power-watts",
    "perf-per-watt": "perf-per-watt-ratios",
    "detail": "detail",
    "energy": "energy",
}
"""Each table's file, dvfslab/data/calibration/<campaign>-<name>.csv."""

ENERGY_QUANTITIES = {"energy": "energy_j", "power": "avg_package_w"}
"""An energy table's `quantity` and the report's detail column it compares with: the energy of
the runs (J), or their average package power (W); either compares by its ratio to the
baseline's."""


# -- published cells -----------------------------------------------------------------------------


def calibration_names() -> list[str]:
    """Campaigns with published numbers shipped in dvfslab/data/calibration/: every name with
    at least one of the tables' files."""
    directory = resources.files("dvfslab") / "data" / "calibration"
    if not directory.is_dir():
        return []
    # Longest suffix first: the perf-per-watt table's file also ends in "-ratios.csv".
    suffixes = sorted((f"-{f}.csv" for f in CALIBRATION_FILES.values()), key=len, reverse=True)
    names = set()
    for entry in directory.iterdir():
        suffix = next((x for x in suffixes if entry.name.endswith(x)), None)
        if suffix is not None:
            names.add(entry.name[: -len(suffix)])
    return sorted(names)


def _read_csv(name: str, table: TableName) -> list[dict[str, str]]:
    file = f"{name}-{CALIBRATION_FILES[table]}.csv"
    path = resources.files("dvfslab") / "data" / "calibration" / file
    if not path.is_file():
        return []
    return list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))))


def _spread(row: dict[str, str], file: str) -> float | None:
    """A row's `spread_pct` (the published ± in % of the value); None when absent or empty."""
    text = (row.get("spread_pct") or "").strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        raise ConfigError(f"{file}: spread_pct: expected a number, got {text!r}") from None
    if not (math.isfinite(value) and value >= 0):
        raise ConfigError(f"{file}: spread_pct: expected a number >= 0, got {text!r}")
    return value


def _combined(a: float | None, b: float | None) -> float | None:
    """Two relative spreads combined in quadrature (a ratio's noise from its two values'); the
    one known when only one is."""
    if a is None:
        return b
    if b is None:
        return a
    return math.hypot(a, b)


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
                spread_pct=_spread(row, f"{name}-ratios.csv"),
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
                spread_pct=_spread(row, f"{name}-perf-per-watt-ratios.csv"),
            )
        )
    cells += _per_parameter_cells(name, "detail")
    cells += _per_parameter_cells(name, "energy")
    return cells


def _per_parameter_cells(name: str, table: TableName) -> list[Cell]:
    """The detail or energy table's cells: each value with its ratio to the baseline's value at
    the same machine, benchmark and parameter, and that ratio's spread."""
    rows = _read_csv(name, table)
    file = f"{name}-{CALIBRATION_FILES[table]}.csv"
    baseline = _baseline_in(rows)
    base_rows = {
        (r["machine"], r["benchmark"], r["param"]): r for r in rows if r["config"] == baseline
    }
    cells = []
    for row in rows:
        param = "" if row["param"] in ("none", "-") else row["param"]
        base_row = base_rows.get((row["machine"], row["benchmark"], row["param"]))
        base = float(base_row["value"]) if base_row is not None else None
        value = float(row["value"])
        quantity = ""
        if table == "energy":
            quantity = row["quantity"]
            if quantity not in ENERGY_QUANTITIES:
                known = ", ".join(ENERGY_QUANTITIES)
                raise ConfigError(f"{file}: quantity: expected one of {known}, got {quantity!r}")
        spread = _spread(row, file)
        is_reference = row["config"] == baseline
        cells.append(
            Cell(
                table,
                row["machine"],
                row["benchmark"],
                param,
                row["config"],
                value,
                better="lower" if table == "energy" else row["better"],
                unit=row["unit"],
                published_ratio=value / base if base else None,
                spread_pct=(
                    None
                    if is_reference or base_row is None
                    else _combined(spread, _spread(base_row, file))
                ),
                reference=is_reference,
                quantity=quantity,
            )
        )
    return cells


def _baseline_in(rows: list[dict[str, str]]) -> str:
    """A detail or energy table's baseline: the configuration listed first."""
    return rows[0]["config"] if rows else ""


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
        if cell.table in PER_PARAMETER:
            row = detail.get((cell.machine, cell.benchmark, cell.param, cell.config))
            if row is None:
                out.append(cell)
                continue
            column = ENERGY_QUANTITIES[cell.quantity] if cell.table == "energy" else "mean"
            base = detail.get((cell.machine, cell.benchmark, cell.param, report.baseline))
            sim_ratio = float(row[column]) / float(base[column]) if base else None
            out.append(
                dataclasses.replace(cell, simulated=float(row[column]), simulated_ratio=sim_ratio)
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
                simulated_verdict=str(srow["model_verdict"]) if is_ratio else None,
            )
        )
    return out


def validate_report(
    name: str,
    report: Report,
    benchmarks: Collection[str] | None = None,
    platforms: Collection[str] | None = None,
    discrepancy: Discrepancy | None = None,
) -> dict[str, Any]:
    """The validation of campaign `name`'s published cells against `report`, as JSON-ready data;
    only the cells of `benchmarks` on `platforms` when given (a partial validation). With
    `discrepancy`, the ratio cells' intervals are widened by it, each estimated without the
    cell's own machine of this publication, and the JSON gains the `discrepancy` scores."""
    cells = [
        c
        for c in published_cells(name)
        if (benchmarks is None or c.benchmark in benchmarks)
        and (platforms is None or c.machine in platforms)
    ]
    cells = fill_simulated(cells, report)
    extra: dict[str, Any] = {}
    if discrepancy is not None:
        extra["discrepancy"] = discrepancy.scores(cells)
        cells = discrepancy.widen(cells)
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
        **extra,
        "cells": [c.to_dict() for c in cells],
    }
