"""The `compare` and `campaign` subcommands of the `dvfslab` command (see cli.py).

dvfslab compare -p PLATFORM -g GOV_A -g GOV_B ... -w WORKLOAD [--sweep KNOB=v1,v2,..] [--nominal]
dvfslab campaign list | run NAME|FILE.toml [--nominal] | report DIR
dvfslab validate NAME|FILE.toml [--json] [--iterations N] [--nominal] [--cross-validate]
dvfslab run ... --variants N (cli.py hands it to `run_variants` here)
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from dvfslab._core import ConfigError
from dvfslab._table import fmt_number, fmt_seconds, print_table
from dvfslab.api import TRACE_PREFIX, checked_seed, duration_ns
from dvfslab.campaign import campaign_from_dict, list_campaigns, load_campaign, run_campaign
from dvfslab.report import EXPORTERS as REPORT_EXPORTERS
from dvfslab.store import load_results

if TYPE_CHECKING:
    import pandas as pd

    from dvfslab._runner import RunSummary
    from dvfslab.campaign import Campaign

CommandFactory = Callable[..., argparse.ArgumentParser]
COMPARE_ITERATIONS = 5


# -- compare ---------------------------------------------------------------------------------


def add_compare(commands: Any, command: CommandFactory) -> None:
    p = command(
        commands,
        "compare",
        "Compare governor configurations on one workload: an ad-hoc campaign.",
        cmd_compare,
        "  dvfslab compare -p pixel6 -g schedutil -g performance -w periodic:threads=4\n"
        "  dvfslab compare -p skylake-e3-1240v5 -g schedutil -g schedutil:invariant=0 \\\n"
        "      -w cpu-bound --sweep threads=1,2,4,8 --iterations 5 --duration 2\n"
        "  dvfslab compare ... --out results/mine     keep the runs; run again to reuse them\n\n"
        "The first -g is the baseline. Each (platform, governor, parameter, iteration) is one run\n"
        "with its own seed, and each iteration a model variant (--nominal: the fixed model); the\n"
        "tables show each configuration's mean per parameter and its ratio to the baseline's,\n"
        "then each ratio's 90% interval over the variants and the verdict: improved, regressed,\n"
        "neutral (within +-2%), or uncertain. `dvfslab campaign report DIR` gives the full\n"
        "comparison.",
    )
    p.add_argument(
        "-p",
        "--platform",
        action="append",
        required=True,
        metavar="PLATFORM",
        help="a preset id or preset file; repeat for several platforms",
    )
    p.add_argument(
        "-g",
        "--governor",
        action="append",
        required=True,
        metavar="GOVERNOR",
        help="a governor spec; repeat for each configuration (the first is the baseline)",
    )
    p.add_argument(
        "-w",
        "--workload",
        required=True,
        metavar="WORKLOAD",
        help="a workload spec, or an rt-app JSON file",
    )
    p.add_argument(
        "--sweep",
        action="append",
        default=[],
        metavar="KNOB=V1,V2,..",
        help="run the workload at each value of one of its knobs; repeat for a grid",
    )
    p.add_argument(
        "--iterations",
        type=int,
        default=COMPARE_ITERATIONS,
        metavar="N",
        help=f"runs per configuration and parameter, each with its own seed "
        f"(default {COMPARE_ITERATIONS})",
    )
    p.add_argument(
        "--duration",
        type=float,
        metavar="S",
        help="simulated seconds per run (default: the workload's own duration)",
    )
    p.add_argument(
        "--seed",
        type=int,
        default=0,
        metavar="N",
        help="the seed each run's own seed derives from (default 0)",
    )
    _add_nominal(p)
    p.add_argument(
        "--out",
        metavar="DIR",
        help="keep the results store in DIR (default: a temporary directory, removed)",
    )
    _add_force(p)
    _add_jobs(p)


def cmd_compare(args: argparse.Namespace) -> int:
    duration_ns(args.duration, "--duration")
    checked_seed(args.seed, "--seed")
    if args.iterations < 1:
        raise ConfigError(f"--iterations must be >= 1 (got {args.iterations})")
    _check_jobs(args.jobs)
    for option, values in (("-g", args.governor), ("-p", args.platform)):
        twice = sorted({v for v in values if values.count(v) > 1})
        if twice:
            raise ConfigError(f"{option} {twice[0]} is given twice")
    sweep: dict[str, list[str]] = {}
    for text in args.sweep:
        knob, _, values = text.partition("=")
        if not knob or not values or "" in values.split(","):
            raise ConfigError(f"--sweep expects KNOB=V1,V2,... (got {text!r})")
        if knob in sweep:
            raise ConfigError(f"--sweep {knob} is given twice")
        sweep[knob] = values.split(",")
    benchmark = _benchmark_name(args.workload)
    doc: dict[str, Any] = {
        "name": "compare",
        "platforms": args.platform,
        "configs": {spec: spec for spec in args.governor},
        "baseline": args.governor[0],
        "benchmarks": {benchmark: {"workload": args.workload, "sweep": sweep}},
        "iterations": args.iterations,
        "seed": args.seed,
    }
    if args.duration is not None:
        doc["duration_s"] = args.duration
    if args.nominal:
        doc["nominal"] = True
    campaign = campaign_from_dict(doc, source="dvfslab compare")
    with _results_dir(args.out) as out:
        summary = run_campaign(campaign, out, jobs=args.jobs, force=args.force)
        _print_summary(summary, keep=args.out is not None)
        print()
        results = load_results(out)
        print_means(results, [c.name for c in campaign.configs], campaign.baseline)
        if len(campaign.configs) > 1:
            print()
            print_verdicts(results, campaign.baseline)
    return 0


def _benchmark_name(workload: str) -> str:
    """The benchmark's name in compare's tables: an rt-app file's or a trace's stem, or the
    spec's name."""
    if workload.startswith(TRACE_PREFIX):
        return Path(workload[len(TRACE_PREFIX) :]).stem
    if workload.lower().endswith(".json") or any(s in workload for s in (os.sep, os.altsep) if s):
        return Path(workload).stem
    return workload.split(":")[0]


