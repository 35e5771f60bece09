"""`dvfslab campaign list | run | report`: the shipped campaigns, running one into its results
store, and the report of a store."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from typing import TYPE_CHECKING, Any

from dvfslab._core import ConfigError
from dvfslab.campaign import (
    count_runs,
    list_campaigns,
    load_campaign,
    load_manifest,
    load_results,
    run_campaign,
)
from dvfslab.cli.campaign_runs import (
    add_force,
    add_jobs,
    add_no_discrepancy,
    add_nominal,
    add_part,
    check_jobs,
    print_summary,
)
from dvfslab.cli.parser import command
from dvfslab.report import REPORT_FORMATS, RunCounts, build_report, export, render
from dvfslab.report.discrepancy import report_terms
from dvfslab.report.doc_blocks import write_block
from dvfslab.report.printing import print_table

if TYPE_CHECKING:
    import pandas as pd


def register(commands: Any) -> None:
    p = command(
        commands,
        "campaign",
        "Run a campaign: platforms x configurations x workloads x iterations.",
        _cmd_campaign_help,
        "  dvfslab campaign list\n"
        "  dvfslab campaign run example                 a shipped campaign\n"
        "  dvfslab campaign run mine.toml --out results/mine --jobs 8\n"
        "  dvfslab campaign run mine.toml --ray auto    on a Ray cluster\n"
        "  dvfslab campaign report results/example\n\n"
        "The campaign file format is docs/campaign-format.md.",
    )
    sub = p.add_subparsers(title="commands", dest="campaign_command", metavar="COMMAND")

    ls = command(
        sub,
        "list",
        "List the shipped campaigns.",
        cmd_campaign_list,
        "  dvfslab campaign list\n  dvfslab campaign list --json",
    )
    ls.add_argument("--json", action="store_true", help="print JSON")

    run = command(
        sub,
        "run",
        "Run a campaign; runs already in the results store are reused.",
        cmd_campaign_run,
        "  dvfslab campaign run example\n"
        "  dvfslab campaign run ./mine.toml --out results/mine --jobs 4\n"
        "  dvfslab campaign run ./mine.toml --ray local   a Ray instance started here\n"
        "  dvfslab campaign run ./mine.toml --benchmark tbench --platform pixel6\n\n"
        "Interrupt or kill it at any time: run it again and it runs only what is missing.",
    )
    run.add_argument("campaign", metavar="NAME|FILE.toml", help="a shipped campaign or a file")
    run.add_argument(
        "--out", metavar="DIR", help="the results store (default: results/<campaign name>)"
    )
    add_force(run)
    add_part(run, "run only")
    add_nominal(run)
    add_jobs(run)
    run.add_argument(
        "--ray",
        metavar="ADDRESS",
        help="run on a Ray cluster: 'auto', 'ray://HOST:10001', 'HOST:6379', or 'local' to "
        "start one here",
    )
    run.add_argument("--quiet", action="store_true", help="no progress on stderr")

    report = command(
        sub,
        "report",
        "Compare a campaign's configurations with its baseline, from its results store.",
        cmd_campaign_report,
        "  dvfslab campaign report results/example\n"
        "  dvfslab campaign report results/example --format markdown\n"
        "  dvfslab campaign report results/example --html report.html\n"
        "  dvfslab campaign report results/margins-pixel6 --into docs/campaigns.md\n"
        "      (the Markdown report replaces the lines between `<!-- campaign-report:\n"
        "      margins-pixel6 -->` and `<!-- end campaign-report -->` in the document)",
    )
    report.add_argument("directory", metavar="DIR", help="a results store (campaign run --out)")
    report.add_argument(
        "--format",
        choices=REPORT_FORMATS,
        help=f"{', '.join(REPORT_FORMATS)} (default text; csv is the summary table)",
    )
    report.add_argument("--html", metavar="FILE", help="also write an HTML report with charts")
    add_no_discrepancy(report)
    report.add_argument(
        "--into",
        metavar="DOC.md",
        help="write the Markdown report into DOC.md, between the markers named after the "
        "campaign, instead of printing it",
    )


def _cmd_campaign_help(args: argparse.Namespace) -> int:
    raise ConfigError("campaign needs a command: list, run or report (see 'dvfslab campaign -h')")


def cmd_campaign_list(args: argparse.Namespace) -> int:
    campaigns = list_campaigns()
    if args.json:
        import json

        print(json.dumps(campaigns, indent=2))
        return 0
    print_table(
        ["name", "platforms", "configs", "benchmarks", "runs", "description"],
        [
            (
                c["name"],
                len(c["platforms"]),
                len(c["configs"]),
                len(c["benchmarks"]),
                c["runs"],
                c["description"],
            )
            for c in campaigns
        ],
        right={"platforms", "configs", "benchmarks", "runs"},
    )
    return 0


def cmd_campaign_run(args: argparse.Namespace) -> int:
    check_jobs(args.jobs)
    if args.ray is not None and args.jobs is not None:
        raise ConfigError("--jobs and --ray exclude each other: Ray runs one run per cluster CPU")
    campaign = load_campaign(args.campaign).restricted(args.benchmark, args.platform)
    if args.nominal:
        campaign = dataclasses.replace(campaign, nominal=True)
    summary = run_campaign(
        campaign,
        args.out,
        jobs=args.jobs,
        ray_address=args.ray,
        progress=not args.quiet,
        force=args.force,
    )
    print_summary(summary, keep=True)
    print(f"compare the configurations: dvfslab campaign report {summary.out_dir}")
    return 0


def cmd_campaign_report(args: argparse.Namespace) -> int:
    if args.into is not None and args.format not in (None, "markdown"):
        raise ConfigError(
            f"--into writes the Markdown report; it cannot go with --format {args.format}"
        )
    results = load_results(args.directory)
    if results.empty:
        raise ConfigError(f"{args.directory}: no finished runs yet (dvfslab campaign run ...)")
    baseline = results.attrs.get("baseline")
    if not baseline:
        raise ConfigError(f"{args.directory}: the manifest names no baseline")
    report = dataclasses.replace(
        build_report(results, baseline, **_discrepancy(args)),
        runs=_run_counts(args.directory, results),
    )
    if report.runs is not None and not report.runs.complete:
        print(
            f"warning: {args.directory}: {report.runs.describe()}; "
            "`dvfslab campaign run` again runs the rest",
            file=sys.stderr,
        )
    if args.into is not None:
        name = results.attrs.get("campaign")
        if not name:
            raise ConfigError(f"{args.directory}: the manifest names no campaign")
        path = write_block(args.into, name, render(report, "markdown"))
        print(f"{path}: the {name} report block replaced", file=sys.stderr)
    else:
        export(report, args.format or "text")
    if args.html is not None:
        from dvfslab.report.html import write_html

        title = f"dvfslab campaign {results.attrs.get('campaign') or ''}".strip()
        path = write_html(args.html, report, title=title)
        print(f"\nHTML report written to {path}", file=sys.stderr)
    return 0


def _discrepancy(args: argparse.Namespace) -> dict[str, Any]:
    """build_report's discrepancy arguments: each benchmark's term from its workload in the
    store's manifest; none with --no-discrepancy or without a manifest."""
    if args.no_discrepancy:
        return {}
    try:
        manifest = load_manifest(args.directory)
    except ConfigError:
        return {}
    workloads = {b["name"]: b["workload"] for b in manifest.get("benchmarks") or []}
    terms = report_terms(workloads)
    if terms is None:
        return {}
    return {"discrepancy": terms[0], "discrepancy_source": terms[1]}


def _run_counts(directory: str, results: pd.DataFrame) -> RunCounts | None:
    """The store's finished runs against its campaign's (None without a manifest)."""
    try:
        manifest = load_manifest(directory)
    except ConfigError:
        return None
    expected, incomplete = count_runs(manifest, set(results["run_key"]))
    return RunCounts(len(results), expected, tuple(incomplete))
