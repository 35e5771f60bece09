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
from dvfslab.validate.cells import Cell, TableName, scores

if TYPE_CHECKING:
    from dvfslab.report.build import Report

VALIDATE_SCHEMA = "dvfslab-validate/2"
"""The schema of `validate_report`'s result (`dvfslab validate --json`)."""

CALIBRATION_FILES: dict[TableName, str] = {
    "ratios": "ratios",
    "power": "power-watts",
    "perf-per-watt": "perf-per-watt-ratios",
    "detail": "detail",
}
"""Each table's file, dvfslab/data/calibration/<campaign>-<name>.csv."""


# -- published cells -----------------------------------------------------------------------------


def calibration_names() -> list[str]:
    """Campaigns with published numbers shipped in dvfslab/data/calibration/."""
    directory = resources.files("dvfslab") / "data" / "calibration"
    if not directory.is_dir():
        return []
    # A campaign is named by its ratios table; the perf-per-watt table also ends in "-ratios".
    ratios = f"-{CALIBRATION_FILES['ratios']}.csv"
    ppw = f"-{CALIBRATION_FILES['perf-per-watt']}.csv"
    return sorted(
        e.name[: -len(ratios)]
        for e in directory.iterdir()
        if e.name.endswith(ratios) and not e.name.endswith(ppw)
    )


def _read_csv(name: str, table: TableName) -> list[dict[str, str]]:
    file = f"{name}-{CALIBRATION_FILES[table]}.csv"
    path = resources.files("dvfslab") / "data" / "calibration" / file
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