@contextlib.contextmanager
def _results_dir(out: str | None) -> Iterator[Path]:
    if out is not None:
        yield Path(out)
        return
    with tempfile.TemporaryDirectory(prefix="dvfslab-compare-") as tmp:
        yield Path(tmp)


# -- run --variants --------------------------------------------------------------------------

VARIANT_COLUMNS = (("metric_value", "metric"), ("energy_j", "energy [J]"), ("avg_package_w", "W"))


def run_variants(args: argparse.Namespace) -> int:
    """`dvfslab run --variants N`: one run per model variant, summarised with 90% intervals."""
    import json

    from dvfslab import stats

    if args.variants < 2:
        raise ConfigError(f"--variants must be >= 2 (got {args.variants}): an interval needs two")
    for flag, value in (("--timeline", args.timeline), ("--trace", args.trace)):
        if value is not None:
            raise ConfigError(f"{flag} records one run; it cannot go with --variants")
    if args.explain is not None:
        raise ConfigError("--explain records one run; it cannot go with --variants")
    doc: dict[str, Any] = {
        "name": "run",
        "platforms": [args.platform],
        "configs": {"run": args.governor},
        "baseline": "run",
        "benchmarks": {_benchmark_name(args.workload): {"workload": args.workload}},
        "iterations": args.variants,
        "seed": args.seed,
    }
    if args.duration is not None:
        doc["duration_s"] = args.duration
    campaign = campaign_from_dict(doc, source="dvfslab run --variants")
    quiet = args.json and not sys.stdout.isatty()
    with _results_dir(None) as out:
        run_campaign(campaign, out, progress=not quiet)
        results = load_results(out)
    first = results.iloc[0]
    summary: dict[str, Any] = {
        "platform": str(first["platform"]),
        "governor": args.governor,
        "workload": args.workload,
        "variants": args.variants,
        "metric": {
            "name": str(first["metric_name"]),
            "unit": str(first["metric_unit"]),
            "better": str(first["better"]),
        },
    }
    for column, _ in VARIANT_COLUMNS:
        values = [float(x) for x in results[column]]
        summary[column] = {"mean": stats.amean(values), "interval": _interval(values)}
    summary["runs"] = [
        {"iteration": int(r["iteration"]), "seed": int(r["seed"]), "workload": r["workload"]}
        | {column: float(r[column]) for column, _ in VARIANT_COLUMNS}
        for r in results.to_dict("records")
    ]
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    metric = summary["metric"]
    rows = [
        [
            f"{metric['name']} [{metric['unit']}]" if column == "metric_value" else label,
            fmt_number(summary[column]["mean"]),
            " - ".join(fmt_number(x) for x in summary[column]["interval"]),
        ]
        for column, label in VARIANT_COLUMNS
    ]
    print_table(
        ["quantity", "mean", "90% interval"],
        rows,
        right={"mean", "90% interval"},
        title=f"{summary['platform']}, {args.governor}, {args.workload}: {args.variants} model "
        f"variants ({metric['better']} is better); the interval is where one more variant's "
        "value would lie",
    )
    return 0


