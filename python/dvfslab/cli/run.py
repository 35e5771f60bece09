"""`dvfslab run`: one simulation, shown, or written as JSON, a timeline, a trace or its decisions;
with --variants N, one run per model variant, summarised with 90% intervals."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from dvfslab._core import ConfigError
from dvfslab._files import replace_atomically
from dvfslab._progress import run_progress
from dvfslab.api import checked_seed, duration_ns, simulate
from dvfslab.campaign import campaign_from_dict, load_results, run_campaign
from dvfslab.cli.campaign_runs import benchmark_name, results_dir
from dvfslab.cli.output import mhz
from dvfslab.cli.parser import SPEC_HELP, add_json_flag, command
from dvfslab.report import stats
from dvfslab.report.printing import fmt_number, fmt_seconds, print_fields, print_table
from dvfslab.result import SimResult, timeline_format


def register(commands: Any) -> None:
    p = command(
        commands,
        "run",
        "Simulate one workload on one platform under one governor.",
        cmd_run,
        "  dvfslab run -p pixel6 -g performance -w periodic:threads=4,run_us=2000,period_us=10000\n"
        "  dvfslab run -p haswell-e5-2670v3-2s -g performance -w cpu-bound:threads=24 "
        "--duration 2\n"
        "  dvfslab run -p skylake-e3-1240v5 -g userspace:scaling_setspeed=1800000 "
        "-w cpu-bound --json\n"
        "  dvfslab run -p ./my-box.json -g powersave:hz=1000 -w cpu-bound "
        "--timeline out.parquet\n"
        "  dvfslab run -p skylake-e3-1240v5 -g schedutil -w tbench:clients=4 --variants 8\n\n"
        + SPEC_HELP,
    )
    p.add_argument(
        "-p",
        "--platform",
        required=True,
        metavar="PLATFORM",
        help="a preset id (see `dvfslab platforms`) or a preset file (.json)",
    )
    p.add_argument(
        "-g",
        "--governor",
        required=True,
        metavar="GOVERNOR",
        help="governor spec, e.g. userspace:scaling_setspeed=1800000",
    )
    p.add_argument(
        "-w",
        "--workload",
        required=True,
        metavar="WORKLOAD",
        help="workload spec, e.g. cpu-bound:threads=8, or an rt-app JSON file",
    )
    p.add_argument(
        "--duration",
        type=float,
        metavar="S",
        help="simulated seconds (default: the workload's own duration)",
    )
    p.add_argument(
        "--seed",
        type=int,
        default=0,
        metavar="N",
        help="random seed, 0..2^64-1; the same seed gives the same result (default 0)",
    )
    p.add_argument(
        "--timeline",
        metavar="FILE.parquet|FILE.csv",
        help="also write per-CPU frequency, util_avg and idle timelines to FILE, as Parquet or "
        "CSV by its suffix",
    )
    p.add_argument(
        "--trace",
        metavar="FILE.json|FILE.txt",
        help="write a trace: .json for Perfetto/Chrome (ui.perfetto.dev), .txt for ftrace text",
    )
    p.add_argument(
        "--explain",
        nargs="?",
        const="-",
        metavar="FILE.csv",
        help="record each frequency the governors ask for, with its inputs (which evaluations "
        "ask: docs/governors.md): print them, or write them to FILE",
    )
    p.add_argument(
        "--variants",
        type=int,
        metavar="N",
        help="run N model variants (the model's uncertain constants drawn over their declared "
        "ranges, a Latin hypercube) and print the metric, energy and power with their 90%% "
        "interval over them",
    )
    add_json_flag(p, "print the run's result JSON (schema dvfslab-run/1) and nothing else")


def cmd_run(args: argparse.Namespace) -> int:
    # Checked here as well as in simulate() so that the messages name the flags.
    duration_ns(args.duration, "--duration")
    checked_seed(args.seed, "--seed")
    if args.variants is not None:
        return run_variants(args)
    timeline = Path(args.timeline) if args.timeline is not None else None
    if timeline is not None:
        timeline_format(timeline, "--timeline")
        if not timeline.absolute().parent.is_dir():
            raise ConfigError(f"--timeline: directory {timeline.absolute().parent} does not exist")
    trace = Path(args.trace) if args.trace is not None else None
    if trace is not None:
        if not trace.absolute().parent.is_dir():
            raise ConfigError(f"--trace: directory {trace.absolute().parent} does not exist")
        if trace.suffix.lower() not in (".json", ".txt"):
            raise ConfigError(f"--trace {trace}: expected a .json (Perfetto) or .txt (ftrace) file")

    # A bar on a terminal; none when the output is JSON for a pipe or a file.
    quiet = args.json and not sys.stdout.isatty()
    with run_progress("simulating", enabled=not quiet) as progress:
        result = simulate(
            args.platform,
            args.governor,
            args.workload,
            duration_s=args.duration,
            seed=args.seed,
            timeline=timeline is not None or trace is not None,
            explain=args.explain is not None,
            progress=progress,
        )
    _trace_notes(args.workload, args.platform)
    if timeline is not None:
        result.write_timeline(timeline)
    if trace is not None:
        from dvfslab.traces import write_trace

        write_trace(result, trace)
    if args.explain not in (None, "-"):
        decisions = result.df_decisions()
        replace_atomically(args.explain, lambda tmp: decisions.to_csv(tmp, index=False))
    if args.json:
        print(result.to_json())
        return 0
    _show_run(result, args.platform)
    if timeline is not None:
        print(f"\ntimeline written to {timeline}")
    if trace is not None:
        print(f"\ntrace written to {trace}")
    if args.explain == "-":
        _show_decisions(result)
    elif args.explain is not None:
        print(f"\ndecisions written to {args.explain}")
    return 0


def _trace_notes(workload: str, platform: str) -> None:
    """What a `trace:FILE` workload could not follow of its recording, on stderr."""
    from dvfslab.api import TRACE_PREFIX

    if workload.startswith(TRACE_PREFIX):
        from dvfslab.traces.workload import conversion_notes

        for warning in conversion_notes(workload[len(TRACE_PREFIX) :], platform)["warnings"]:
            print(f"note: {workload}: {warning}", file=sys.stderr)


def _show_run(result: SimResult, platform: str) -> None:
    metric = result.metric
    print(f"{result.platform}, {result.governor}, {result.workload}, seed {result.seed}")
    print(
        f"simulated {result.sim_time_s:g} s in {fmt_seconds(result.wall_time_s)} "
        f"({result.events:,} events)"
    )
    print()
    fields: list[tuple[str, object]] = [
        (metric.name, f"{fmt_number(metric.value, 6)} {metric.unit} ({metric.better} is better)"),
        ("energy", f"{fmt_number(result.energy_j)} J"),
        ("avg package power", f"{fmt_number(result.avg_package_w)} W"),
    ]
    fields += [
        (
            f"  package {pkg['package']}",
            f"{fmt_number(pkg['avg_w'])} W, {fmt_number(pkg['energy_j'])} J "
            f"(uncore {fmt_number(pkg['uncore_energy_j'])} J, "
            f"RAPL {fmt_number(pkg['rapl_energy_j'])} J)",
        )
        for pkg in result.packages
    ]
    print_fields(fields)
    print()
    print_table(
        ["cpu", "busy %", "avg MHz", "util_avg max", "energy J", "idle mostly in"],
        [
            (
                row["cpu"],
                f"{row['busy_pct']:.1f}",
                mhz(row["avg_freq_khz"]),
                row["util_avg_max"],
                fmt_number(row["energy_j"]),
                _longest(row["time_in_idle_state"]),
            )
            for row in result.per_cpu
        ],
        right={"cpu", "busy %", "avg MHz", "util_avg max", "energy J"},
    )
    if _has_smt(platform) and any(r["busy_pct"] == 0 and r["energy_j"] > 0 for r in result.per_cpu):
        print(
            "energy J: each CPU's even share of its core's energy, so an idle CPU showing some "
            "is the SMT sibling of a busy one\n(on x86 CPUs n and n + cores share a core); "
            "the package lines above add the uncore's"
        )


def _has_smt(platform: str) -> bool:
    """Whether the preset's cores run more than one thread."""
    import json

    from dvfslab.platforms import load_platform

    topology = json.loads(load_platform(platform)[0]).get("topology", {})
    return isinstance(topology, dict) and topology.get("threads_per_core", 1) != 1


