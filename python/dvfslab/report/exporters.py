"""Exporters render a report, one per format, all with `write(report, out)`:

    text      MMTests compare-kernels tables (rich on a terminal, aligned plain text otherwise)
    markdown  the same tables as pipe tables
    csv       the summary (or, with table="detail", the detail) as one flat table
    json      {"schema": "dvfslab-report/2", "summary": [...], "detail": [...]}

`export(report, "markdown", out)` picks one by name; `REPORT_FORMATS` are the names, in order.
"""

from __future__ import annotations

import csv
import io
import math
import sys
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Protocol, TextIO

from dvfslab._core import ConfigError
from dvfslab.report.build import DETAIL_COLUMNS, SUMMARY_COLUMNS, Report
from dvfslab.report.printing import print_markdown_table, print_table
from dvfslab.report.tables import Layout, Table, detail_tables, summary_tables


class Exporter(Protocol):
    """Renders a report in one format."""

    def write(self, report: Report, out: TextIO) -> None: ...


@dataclass(frozen=True)
class TextExporter:
    """Summary tables, then detail tables: rich on a terminal, aligned plain text otherwise."""

    layout: Layout = "mmtests"
    show_ci: bool = True

    def write(self, report: Report, out: TextIO) -> None:
        if report.runs is not None and not report.runs.complete:
            print(f"{report.runs.describe()}\n", file=out)
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
        if report.runs is not None and not report.runs.complete:
            print(f"**{report.runs.describe()}**\n", file=out)
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
        "summary": SUMMARY_COLUMNS,
        "detail": DETAIL_COLUMNS,
    }

    def write(self, report: Report, out: TextIO) -> None:
        if self.table not in self.columns:
            tables = " or ".join(repr(t) for t in self.columns)
            raise ConfigError(f"csv table must be {tables} (got {self.table!r})")
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

REPORT_FORMATS: tuple[str, ...] = tuple(EXPORTERS)
"""The formats `export` takes (`dvfslab campaign report --format`), from the registry."""


def export(report: Report, fmt: str = "text", out: TextIO | None = None, **options: Any) -> None:
    """Write `report` to `out` (stdout) in format `fmt`; options go to the exporter."""
    exporter = EXPORTERS.get(fmt)
    if exporter is None:
        raise ConfigError(f"report format must be one of {', '.join(REPORT_FORMATS)} (got {fmt!r})")
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