def _interval(values: list[float]) -> list[float]:
    """The 90% prediction interval of one more variant's value: on log scale for positive
    quantities (a throughput or an energy cannot go below 0, and spreads by factors)."""
    import math

    from dvfslab import stats

    if all(v > 0 for v in values):
        logs = [math.log(v) for v in values]
        center, half = stats.amean(logs), stats.prediction_halfwidth(logs)
        return [math.exp(center - half), math.exp(center + half)]
    center, half = stats.amean(values), stats.prediction_halfwidth(values)
    return [center - half, center + half]


# -- campaign --------------------------------------------------------------------------------


def add_campaign(commands: Any, command: CommandFactory) -> None:
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
    _add_force(run)
    _add_part(run, "run only")
    _add_nominal(run)
    _add_jobs(run)
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
        "  dvfslab campaign report results/example --html report.html",
    )
    report.add_argument("directory", metavar="DIR", help="a results store (campaign run --out)")
    report.add_argument(
        "--format",
        choices=tuple(REPORT_EXPORTERS),
        default="text",
        help=f"{', '.join(REPORT_EXPORTERS)} (default text; csv is the summary table)",
    )
    report.add_argument("--html", metavar="FILE", help="also write an HTML report with charts")


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
    _check_jobs(args.jobs)
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
    _print_summary(summary, keep=True)
    print(f"compare the configurations: dvfslab campaign report {summary.out_dir}")
    return 0


def cmd_campaign_report(args: argparse.Namespace) -> int:
    from dvfslab.report import build_report, export

    results = load_results(args.directory)
    if results.empty:
        raise ConfigError(f"{args.directory}: no finished runs yet (dvfslab campaign run ...)")
    baseline = results.attrs.get("baseline")
    if not baseline:
        raise ConfigError(f"{args.directory}: the manifest names no baseline")
    report = build_report(results, baseline)
    export(report, args.format)
    if args.html is not None:
        from dvfslab.html_report import write_html

        title = f"dvfslab campaign {results.attrs.get('campaign') or ''}".strip()
        path = write_html(args.html, report, title=title)
        print(f"\nHTML report written to {path}", file=sys.stderr)
    return 0


# -- validate ------------------------------------------------------------------------------


