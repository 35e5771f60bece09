"""The `dvfslab` command: its parser, built from one module per command group, and `main`.

Each subcommand prints a short human view, or with --json exactly the documented JSON. A user
mistake prints one `error: <message>` line on stderr and exits 1, without a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Callable

from dvfslab import __version__
from dvfslab._core import DvfsError
from dvfslab.cli import (
    bench,
    campaign,
    compare,
    listings,
    model,
    record,
    replay,
    run,
    trace,
    tune,
    validate,
)
from dvfslab.cli.parser import SPEC_HELP, Parser, UsageError

COMMAND_GROUPS = (
    listings,
    run,
    compare,
    campaign,
    validate,
    model,
    bench,
    record,
    trace,
    replay,
    tune,
)
"""The modules whose `register` adds their commands, in the order `dvfslab --help` lists them."""

EXIT_ERROR = 1
EXIT_INTERRUPTED = 130


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status (0 ok, 1 error, 130 interrupted)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        handler: Callable[[argparse.Namespace], int] = args.handler
        return handler(args)
    except UsageError as e:
        return _fail(str(e))
    except BrokenPipeError:
        return _fail_quietly_on_closed_stdout()
    except (DvfsError, OSError) as e:
        return _fail(_describe_error(e))
    except KeyboardInterrupt:
        _fail("interrupted")
        return EXIT_INTERRUPTED


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="dvfslab",
        description="Simulate how Linux picks CPU frequencies, and what those choices cost.",
        epilog="examples:\n"
        "  dvfslab platforms\n"
        "  dvfslab run -p skylake-e3-1240v5 -g performance -w cpu-bound:threads=2 "
        "--duration 1\n"
        "  dvfslab run --help\n\n" + SPEC_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"dvfslab {__version__}")
    commands = parser.add_subparsers(
        title="commands", dest="command", metavar="COMMAND", required=True
    )
    for group in COMMAND_GROUPS:
        group.register(commands)
    return parser


def _describe_error(e: BaseException) -> str:
    if isinstance(e, OSError) and e.filename is not None and e.strerror:
        return f"{e.filename}: {e.strerror}"
    return str(e)


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return EXIT_ERROR


def _fail_quietly_on_closed_stdout() -> int:
    """The reader went away (`dvfslab ... | head`): stop, and let nothing flush into the pipe."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return EXIT_ERROR
