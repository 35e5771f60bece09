"""Terminal output for the CLI: tables drawn by rich on a terminal, aligned plain text otherwise.

Plain text is what pipes, files and tests see: columns separated by two spaces, no colour.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Collection, Sequence
from typing import TextIO


def print_table(
    headers: Sequence[str],
    rows: Sequence[Sequence[object]],
    *,
    right: Collection[str] = (),
    title: str | None = None,
    out: TextIO | None = None,
    no_wrap: bool = False,
) -> None:
    """Print rows under headers; the columns named in `right` are right-aligned (numbers).

    no_wrap keeps every cell on one line on a terminal too (wide tables such as MMTests
    comparisons): the terminal then wraps long lines, as it does plain text.
    """
    out = out or sys.stdout
    cells = [[str(cell) for cell in row] for row in rows]
    aligned_right = [header in right for header in headers]
    if out.isatty():
        _print_rich_table(headers, cells, aligned_right, title, out, no_wrap)
    else:
        _print_plain_table(headers, cells, aligned_right, title, out)


def print_markdown_table(
    headers: Sequence[str],
    rows: Sequence[Sequence[object]],
    *,
    right: Collection[str] = (),
    title: str | None = None,
    level: int = 3,
    out: TextIO | None = None,
) -> None:
    """Print rows as a GitHub pipe table, under a heading of `level` when titled; the columns
    named in `right` are right-aligned."""
    out = out or sys.stdout
    if title:
        print(f"{'#' * level} {_md_escape(title)}\n", file=out)
    print("| " + " | ".join(_md_escape(h) for h in headers) + " |", file=out)
    print("|" + "|".join("---:" if h in right else "---" for h in headers) + "|", file=out)
    for row in rows:
        print("| " + " | ".join(_md_escape(str(cell)) for cell in row) + " |", file=out)


def print_fields(fields: Sequence[tuple[str, object]], *, out: TextIO | None = None) -> None:
    """Print `name  value` lines with the values aligned."""
    out = out or sys.stdout
    width = max((len(name) for name, _ in fields), default=0)
    for name, value in fields:
        print(f"{name:<{width}}  {value}".rstrip(), file=out)


def fmt_number(x: float, digits: int = 4) -> str:
    """x to about `digits` significant digits, with thousands separators, never in e-notation.

    12345.6 -> "12,346", 2.4242 -> "2.424", 0.024 -> "0.024", 100.0 -> "100".
    """
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(x))))
    text = f"{x:,.{decimals}f}"
    return text.rstrip("0").rstrip(".") if decimals else text


def fmt_seconds(seconds: float) -> str:
    """A duration in the unit that reads best: "1.234 s", "12.5 ms", "54.4 us"."""
    for scale, unit in ((1.0, "s"), (1e-3, "ms")):
        if abs(seconds) >= scale:
            return f"{fmt_number(seconds / scale)} {unit}"
    return f"{fmt_number(seconds * 1e6)} us"


def _print_plain_table(
    headers: Sequence[str],
    cells: list[list[str]],
    aligned_right: list[bool],
    title: str | None,
    out: TextIO,
) -> None:
    widths = [
        max([len(header)] + [len(row[i]) for row in cells]) for i, header in enumerate(headers)
    ]
    if title:
        print(title, file=out)
    for row in [list(headers), *cells]:
        padded = [
            cell.rjust(width) if is_right else cell.ljust(width)
            for cell, width, is_right in zip(row, widths, aligned_right)
        ]
        print("  ".join(padded).rstrip(), file=out)


def _print_rich_table(
    headers: Sequence[str],
    cells: list[list[str]],
    aligned_right: list[bool],
    title: str | None,
    out: TextIO,
    no_wrap: bool = False,
) -> None:
    from rich import box
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    # Text(...) everywhere: descriptions may hold [brackets] that rich would read as markup.
    table = Table(
        title=Text(title) if title else None,
        title_justify="left",
        box=box.SIMPLE_HEAD,
        header_style="bold",
    )
    for header, is_right in zip(headers, aligned_right):
        table.add_column(Text(header), justify="right" if is_right else "left", no_wrap=no_wrap)
    for row in cells:
        table.add_row(*(Text(cell) for cell in row))
    console = Console(file=out, highlight=False)
    if no_wrap:
        # as wide as the table needs: rich would otherwise fold or cut cells to the terminal
        console.width = max(console.width, Console(width=10_000).measure(table).maximum)
    console.print(table)


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|")