def add_validate(commands: Any, command: CommandFactory) -> None:
    p = command(
        commands,
        "validate",
        "Run a campaign with published measurements and compare every published cell.",
        cmd_validate,
        "  dvfslab validate intel-invariance\n"
        "  dvfslab validate intel-invariance --iterations 1 --json\n"
        "  dvfslab validate intel-invariance --markdown > agreement.md  (tables for a document)\n"
        "  dvfslab validate ./mine.toml --out results/mine  (named after published data)\n"
        "  dvfslab validate intel-invariance --fit-power  (fit the presets' power constants)\n"
        "  dvfslab validate intel-invariance --cross-validate  (leave one machine out)\n"
        "  dvfslab validate intel-invariance --nominal  (the fixed model, no variants)\n"
        "  dvfslab validate intel-invariance --benchmark pgbench-ro --platform skylake-e3-1240v5\n"
        "      (only those cells: a quick check after changing one benchmark model)\n"
        "  dvfslab validate intel-invariance --json > before.json; (change the model);\n"
        "  dvfslab validate intel-invariance --against before.json  (what the change moved)\n\n"
        "Runs already in the results store (default results/<campaign name>) are reused. The\n"
        "published numbers ship in dvfslab/data/calibration/; docs/validation.md explains the\n"
        "scores.",
    )
    p.add_argument("campaign", metavar="NAME|FILE.toml", help="a shipped campaign or a file")
    view = p.add_mutually_exclusive_group()
    view.add_argument("--json", action="store_true", help="print the comparison as JSON")
    view.add_argument(
        "--markdown",
        action="store_true",
        help="print the scores and per machine the published and simulated cells as Markdown "
        "tables",
    )
    p.add_argument(
        "--iterations",
        type=int,
        metavar="N",
        help="runs per (platform, config, benchmark, parameter) instead of the campaign's",
    )
    p.add_argument(
        "--out", metavar="DIR", help="the results store (default: results/<campaign name>)"
    )
    _add_force(p)
    p.add_argument(
        "--against",
        metavar="FILE.json",
        help="also compare with an earlier `validate --json` output of the same campaign: every "
        "score before and after, and the cells whose verdict changed or whose value moved by "
        "more than 2%%",
    )
    p.add_argument(
        "--fit-power",
        action="store_true",
        help="also fit each platform's package-power constants to the published watts",
    )
    p.add_argument(
        "--cross-validate",
        action="store_true",
        help="also score each machine with the constants fitted on the campaign refitted "
        "without it (the campaign's [cross_validate] table; leave one machine out)",
    )
    _add_part(p, "run and score only")
    _add_nominal(p)
    _add_jobs(p)
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")


def cmd_validate(args: argparse.Namespace) -> int:
    import json

    from dvfslab.power_fit import fit_power, print_fits
    from dvfslab.report import build_report
    from dvfslab.validate import (
        print_validation,
        print_validation_markdown,
        published_cells,
        published_power,
        validate_report,
    )
    from dvfslab.validate_diff import (
        compare,
        load_validation,
        print_comparison,
        print_comparison_markdown,
    )

    _check_jobs(args.jobs)
    campaign = load_campaign(args.campaign).restricted(args.benchmark, args.platform)
    published_cells(campaign.name)  # fail before running when nothing is published
    earlier = load_validation(args.against, campaign.name) if args.against else None
    if args.iterations is not None:
        if args.iterations < 1:
            raise ConfigError(f"--iterations must be >= 1 (got {args.iterations})")
        campaign = dataclasses.replace(
            campaign,
            iterations=args.iterations,
            benchmarks=tuple(dataclasses.replace(b, iterations=None) for b in campaign.benchmarks),
        )
    if args.nominal:
        campaign = dataclasses.replace(campaign, nominal=True)
    summary = run_campaign(
        campaign, args.out, jobs=args.jobs, progress=not args.quiet, force=args.force
    )
    results = load_results(summary.out_dir)
    if results.empty:
        raise ConfigError(f"{summary.out_dir}: no finished runs")
    result = validate_report(
        campaign.name,
        build_report(results, campaign.baseline),
        benchmarks=args.benchmark,
        platforms=args.platform,
    )
    fits = fit_power(results, published_power(campaign.name)) if args.fit_power else None
    if fits is not None:
        result["power_fit"] = [f.to_dict() for f in fits]
    if args.cross_validate:
        from dvfslab.cross_validate import cross_validate

        def run_fold(fold: Campaign, store: Path) -> None:
            run_campaign(fold, store, jobs=args.jobs, progress=not args.quiet, force=args.force)

        where = summary.out_dir.with_name(f"{summary.out_dir.name}.cross-validate")
        result["cross_validated"] = cross_validate(campaign, where, run_fold)
    diff = compare(earlier, result, args.against) if earlier is not None else None
    if args.json:
        print(json.dumps(result | ({"against": diff} if diff is not None else {}), indent=2))
    elif args.markdown:
        print_validation_markdown(result)
        if diff is not None:
            print_comparison_markdown(diff)
    else:
        _print_summary(summary, keep=True)
        print()
        print_validation(result)
        if fits is not None:
            print("\nPackage-power constants fitted to the published watts (docs/validation.md):")
            print_fits(fits)
        if diff is not None:
            print()
            print_comparison(diff)
    return 0


