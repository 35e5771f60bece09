"""The `dvfslab` command: list the presets, run one simulation, measure the simulator's speed.

Each subcommand prints a short human view, or with --json exactly the documented JSON. A user
mistake prints one `error: <message>` line on stderr and exits 1, without a traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Callable, NoReturn

from dvfslab import __version__, _core
from dvfslab._cli_campaign import add_campaign, add_compare, add_validate
from dvfslab._core import ConfigError, DvfsError
from dvfslab._files import replace_atomically
from dvfslab._progress import run_progress
from dvfslab._table import fmt_number, fmt_seconds, print_fields, print_table
from dvfslab.api import checked_seed, duration_ns, simulate
from dvfslab.platforms import describe_platform, list_platforms, load_platform
from dvfslab.result import SimResult, timeline_format

EXIT_ERROR = 1
EXIT_INTERRUPTED = 130

SPEC_HELP = """\
A governor or workload is a spec string, name:key=value,key=value, whose keys are the
governor's sysfs tunables or the benchmark's own knobs (see `dvfslab governors`, `workloads`).
"""


class UsageError(Exception):
    """A command-line mistake that argparse found."""


class _Parser(argparse.ArgumentParser):
    """argparse that hands its mistakes to `main`: one `error:` line and exit status 1."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see '{self.prog} --help')")


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
    parser = _Parser(
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
    _add_platforms(commands)
    _add_governors(commands)
    _add_workloads(commands)
    _add_run(commands)
    add_compare(commands, _command)
    add_campaign(commands, _command)
    add_validate(commands, _command)
    _add_bench(commands)
    _add_trace(commands)
    _add_replay(commands)
    _add_tune(commands)
    return parser


# -- subcommands -----------------------------------------------------------------------------


def _add_platforms(commands: Any) -> None:
    p = _command(
        commands,
        "platforms",
        "List the platform presets, or describe one.",
        cmd_platforms,
        "  dvfslab platforms                       the shipped presets\n"
        "  dvfslab platforms pixel6                one preset: topology and policies\n"
        "  dvfslab platforms ./my-box.json --json  a preset file, as the simulator reads it",
    )
    p.add_argument(
        "name", nargs="?", metavar="NAME", help="a preset id or a preset file (.json) to describe"
    )
    _add_json_flag(p)


def cmd_platforms(args: argparse.Namespace) -> int:
    if args.name is not None:
        info = describe_platform(args.name)
        if args.json:
            _print_json(info)
        else:
            _show_platform(info)
        return 0
    platforms = list_platforms()
    if args.json:
        _print_json(platforms)
    else:
        print_table(
            ["id", "cpus", "description"],
            [(p["id"], p["cpus"], p["description"]) for p in platforms],
            right={"cpus"},
        )
    return 0


def _add_governors(commands: Any) -> None:
    p = _command(
        commands,
        "governors",
        "List the governors and their tunables.",
        cmd_governors,
        "  dvfslab governors\n"
        "  dvfslab governors --json\n"
        "  dvfslab run -p pixel6 -g userspace:scaling_setspeed=1803000 -w cpu-bound",
    )
    _add_json_flag(p)


def cmd_governors(args: argparse.Namespace) -> int:
    governors = json.loads(_core.governors())
    settings = json.loads(_core.system_tunables())
    if args.json:
        _print_json({"governors": governors, "system_settings": settings})
        return 0
    for governor in governors:
        print(f"{governor['name']}: {governor['description']}")
        _show_parameters("tunable", governor["tunables"])
        print()
    print("every governor spec also accepts these system settings:")
    _show_parameters("setting", settings)
    return 0


def _add_workloads(commands: Any) -> None:
    p = _command(
        commands,
        "workloads",
        "List the workloads, their metric and knobs.",
        cmd_workloads,
        "  dvfslab workloads\n"
        "  dvfslab workloads --json\n"
        "  dvfslab run -p pixel6 -g performance "
        "-w periodic:threads=4,run_us=2000,period_us=10000",
    )
    _add_json_flag(p)


def cmd_workloads(args: argparse.Namespace) -> int:
    workloads = json.loads(_core.workloads())
    common = json.loads(_core.common_workload_knobs())
    if args.json:
        _print_json({"workloads": workloads, "common_knobs": common})
        return 0
    for workload in workloads:
        print(f"{workload['name']}: {workload['description']}")
        print(
            f"  metric: {workload['metric']} [{workload['unit']}], {workload['better']} is better"
        )
        _show_parameters("knob", workload["knobs"])
        print()
    print("every workload spec also accepts these knobs:")
    _show_parameters("knob", common)
    return 0


def _add_run(commands: Any) -> None:
    p = _command(
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
    _add_json_flag(p, "print the run's result JSON (schema dvfslab-run/1) and nothing else")


def cmd_run(args: argparse.Namespace) -> int:
    # Checked here as well as in simulate() so that the messages name the flags.
    duration_ns(args.duration, "--duration")
    checked_seed(args.seed, "--seed")
    if args.variants is not None:
        from dvfslab._cli_campaign import run_variants

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
    _show_run(result)
    if timeline is not None:
        print(f"\ntimeline written to {timeline}")
    if trace is not None:
        print(f"\ntrace written to {trace}")
    if args.explain == "-":
        _show_decisions(result)
    elif args.explain is not None:
        print(f"\ndecisions written to {args.explain}")
    return 0


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


def _add_trace(commands: Any) -> None:
    p = _command(
        commands,
        "trace",
        "Read a recorded trace.",
        _cmd_trace_help,
        "  dvfslab trace summary trace.txt          (trace-cmd report output, or trace_pipe text)\n"
        "  dvfslab trace summary trace.dat --json   (needs trace-cmd installed)",
    )
    sub = p.add_subparsers(title="commands", dest="trace_command", metavar="COMMAND")
    summary = _command(
        sub,
        "summary",
        "What a trace holds: its span, events, and per CPU its busy share and frequencies.",
        cmd_trace_summary,
        "  dvfslab trace summary trace.txt\n  dvfslab trace summary trace.txt --json\n"
        "  dvfslab trace summary trace.txt --cpus big=1-2,little=0,3-5\n"
        "  dvfslab trace summary trace.txt -p juno-r2   (the preset's CPU numbering)",
    )
    summary.add_argument("file", metavar="FILE", help="ftrace text, or a trace-cmd trace.dat")
    where = summary.add_mutually_exclusive_group()
    where.add_argument(
        "--cpus",
        metavar="TYPE=CPUS,...",
        help="the trace's CPU types, e.g. big=1-2,little=0,3-5",
    )
    where.add_argument(
        "-p",
        "--platform",
        metavar="PLATFORM",
        help="take the CPU types from a preset's clusters (its CPU numbering)",
    )
    _add_json_flag(summary)


def _cmd_trace_help(args: argparse.Namespace) -> int:
    raise ConfigError("trace needs a command: summary (see 'dvfslab trace -h')")


def cmd_trace_summary(args: argparse.Namespace) -> int:
    from dvfslab.traces.read import cpu_map, preset_cpu_map, read_trace

    types = None
    if args.cpus is not None:
        types = cpu_map(args.cpus)
    elif args.platform is not None:
        types = preset_cpu_map(args.platform)
    info = read_trace(args.file).summary(types)
    if args.json:
        _print_json(info)
        return 0
    span = info["end_s"] - info["start_s"]
    print(
        f"{info['path']}: {info['cpus']} CPUs, {span:.6f} s ({info['start_s']:.6f} to "
        f"{info['end_s']:.6f}), {info['tasks']} tasks, {info['markers']} markers"
    )
    print_table(
        ["event", "count", "read"],
        [
            [name, n, "skipped" if name in info["skipped"] else "yes"]
            for name, n in info["events"].items()
        ],
        right={"count"},
    )
    rows = []
    for c in info["per_cpu"]:
        busy = "-" if c["busy_pct"] is None else f"{c['busy_pct']:.1f}"
        top = sorted(c["freq_residency_khz_pct"].items(), key=lambda kv: -kv[1])[:3]
        freqs = ", ".join(f"{_mhz(khz)} {pct:.0f}%" for khz, pct in top) or "-"
        rows.append([c["cpu"], c["type"] or "-", busy, c["frequency_changes"], freqs])
    print()
    print_table(
        ["cpu", "type", "busy %", "freq changes", "time at frequency (top 3)"],
        rows,
        right={"cpu", "busy %", "freq changes"},
    )
    return 0


def _add_replay(commands: Any) -> None:
    from dvfslab.traces.replay import DEFAULT_WINDOW_MS

    p = _command(
        commands,
        "replay",
        "Replay a governor against a recorded trace.",
        _cmd_replay_help,
        "  dvfslab replay governor trace.txt -p juno-r0 -g schedutil:kernel=4.19",
    )
    sub = p.add_subparsers(title="commands", dest="replay_command", metavar="COMMAND")
    governor = _command(
        sub,
        "governor",
        "Feed a recording's utilisation, RT and idle events to a governor and compare its "
        "frequency decisions with the recorded ones.",
        cmd_replay_governor,
        "  dvfslab replay governor trace.txt -p juno-r0 -g schedutil:kernel=4.19\n"
        "  dvfslab replay governor trace.dat -p juno-r0 -g schedutil:kernel=4.19 --json\n"
        "  dvfslab replay governor trace.txt -p juno-r0 \\\n"
        "      -g schedutil:kernel=4.19,rate_limit_us=20000",
    )
    _add_recording(governor)
    governor.add_argument(
        "-g",
        "--governor",
        required=True,
        metavar="SPEC",
        help="governor spec; give the recorded kernel's version (kernel=4.19)",
    )
    governor.add_argument(
        "--window-ms",
        type=float,
        default=DEFAULT_WINDOW_MS,
        metavar="MS",
        help=f"pair a model change with a recorded one this close in time (default: "
        f"{DEFAULT_WINDOW_MS:g})",
    )
    _add_json_flag(governor)
    workload = _command(
        sub,
        "workload",
        "Run a recording's tasks (their runs, sleeps and who woke whom) under each governor, "
        "and set the runs beside the recording.",
        cmd_replay_workload,
        "  dvfslab replay workload trace.txt -p juno-r2 -g schedutil -g ondemand\n"
        "  dvfslab replay workload trace.txt -p juno-r2 -g schedutil --rtapp tasks.json\n"
        "  dvfslab run -p juno-r2 -g schedutil -w trace:trace.txt   (the same tasks as a workload)",
    )
    _add_recording(workload)
    workload.add_argument(
        "-g",
        "--governor",
        required=True,
        action="append",
        metavar="SPEC",
        help="governor spec, repeatable; the first is compared with the recording as the one "
        "that was recorded",
    )
    workload.add_argument(
        "--rtapp", metavar="FILE.json", help="also write the tasks as an rt-app file"
    )
    workload.add_argument("--seed", type=int, default=0, help="the runs' seed (default: 0)")
    _add_json_flag(workload)


def _add_recording(p: argparse.ArgumentParser) -> None:
    """The recording a replay reads, and the preset of the machine it was recorded on."""
    p.add_argument("file", metavar="FILE", help="ftrace text, or a trace-cmd trace.dat")
    p.add_argument(
        "-p", "--platform", required=True, metavar="PLATFORM", help="the recorded machine's preset"
    )


def _cmd_replay_help(args: argparse.Namespace) -> int:
    raise ConfigError("replay needs a command: governor or workload (see 'dvfslab replay -h')")


def cmd_replay_governor(args: argparse.Namespace) -> int:
    from dvfslab.traces.replay import replay_governor

    if not args.window_ms > 0:
        raise ConfigError(f"--window-ms: expected a positive number of ms, got {args.window_ms}")
    report = replay_governor(args.file, args.platform, args.governor, window_ms=args.window_ms)
    if args.json:
        _print_json(report)
        return 0
    n = report["decisions"]
    print(
        f"{args.file}: {args.governor} on {args.platform}, {report['recorded_changes']} recorded "
        f"and {report['model_changes']} model frequency changes, {n} decisions"
    )
    print(
        f"exact OPP {report['exact_match']:.0%}, within one OPP {report['within_one_opp']:.0%}, "
        f"unexplained {report['unexplained']}"
    )
    t = report["timing_ms"]
    print(
        f"timing (model - recorded): median {t['median']:+.2f} ms, 90% within "
        f"{t['p90_abs']:.2f} ms, largest {t['max_abs']:.2f} ms"
    )
    if report["unobservable"]:
        print("not in the trace: " + ", ".join(report["unobservable"]))
    if report["explainable"]:
        counts = ", ".join(f"{name} {k}" for name, k in report["explainable"])
        print(f"differences an untraced input could explain: {counts}")
    rows = [
        [
            c["policy"],
            "-" if c["recorded_s"] is None else f"{c['recorded_s']:.6f}",
            "-" if c["recorded_khz"] is None else _mhz(c["recorded_khz"]),
            "-" if c["model_s"] is None else f"{c['model_s']:.6f}",
            "-" if c["model_khz"] is None else _mhz(c["model_khz"]),
            c["status"],
        ]
        for c in sorted(
            report["warm_up"] + report["changes"] + report["at_end"],
            key=lambda c: c["recorded_s"] if c["recorded_s"] is not None else c["model_s"],
        )
    ]
    print()
    print_table(
        ["policy", "recorded s", "MHz", "model s", "MHz", "status"],
        rows,
        right={"policy", "MHz"},
    )
    return 0


def cmd_replay_workload(args: argparse.Namespace) -> int:
    from dvfslab.traces.compare import replay_workload
    from dvfslab.traces.read import read_trace
    from dvfslab.traces.workload import rtapp_for

    trace = read_trace(args.file)
    if args.rtapp:
        text = rtapp_for(args.file, args.platform)
        replace_atomically(
            Path(args.rtapp), lambda tmp: Path(tmp).write_text(text, encoding="utf-8")
        )
    report = replay_workload(trace, args.platform, args.governor, seed=args.seed)
    if args.json:
        _print_json(report)
        return 0
    print(f"{args.file}: {report['tasks']} tasks over {report['span_s']:.3f} s, on {args.platform}")
    columns = {"recording": report["recorded"], **report["runs"]}
    kinds = sorted({k for f in columns.values() for k in f["busy_share"]})
    rows = []
    for name, f in columns.items():
        act = f["activation_ms"]
        shares = [f"{100 * f['busy_share'].get(k, 0.0):.0f}%" for k in kinds]
        residency = "; ".join(
            f"{k} "
            + ", ".join(
                f"{_mhz(khz)} {100 * share:.0f}%"
                for khz, share in sorted(f["residency"].get(k, {}).items(), key=lambda kv: -kv[1])[
                    :2
                ]
            )
            for k in kinds
            if f["residency"].get(k)
        )
        energy = f"{f['energy_j']:.3f}" if "energy_j" in f else "-"
        rows.append(
            [
                name,
                f"{f['busy_s']:.3f}",
                *shares,
                f"{act['median']:.2f}",
                f"{act['p90']:.2f}",
                energy,
                residency or "-",
            ]
        )
    print_table(
        [
            "",
            "busy CPU-s",
            *[f"on {k}" for k in kinds],
            "activation ms",
            "p90",
            "energy J",
            "time at frequency (top 2)",
        ],
        rows,
        right={"busy CPU-s", "activation ms", "p90", "energy J", *[f"on {k}" for k in kinds]},
    )
    e = report["error"]
    distance = ", ".join(f"{k} {d:.2f}" for k, d in e["residency_distance"].items()) or "-"
    ratio = "-" if e["busy_ratio"] is None else f"{e['busy_ratio']:.2f}"
    act_ratio = (
        "-" if e["activation_median_ratio"] is None else f"{e['activation_median_ratio']:.2f}"
    )
    print(
        f"\n{args.governor[0]} against the recording: busy time x{ratio}, activation median "
        f"x{act_ratio}, frequency residency distance {distance} (0 = same, 1 = disjoint)"
    )
    return 0


def _add_tune(commands: Any) -> None:
    p = _command(
        commands,
        "tune",
        "Search a governor's tunables for the best trade-offs (Optuna, multi-objective).",
        cmd_tune,
        "  dvfslab tune -p pixel6 -g schedutil --param rate_limit_us=100..20000:log \\\n"
        "      -w periodic:threads=4 -w hackbench --trials 30 --out tune1\n"
        "  dvfslab tune ... --out tune1        (again: resumes the search where it stopped)",
    )
    p.add_argument("-p", "--platform", required=True, metavar="PLATFORM")
    p.add_argument("-g", "--governor", required=True, metavar="SPEC", help="the governor to tune")
    p.add_argument(
        "--param",
        action="append",
        required=True,
        metavar="NAME=LOW..HIGH[:log]",
        help="a tunable to search, repeatable",
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
    p.add_argument("--jobs", type=int, metavar="N")
    p.add_argument("--ray", metavar="ADDRESS", help="run on a Ray cluster")
    p.add_argument("--out", required=True, metavar="DIR", help="the search's store (resumable)")
    p.add_argument("--html", metavar="FILE", help="also write the front and its plot as HTML")
    p.add_argument("--quiet", action="store_true", help="no progress")
    _add_json_flag(p)


def cmd_tune(args: argparse.Namespace) -> int:
    from dvfslab.tune import front_table, integer_tunables, parse_param, tune

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
        jobs=args.jobs,
        ray_address=args.ray,
        progress=not (args.quiet or args.json),
    )
    if args.html:
        from dvfslab.html_report import write_tune_html

        write_tune_html(args.html, summary, f"{args.governor} on {args.platform}: tuning")
    if args.json:
        _print_json(summary)
        return 0
    table = front_table(summary)
    print(f"{len(summary['trials'])} trials, {len(summary['pareto'])} on the Pareto front")
    print(table.title)
    print_table(table.headers, table.rows, right=table.right)
    return 0


def _add_bench(commands: Any) -> None:
    p = _command(
        commands,
        "bench",
        "Measure the simulator's speed on fixed scenarios.",
        cmd_bench,
        "  dvfslab bench\n  dvfslab bench --scenario server --seconds 1 --json\n"
        "  dvfslab bench --repeat 5   (the fastest of five runs: less noise from a busy machine)",
    )
    names = [s["name"] for s in _bench_scenarios()]
    p.add_argument(
        "--scenario",
        choices=names,
        action="append",
        metavar="NAME",
        help=f"run only this scenario ({', '.join(names)}); repeatable (default: all)",
    )
    p.add_argument(
        "--seconds",
        type=float,
        metavar="S",
        help="simulated seconds to run each (default: the scenario's own, ~0.5 s of wall time)",
    )
    p.add_argument(
        "--repeat",
        type=int,
        default=1,
        metavar="N",
        help="run each scenario N times and report the fastest run (default: 1)",
    )
    _add_json_flag(p)


def _bench_scenarios() -> list[dict[str, Any]]:
    from dvfslab.governors import BENCH_SCENARIO

    scenarios: list[dict[str, Any]] = json.loads(_core.bench_scenarios())
    return [*scenarios, BENCH_SCENARIO]


def cmd_bench(args: argparse.Namespace) -> int:
    if args.seconds is not None:
        duration_ns(args.seconds, "--seconds")
    if args.repeat < 1:
        raise ConfigError(f"--repeat: expected a whole number >= 1, got {args.repeat}")
    chosen = [s for s in _bench_scenarios() if args.scenario is None or s["name"] in args.scenario]
    results = []
    for scenario in chosen:
        platform_json, _ = load_platform(scenario["platform"])
        seconds = scenario["default_seconds"] if args.seconds is None else args.seconds
        # Every run simulates the same thing (seed 1); only the wall time differs, and the
        # fastest run is the one least disturbed by the rest of the machine.
        runs = [_bench_run(scenario, platform_json, seconds) for _ in range(args.repeat)]
        fastest = min(runs, key=lambda r: r["wall_time_s"])
        fastest["wall_times_s"] = [r["wall_time_s"] for r in runs]
        results.append(fastest)
    if args.json:
        _print_json(results)
        return 0
    for i, bench in enumerate(results):
        if i:
            print()
        print_fields(
            [
                ("scenario", f"{bench['scenario']}: {bench['setup']}"),
                ("simulated", f"{bench['sim_time_s']:g} s, {bench['events']:,} events"),
                ("wall time", _bench_wall(bench["wall_times_s"])),
                (
                    "speed",
                    f"{fmt_number(bench['events_per_s'])} events/s, "
                    f"{fmt_number(bench['sim_s_per_wall_s'])} simulated s per wall-s, "
                    f"{fmt_number(bench['sim_cpu_s_per_wall_s'])} simulated CPU-s per wall-s",
                ),
                *(
                    [("decisions", f"{fmt_number(bench['decisions_per_s'])} Python calls/s")]
                    if "decisions_per_s" in bench
                    else []
                ),
                ("goal", _bench_goal(bench)),
            ]
        )
    return 0


def _bench_run(scenario: dict[str, Any], platform_json: str, seconds: float) -> dict[str, Any]:
    from dvfslab.governors import BENCH_SCENARIO
    from dvfslab.governors import bench as bench_python_governor

    if scenario["name"] == BENCH_SCENARIO["name"]:
        return bench_python_governor(seconds)
    row: dict[str, Any] = json.loads(_core.bench(scenario["name"], platform_json, seconds))
    return row


BENCH_MEASURES = {"events/s": "events_per_s", "decisions/s": "decisions_per_s"}
"""The result field a goal's unit is measured by; other goals are simulated s per wall s."""


def _bench_goal(bench: dict[str, Any]) -> str:
    reached = bench[BENCH_MEASURES.get(bench["goal_unit"], "sim_s_per_wall_s")]
    verdict = "reached" if reached >= bench["goal"] else "not reached"
    return f"{fmt_number(bench['goal'])} {bench['goal_unit']} ({verdict})"


def _bench_wall(times: list[float]) -> str:
    fastest = fmt_seconds(min(times))
    if len(times) == 1:
        return fastest
    return f"{fastest} (fastest of {len(times)}; slowest {fmt_seconds(max(times))})"


# -- human views -----------------------------------------------------------------------------


def _show_platform(info: dict[str, Any]) -> None:
    print(f"{info['id']}: {info['name']}")
    print(info["description"])
    print()
    print_fields(
        [
            (key, value)
            for key, value in info.items()
            if key not in ("id", "name", "description") and not isinstance(value, (dict, list))
        ]
    )
    print()
    print_table(
        ["cpus", "cluster", "capacity", "min MHz", "base MHz", "max MHz"],
        [
            (
                _cpu_ranges(p["cpus"]),
                p.get("cluster", "-"),
                p.get("capacity", "-"),
                _mhz(p["min_khz"]),
                _mhz(p["base_khz"]),
                _mhz(p["max_khz"]),
            )
            for p in info["policies"]
        ],
        right={"capacity", "min MHz", "base MHz", "max MHz"},
        title="cpufreq policies",
    )
    print()
    print_table(
        ["cluster", "state", "exit us", "exit us, package awake", "target residency us", "power"],
        [
            (
                cluster["id"],
                state["name"],
                _json_value(state["exit_latency_us"]),
                _json_value(state["exit_latency_pkg_awake_us"] or state["exit_latency_us"]),
                _json_value(state["target_residency_us"]),
                state["power"],
            )
            for cluster in info["clusters"]
            for state in cluster["idle_states"]
        ],
        right={"exit us", "exit us, package awake", "target residency us"},
        title="idle states (menu chooses by the table's exit; a core whose package stays awake "
        "leaves in the measured one)",
    )
    _show_uncertain(info["uncertain"])


SOURCE_WIDTH = 70
"""Characters of a declared constant's source shown in the text view (`--json` has it all)."""


def _show_uncertain(constants: list[dict[str, Any]]) -> None:
    """The preset's declared constants: what a model variant may draw each from, and why."""
    if not constants:
        return
    print()
    print_table(
        ["constant", "value", "range", "source"],
        [
            (
                c["path"],
                _json_value(c["value"]),
                f"{_json_value(c['range'][0])}..{_json_value(c['range'][1])}",
                _truncated(c["source"], SOURCE_WIDTH),
            )
            for c in constants
        ],
        right={"value", "range"},
        title="Uncertain constants (declared ranges; full sources with --json)",
    )


def _truncated(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def _show_parameters(kind: str, parameters: list[dict[str, Any]]) -> None:
    if not parameters:
        return
    # Knobs standing for uncertain constants show the range their value is believed to lie in.
    if any(p.get("range") for p in parameters):
        print_table(
            [kind, "unit", "default", "range", "description"],
            [
                (
                    p["name"],
                    p["unit"] or "",
                    _json_value(p["default"]),
                    _range(p.get("range")),
                    p["description"],
                )
                for p in parameters
            ],
        )
        return
    print_table(
        [kind, "unit", "default", "description"],
        [
            (p["name"], p["unit"] or "", _json_value(p["default"]), p["description"])
            for p in parameters
        ],
    )


def _range(bounds: list[float] | None) -> str:
    """An uncertain knob's range as `lo..hi`, "" for a knob without one."""
    return f"{_json_value(bounds[0])}..{_json_value(bounds[1])}" if bounds else ""


def _show_run(result: SimResult) -> None:
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
                _mhz(row["avg_freq_khz"]),
                row["util_avg_max"],
                fmt_number(row["energy_j"]),
                _longest(row["time_in_idle_state"]),
            )
            for row in result.per_cpu
        ],
        right={"cpu", "busy %", "avg MHz", "util_avg max", "energy J"},
    )