def _show_decisions(result: SimResult) -> None:
    """The decision log as a readable table: when, which policy, the inputs, raw → table → hw."""
    df = result.df_decisions()
    print(f"\n{len(df)} frequency decisions")
    if df.empty:
        return
    shown = df.copy()
    shown.insert(0, "time_ms", (shown.pop("time_s") * 1e3).round(3))
    for col in ("raw_khz", "resolved_khz", "min_khz", "max_khz", "hw_khz"):
        shown[col.replace("_khz", "_mhz")] = (shown.pop(col) / 1000).round(1)
    print(shown.to_string(index=False, na_rep="-"))


def _longest(seconds_by_name: dict[str, float]) -> str:
    """The name with the most seconds, "-" if none has any."""
    name, seconds = max(seconds_by_name.items(), key=lambda item: item[1], default=("-", 0.0))
    return name if seconds > 0 else "-"


VARIANT_COLUMNS = (("metric_value", "metric"), ("energy_j", "energy [J]"), ("avg_package_w", "W"))


def run_variants(args: argparse.Namespace) -> int:
    """`dvfslab run --variants N`: one run per model variant, summarised with 90% intervals."""
    import json

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
        "benchmarks": {benchmark_name(args.workload): {"workload": args.workload}},
        "iterations": args.variants,
        "seed": args.seed,
    }
    if args.duration is not None:
        doc["duration_s"] = args.duration
    campaign = campaign_from_dict(doc, source="dvfslab run --variants")
    quiet = args.json and not sys.stdout.isatty()
    with results_dir(None) as out:
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

    if all(v > 0 for v in values):
        logs = [math.log(v) for v in values]
        center, half = stats.amean(logs), stats.prediction_halfwidth(logs)
        return [math.exp(center - half), math.exp(center + half)]
    center, half = stats.amean(values), stats.prediction_halfwidth(values)
    return [center - half, center + half]