# -- views -----------------------------------------------------------------------------------


def print_means(results: pd.DataFrame, configs: list[str], baseline: str) -> None:
    """Per platform and benchmark: each config's mean metric and power per parameter, with the
    metric's ratio to the baseline's mean."""
    if results.empty:
        print("no finished runs")
        return
    first = True
    for (platform, benchmark), runs in results.groupby(["platform", "benchmark"], sort=False):
        present = [c for c in configs if c in set(runs["config"])]
        metric = runs.iloc[0]
        iterations = runs.groupby(["config", "param"])["iteration"].count()
        n = f"{iterations.min()}" if iterations.min() == iterations.max() else "varying"
        means = runs.groupby(["param", "config"], sort=False)[["metric_value", "avg_package_w"]]
        table = means.mean()
        params = list(dict.fromkeys(runs["param"]))
        rows = []
        for param in params:
            row: list[object] = [param or "-"]
            base = table.loc[(param, baseline), "metric_value"] if baseline in present else None
            for config in present:
                value, watts = table.loc[(param, config)]
                cell = fmt_number(value)
                if base and config != baseline:
                    cell += f" ({value / base:.2f})"
                row.append(cell)
                row.append(fmt_number(watts, 3))
            rows.append(row)
        headers = ["param"]
        for config in present:
            headers += [config, "W"]
        if not first:
            print()
        first = False
        print_table(
            headers,
            rows,
            right=set(headers[1:]),
            title=(
                f"{platform}, {benchmark}: {metric['metric_name']} [{metric['metric_unit']}], "
                f"{metric['better']} is better; mean of {n} iterations "
                f"(ratio to {baseline}); W = average package power"
            ),
        )


def print_verdicts(results: pd.DataFrame, baseline: str) -> None:
    """Per platform, each configuration's ratio to the baseline with its 90% interval over the
    iterations and its verdict."""
    from dvfslab.report import build_report

    report = build_report(results, baseline)
    rows = [
        [
            r["platform"],
            r["benchmark"],
            r["config"],
            fmt_number(r["perf_ratio"], 3),
            f"{fmt_number(r['perf_ratio_ci_low'], 3)} - {fmt_number(r['perf_ratio_ci_high'], 3)}",
            r["verdict"],
        ]
        for r in report.summary.to_dict("records")
        if r["config"] != baseline
    ]
    print_table(
        ["platform", "benchmark", "config", "ratio", "90% interval", "verdict"],
        rows,
        right={"ratio", "90% interval"},
        title=f"ratio to {baseline} (gmean over parameters), its 90% interval over the "
        "iterations, and what it says (neutral: within +-2%; uncertain: the interval straddles "
        "an edge)",
    )


def _print_summary(summary: RunSummary, keep: bool) -> None:
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


def _add_nominal(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--nominal",
        action="store_true",
        help="simulate the fixed model in every iteration, instead of one model variant each "
        "(the model's uncertain constants drawn over their declared ranges)",
    )


def _add_jobs(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-j",
        "--jobs",
        type=int,
        metavar="N",
        help="worker processes (default: one per CPU)",
    )


def _add_force(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--force",
        action="store_true",
        help="use --out DIR even if another campaign's results are there (its manifest is "
        "replaced; runs with the same inputs are reused)",
    )


def _add_part(parser: argparse.ArgumentParser, verb: str) -> None:
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


def _check_jobs(jobs: int | None) -> None:
    if jobs is not None and jobs < 1:
        raise ConfigError(f"--jobs must be >= 1 (got {jobs})")
