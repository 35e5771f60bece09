"""Comparison reports: a campaign's results, every configuration against the baseline, in the
tables kernel engineers read (MMTests compare-kernels, the published ratio tables).

    >>> from dvfslab.campaign import load_results
    >>> from dvfslab.report import build_report, render
    >>> report = build_report(load_results("results/example"), "schedutil")
    >>> print(render(report, "markdown"))

Modules: `build` (the `Report`: summary and detail rows), `stats` (MMTests' statistics),
`tables` (a report laid out as tables), `exporters` (text, markdown, csv, json), `printing`
(tables on a terminal or as Markdown), `html` and `svg` (the self-contained HTML report with
its charts, `dvfslab.report.html.write_html`).
"""

from dvfslab.report.build import RESULT_COLUMNS, Report, RunCounts, build_report
from dvfslab.report.exporters import EXPORTERS, REPORT_FORMATS, export, render
from dvfslab.report.tables import Table, detail_table, detail_tables, summary_tables

__all__ = [
    "EXPORTERS",
    "REPORT_FORMATS",
    "RESULT_COLUMNS",
    "Report",
    "RunCounts",
    "Table",
    "build_report",
    "detail_table",
    "detail_tables",
    "export",
    "render",
    "summary_tables",
]
