"""What the commands that run a campaign share (`compare`, `campaign run`, `validate`, `run
--variants`): their options, the benchmark's name and the store of an ad-hoc campaign, and the
line that says what ran."""

from __future__ import annotations

import argparse
import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from dvfslab._core import ConfigError
from dvfslab.api import TRACE_PREFIX
from dvfslab.campaign import RunSummary
from dvfslab.report.printing import fmt_seconds


def benchmark_name(workload: str) -> str:
    """The benchmark's name in compare's tables: an rt-app file's or a trace's stem, or the
    spec's name."""
    if workload.startswith(TRACE_PREFIX):
        return Path(workload[len(TRACE_PREFIX) :]).stem
    if workload.lower().endswith(".json") or any(s in workload for s in (os.sep, os.altsep) if s):
        return Path(workload).stem
    return workload.split(":")[0]


@contextlib.contextmanager
def results_dir(out: str | None) -> Iterator[Path]:
    if out is not None:
        yield Path(out)
        return
    with tempfile.TemporaryDirectory(prefix="dvfslab-compare-") as tmp:
        yield Path(tmp)


def print_summary(summary: RunSummary, keep: bool) -> None:
    where = f" in {summary.out_dir}" if keep else ""
    workers = "worker" if summary.workers == 1 else "workers"
    if summary.backend == "ray":
        workers = "Ray CPUs"
    ran = (
        f"{summary.executed} run on {summary.workers} {workers}"
        if summary.executed
        else ("nothing to run")
    )
    print(
        f"{summary.campaign}: {summary.total} runs{where}: {summary.cached} already stored, "
        f"{ran}, {fmt_seconds(summary.wall_time_s)}"
    )


def add_nominal(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--nominal",
        action="store_true",
        help="simulate the fixed model in every iteration, instead of one model variant each "
        "(the model's uncertain constants drawn over their declared ranges)",
    )


def add_no_discrepancy(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--no-discrepancy",
        action="store_true",
        help="the model's intervals and verdicts alone, not widened by the model discrepancy "
        "of the benchmark's class (docs/validation.md)",
    )


def add_jobs(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-j",
        "--jobs",
        type=int,
        metavar="N",
        help="worker processes (default: one per CPU)",
    )


def add_force(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--force",
        action="store_true",
        help="use --out DIR even if another campaign's results are there (its manifest is "
        "replaced; runs with the same inputs are reused)",
    )


def add_part(parser: argparse.ArgumentParser, verb: str) -> None:
    """--benchmark and --platform: a part of the campaign (`Campaign.restricted`)."""
    parser.add_argument(
        "--benchmark",
        action="append",
        metavar="NAME",
        help=f"{verb} this benchmark (repeatable; default: all of the campaign's)",
    )
    parser.add_argument(
        "--platform",
        action="append",
        metavar="ID",
        help=f"{verb} this platform (repeatable; default: all of the campaign's)",
    )


def check_jobs(jobs: int | None) -> None:
    if jobs is not None and jobs < 1:
        raise ConfigError(f"--jobs must be >= 1 (got {jobs})")