# -- helpers ---------------------------------------------------------------------------------


def _command(
    commands: Any,
    name: str,
    summary: str,
    handler: Callable[[argparse.Namespace], int],
    examples: str,
) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = commands.add_parser(
        name,
        help=summary,
        description=summary,
        epilog="examples:\n" + examples,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.set_defaults(handler=handler)
    return parser


def _add_json_flag(parser: argparse.ArgumentParser, text: str = "print JSON") -> None:
    parser.add_argument("--json", action="store_true", help=text)


def _print_json(value: object) -> None:
    print(json.dumps(value, indent=2))


def _json_value(value: object) -> str:
    """A default as a user would type it: 2000 rather than 2000.0, "-" for none."""
    if value is None:
        return "-"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return value if isinstance(value, str) else json.dumps(value)


def _mhz(khz: float) -> str:
    return f"{khz / 1000:.0f}" if khz else "-"


def _longest(seconds_by_name: dict[str, float]) -> str:
    """The name with the most seconds, "-" if none has any."""
    name, seconds = max(seconds_by_name.items(), key=lambda item: item[1], default=("-", 0.0))
    return name if seconds > 0 else "-"


def _cpu_ranges(cpus: Sequence[int]) -> str:
    """[0, 1, 2, 3, 8] -> "0-3,8", as the kernel prints CPU lists."""
    spans: list[list[int]] = []
    for cpu in sorted(cpus):
        if spans and cpu == spans[-1][1] + 1:
            spans[-1][1] = cpu
        else:
            spans.append([cpu, cpu])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)


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
