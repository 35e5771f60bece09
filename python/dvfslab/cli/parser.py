"""The pieces of the `dvfslab` parser every command uses: a subcommand with its examples, the
--json flag, and argparse's mistakes as one `error:` line."""

from __future__ import annotations

import argparse
from typing import Any, Callable, NoReturn

SPEC_HELP = """\
A governor or workload is a spec string, name:key=value,key=value, whose keys are the
governor's sysfs tunables or the benchmark's own knobs (see `dvfslab governors`, `workloads`).
"""


class UsageError(Exception):
    """A command-line mistake that argparse found."""


class Parser(argparse.ArgumentParser):
    """argparse that hands its mistakes to `main`: one `error:` line and exit status 1."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see '{self.prog} --help')")


def command(
    commands: Any,
    name: str,
    summary: str,
    handler: Callable[[argparse.Namespace], int],
    examples: str,
) -> argparse.ArgumentParser:
    """Add the subcommand `name` to `commands` (an argparse subparsers action): `summary` in
    the list of commands, `examples` under its --help, `handler` run with the parsed args."""
    parser: argparse.ArgumentParser = commands.add_parser(
        name,
        help=summary,
        description=summary,
        epilog="examples:\n" + examples,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.set_defaults(handler=handler)
    return parser


def add_json_flag(parser: argparse.ArgumentParser, text: str = "print JSON") -> None:
    parser.add_argument("--json", action="store_true", help=text)


def add_tsc_flag(parser: argparse.ArgumentParser) -> None:
    """`--tsc-khz`: the rate of a recording's raw-count clock (trace_clock x86-tsc)."""
    parser.add_argument(
        "--tsc-khz",
        type=float,
        metavar="KHZ",
        help="the TSC's rate in kHz, for a recording whose timestamps are raw cycle counts "
        "(trace_clock=x86-tsc); a '# tsc_khz=N' line at the top of the trace says it too",
    )
