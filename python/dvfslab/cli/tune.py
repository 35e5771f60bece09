"""`dvfslab tune`: search a governor's tunables for the best trade-offs (`dvfslab.tune`)."""

from __future__ import annotations

import argparse
from typing import Any

from dvfslab.cli.output import print_json
from dvfslab.cli.parser import add_json_flag, command
from dvfslab.report.printing import print_table
from dvfslab.tune import GRID_POINTS, SAMPLERS


def register(commands: Any) -> None:
    p = command(
        commands,
        "tune",
        "Search a governor's tunables for the best trade-offs (Optuna, multi-objective).",
        cmd_tune,
        "  dvfslab tune -p pixel6 -g schedutil --param rate_limit_us=100..20000:log \\\n"
        "      -w periodic:threads=4 -w hackbench --trials 30 --out tune1\n"
        "  dvfslab tune ... --out tune1        (again: resumes the search where it stopped)\n"
        "  dvfslab tune -p skylake-e3-1240v5 -g schedutil --param rate_limit_us=500..10000 \\\n"
        "      --param driver=intel_cpufreq,acpi-cpufreq -w hackbench --sampler grid --jobs 2 \\\n"
        "      --out tune2\n"
        "A trial whose runs fail or whose metric is 0 is marked failed and the search goes on.",
    )
    p.add_argument("-p", "--platform", required=True, metavar="PLATFORM")
    p.add_argument("-g", "--governor", required=True, metavar="SPEC", help="the governor to tune")
    p.add_argument(
        "--param",
        action="append",
        required=True,
        metavar="NAME=LOW..HIGH[:log] | NAME=A,B,...",
        help="a tunable (or system key) to search, repeatable: a range, on a log scale with "
        ":log (whole-number tunables as integers), or a list of values",
    )
    p.add_argument("-w", "--workload", action="append", required=True, metavar="SPEC")
    p.add_argument(
        "--objectives",
        default="perf,energy",
        metavar="LIST",
        help="of perf, energy, power, ppw (default: perf,energy)",
    )
    p.add_argument("--trials", type=int, default=20, help="trials in all (default: 20)")
    p.add_argument("--iterations", type=int, default=3, help="per workload (default: 3)")
    p.add_argument("--duration", type=float, metavar="S", help="simulated seconds per run")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--nominal", action="store_true", help="the fixed model, no variants")
    p.add_argument(
        "--sampler",
        choices=SAMPLERS,
        default="tpe",
        help="Optuna's sampler (default: tpe); grid: every combination, a range cut into "
        "--grid-points values",
    )
    p.add_argument(
        "--grid-points",
        type=int,
        default=GRID_POINTS,
        metavar="N",
        help=f"values per range for --sampler grid (default: {GRID_POINTS})",
    )
    p.add_argument(
        "--jobs",
        type=int,
        metavar="N",
        help="local worker processes (default: every CPU, one trial at a time); given, N "
        "trials run at once",
    )
    p.add_argument("--ray", metavar="ADDRESS", help="run on a Ray cluster")
    p.add_argument(
        "--batch",
        type=int,
        metavar="K",
        help="trials asked and run at once, their runs spread over the workers "
        "(default: --jobs, or 1)",
    )
    p.add_argument("--out", required=True, metavar="DIR", help="the search's store (resumable)")
    p.add_argument("--html", metavar="FILE", help="also write the front and its plot as HTML")
    p.add_argument("--quiet", action="store_true", help="no progress")
    add_json_flag(p)


def cmd_tune(args: argparse.Namespace) -> int:
    from dvfslab.tune import front_table, integer_tunables, parse_param, tune, write_html

    integers = integer_tunables(args.governor)
    params = [parse_param(text, integers) for text in args.param]
    summary = tune(
        args.platform,
        args.governor,
        params,
        args.workload,
        objectives=[o.strip() for o in args.objectives.split(",")],
        trials=args.trials,
        out=args.out,
        iterations=args.iterations,
        duration_s=args.duration,
        seed=args.seed,
        nominal=args.nominal,
        sampler=args.sampler,
        grid_points=args.grid_points,
        jobs=args.jobs,
        ray_address=args.ray,
        batch=args.batch,
        progress=not (args.quiet or args.json),
    )
    if args.html:
        write_html(args.html, summary, f"{args.governor} on {args.platform}: tuning")
    if args.json:
        print_json(summary)
        return 0
    table = front_table(summary)
    failed = f" ({len(summary['failed'])} failed)" if summary["failed"] else ""
    print(f"{len(summary['trials'])} trials{failed}, {len(summary['pareto'])} on the Pareto front")
    for t in summary["failed"]:
        print(f"trial {t['trial']} failed: {t['error']}")
    print(table.title)
    print_table(table.headers, table.rows, right=table.right)
    return 0
