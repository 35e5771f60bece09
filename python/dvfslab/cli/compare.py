"""`dvfslab compare`: governor configurations on one workload, an ad-hoc campaign, with each
configuration's mean per parameter and its verdict against the baseline."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from dvfslab._core import ConfigError
from dvfslab.api import checked_seed, duration_ns
from dvfslab.campaign import campaign_from_dict, load_results, run_campaign
from dvfslab.cli.campaign_runs import (
    add_force,
    add_jobs,
    add_no_discrepancy,
    add_nominal,
    benchmark_name,
    check_jobs,
    print_summary,
    results_dir,
)
from dvfslab.cli.parser import command
from dvfslab.report import build_report
from dvfslab.report.discrepancy import report_terms
from dvfslab.report.printing import fmt_number, print_table

if TYPE_CHECKING:
    from collections.abc import Mapping

    import pandas as pd

    from dvfslab.report.discrepancy import Term


COMPARE_ITERATIONS = 5


def register(commands: Any) -> None:
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
        "then each ratio's 90% interval over the variants, widened by the model discrepancy of\n"
        "the workload's class (how far the model misses published ratios; --no-discrepancy: the\n"
        "variants' interval alone), and the verdict: improved, regressed, neutral (within\n"
        "+-2%), or uncertain. `dvfslab campaign report DIR` gives the full comparison.",
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
    add_nominal(p)
    add_no_discrepancy(p)
    p.add_argument(
        "--out",
        metavar="DIR",
        help="keep the results store in DIR (default: a temporary directory, removed)",
    )
    add_force(p)
    add_jobs(p)


def cmd_compare(args: argparse.Namespace) -> int:
    duration_ns(args.duration, "--duration")
    checked_seed(args.seed, "--seed")
    if args.iterations < 1:
        raise ConfigError(f"--iterations must be >= 1 (got {args.iterations})")
    check_jobs(args.jobs)
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
    benchmark = benchmark_name(args.workload)
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
    with results_dir(args.out) as out:
        summary = run_campaign(campaign, out, jobs=args.jobs, force=args.force)
        print_summary(summary, keep=args.out is not None)
        print()
        results = load_results(out)
        print_means(results, [c.name for c in campaign.configs], campaign.baseline)
        if len(campaign.configs) > 1:
            print()
            terms = None if args.no_discrepancy else report_terms({benchmark: args.workload})
            print_verdicts(results, campaign.baseline, terms[0] if terms else None)
    return 0


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


def print_verdicts(
    results: pd.DataFrame, baseline: str, discrepancy: Mapping[str, Term] | None = None
) -> None:
    """Per platform, each configuration's ratio to the baseline with its 90% interval over the
    iterations, that interval widened by the model discrepancy (when given), and the verdict."""

    report = build_report(results, baseline, discrepancy=discrepancy)
    rows = []
    for r in report.summary.to_dict("records"):
        if r["config"] == baseline:
            continue
        row = [
            r["platform"],
            r["benchmark"],
            r["config"],
            fmt_number(r["perf_ratio"], 3),
            _interval(r["perf_ratio_ci_low"], r["perf_ratio_ci_high"]),
        ]
        if discrepancy is not None:
            row.append(_interval(r["predicted_ci_low"], r["predicted_ci_high"]))
            row.append(r["model_verdict"])
        rows.append([*row, r["verdict"]])
    headers = ["platform", "benchmark", "config", "ratio", "90% interval"]
    title = f"ratio to {baseline} (gmean over parameters), its 90% interval over the iterations"
    if discrepancy is not None:
        headers += ["with discrepancy", "model verdict"]
        terms = {name: t for name, t in discrepancy.items()}
        what = "; ".join(
            f"{name}: class {t.benchmark_class}, ln half-width {fmt_number(t.halfwidth_ln, 3)} "
            f"from {t.cells} published cells"
            for name, t in terms.items()
        )
        title += f", widened by the model discrepancy ({what})"
    print_table(
        [*headers, "verdict"],
        rows,
        right={"ratio", "90% interval", "with discrepancy"},
        title=f"{title}, and what it says (neutral: within +-2%; uncertain: the interval "
        "straddles an edge)",
    )


def _interval(low: float, high: float) -> str:
    return f"{fmt_number(low, 3)} - {fmt_number(high, 3)}"
