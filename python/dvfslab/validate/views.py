"""A validation (`validate_report`'s result) as text tables or Markdown: the scores, then per
table and machine the published and simulated cells."""

from __future__ import annotations

import math
import sys
from typing import Any, TextIO

from dvfslab.report.printing import print_markdown_table, print_table
from dvfslab.validate.cells import PER_PARAMETER, TABLES, TableName

# -- text view -----------------------------------------------------------------------------------

SCORE_ROWS: tuple[tuple[str, TableName, str], ...] = (
    ("direction_agreement", "ratios", "ratio cells with the published direction"),
    ("median_abs_ln_error", "ratios", "median |ln(simulated / published)| over ratio cells"),
    ("power_within_25pct", "power", "power cells within +-25%"),
    ("power_median_abs_ln_error", "power", "median |ln(simulated / published)| over power cells"),
    ("ppw_direction_agreement", "perf-per-watt", "perf-per-watt cells with the direction"),
    ("detail_direction_agreement", "detail", "detail cells with the per-parameter direction"),
    ("energy_direction_agreement", "energy", "energy cells with the per-parameter direction"),
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
        "neutral); agree = same direction (neutral within +-2%); the 90% interval is the "
        "iterations' widened by the model discrepancy (its ln half-width, and class); verdict "
        "= what the interval says (? = uncertain)",
        "power": "average package power [W]; agree = within +-25%",
        "perf-per-watt": "performance-per-watt ratio to the baseline; agree = same direction",
        "detail": "per-parameter values (a timed workload run shorter than published compares "
        "by its ratio to the baseline); agree = same direction of that ratio",
        "energy": "per-parameter energy or average power, compared by its ratio to the "
        "baseline's; agree = same direction of that ratio",
    }
    for table in TABLES:
        rows = []
        per_param = table in PER_PARAMETER
        for c in (c for c in cells if c["table"] == table):
            row: list[object] = [
                c["machine"],
                c["benchmark"],
                *([c["param"] or "-"] if per_param else []),
                c["config"],
                _published_text(c, c["published"]),
                fmt_value(c["simulated"]),
            ]
            if per_param:
                row += [
                    _published_text(c, c["published_ratio"], ratio=True),
                    fmt_value(c["simulated_ratio"]),
                ]
            if table == "ratios":
                row.append(_interval_text(c.get("predicted_ci", c["simulated_ci"])))
                term = c.get("discrepancy")
                row.append(_discrepancy_text(term))
                row.append(c.get("predicted_verdict", c["simulated_verdict"]) or "-")
            row.append({True: "yes", False: "NO", None: "-"}[c["agree"]])
            rows.append(row)
        if not rows:
            continue
        headers = ["machine", "benchmark"]
        headers += ["param"] if per_param else []
        headers += ["config", "published", "simulated"]
        headers += ["pub ratio", "sim ratio"] if per_param else []
        headers += ["sim 90% interval", "discrepancy", "verdict"] if table == "ratios" else []
        headers += ["agree"]
        numeric = {
            "published",
            "simulated",
            "pub ratio",
            "sim ratio",
            "sim 90% interval",
            "discrepancy",
            "agree",
        }
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
            f"{published[table]} cells judged)"
        )
    noise = result.get("noise_neutral") or {}
    if any(noise.values()):
        counts = ", ".join(f"{n} {table}" for table, n in noise.items() if n)
        print(f"  published ratios neutral within their own noise (≈ above): {counts}")
    _print_discrepancy(result.get("discrepancy"))
    cross = result.get("cross_validated")
    if cross is not None:
        print("cross-validated: each machine scored with the fitted constants refitted without it")
        for key, _, what in SCORE_ROWS:
            print(f"  {key:30s} {fmt_value(cross[key], 3):>7s}  {what}")
        _print_discrepancy(cross.get("discrepancy"))


INTERVAL_KEYS = ("coverage", "called_share", "confident_direction_agreement", "median_ci_halfwidth")
"""The scores of the intervals, shown again for the model's interval alone and with the
benchmark's model left out of the discrepancy."""


def _print_discrepancy(scores: dict[str, Any] | None) -> None:
    if not scores:
        return
    classes = ", ".join(
        f"{name} {fmt_value(c['halfwidth_ln'], 3)} ({c['cells']} cells)"
        for name, c in scores["classes"].items()
    )
    print(f"  model discrepancy (ln half-width over all residuals): {classes}")
    for key, what in (
        ("model_interval", "the model's interval alone"),
        ("benchmark_held_out", "the discrepancy without the benchmark's own model"),
    ):
        values = ", ".join(f"{k} {fmt_value(scores[key][k], 3)}" for k in INTERVAL_KEYS)
        print(f"  {what}: {values}")


def _interval_text(ci: list[float | None] | None) -> str:
    """An interval as "low-high"; "unbounded" when the discrepancy's pool was too small to
    bound it (its high end is null in the JSON)."""
    if not ci:
        return "-"
    if ci[1] is None:
        return "unbounded"
    return f"{fmt_value(ci[0], 3)}-{fmt_value(ci[1], 3)}"


def _discrepancy_text(term: dict[str, Any] | None) -> str:
    if not term:
        return "-"
    return f"{fmt_value(term['halfwidth_ln'], 3)} {term['class']}"


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
        ["score", *values, "cells judged"],
        rows,
        right={*values, "cells judged"},
        title=f"{result['campaign']}: scores",
        out=out,
    )
    noise = result.get("noise_neutral") or {}
    if any(noise.values()):
        counts = ", ".join(f"{n} {table}" for table, n in noise.items() if n)
        print(
            f"\nPublished ratios within their own noise of 1.0, scored neutral (≈): {counts}.",
            file=out,
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
        for table in PER_PARAMETER:
            in_table = [c for c in mine if c["table"] == table]
            for benchmark in dict.fromkeys(c["benchmark"] for c in in_table):
                part = [c for c in in_table if c["benchmark"] == benchmark]
                what = "" if table == "detail" else f"{part[0].get('quantity', table)}, "
                title = (
                    f"{machine} {benchmark}: {what}{part[0]['config']} in {part[0]['unit']}, "
                    "the others'"
                )
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
    text = f"{_published_text(cell, published, ratio=as_ratio)} → {fmt_value(simulated)}"
    if cell["agree"] is False:
        text += " ✗"
    if cell.get("predicted_verdict", cell.get("simulated_verdict")) == "uncertain":
        text += " ?"
    return text


def _published_text(cell: dict[str, Any], value: float | None, ratio: bool = False) -> str:
    """A published number, marked `~` where the publication printed it neutral and `≈` where it
    is neutral within its own noise (ratio cells, and the ratios of detail and energy cells)."""
    mark = "~" if cell["neutral"] else ""
    if cell.get("noise_neutral") and (ratio or cell["table"] not in PER_PARAMETER):
        mark = "≈"
    return mark + fmt_value(value)


def fmt_value(value: float | None, decimals: int = 2) -> str:
    """A cell's number for the views: `decimals` places, one from 100 up, "-" when missing."""
    if value is None or not math.isfinite(value):
        return "-"
    if abs(value) >= 100:
        return f"{value:.1f}"
    return f"{value:.{decimals}f}"
