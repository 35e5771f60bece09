"""`dvfslab replay governor | workload`: a governor against a recording's inputs, or a
recording's tasks run under governors, set beside the recording."""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

from dvfslab._core import ConfigError
from dvfslab._files import replace_atomically
from dvfslab.cli.output import mhz, print_json
from dvfslab.cli.parser import add_json_flag, add_tsc_flag, command
from dvfslab.report.printing import print_table


def register(commands: Any) -> None:
    from dvfslab.traces.replay import DEFAULT_WINDOW_MS

    p = command(
        commands,
        "replay",
        "Replay a governor against a recorded trace.",
        _cmd_replay_help,
        "  dvfslab replay governor trace.txt -p juno-r0 -g schedutil:kernel=4.19",
    )
    sub = p.add_subparsers(title="commands", dest="replay_command", metavar="COMMAND")
    governor = command(
        sub,
        "governor",
        "Feed a recording's utilisation, RT and idle events to a governor and compare its "
        "frequency decisions with the recorded ones.",
        cmd_replay_governor,
        "  dvfslab replay governor trace.txt -p juno-r0 -g schedutil:kernel=4.19\n"
        "  dvfslab replay governor trace.dat -p juno-r0 -g schedutil:kernel=4.19 --json\n"
        "  dvfslab replay governor trace.txt -p juno-r0 \\\n"
        "      -g schedutil:kernel=4.19,rate_limit_us=20000\n"
        "  dvfslab replay governor trace.txt -p juno-r0 -g schedutil:kernel=4.19 \\\n"
        "      --scan rate_limit_us=10000:100000:1000   (the values the recording allows)",
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
    governor.add_argument(
        "--scan",
        metavar="KEY=START:STOP:STEP",
        help="replay with the governor's tunable KEY at each value from START to STOP, and "
        "print per policy the values under which every judged change is reproduced exactly "
        "and no other is made",
    )
    add_json_flag(governor)
    workload = command(
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
    add_json_flag(workload)


def _add_recording(p: argparse.ArgumentParser) -> None:
    """The recording a replay reads, and the preset of the machine it was recorded on."""
    p.add_argument("file", metavar="FILE", help="ftrace text, or a trace-cmd trace.dat")
    p.add_argument(
        "-p", "--platform", required=True, metavar="PLATFORM", help="the recorded machine's preset"
    )
    add_tsc_flag(p)


def _cmd_replay_help(args: argparse.Namespace) -> int:
    raise ConfigError("replay needs a command: governor or workload (see 'dvfslab replay -h')")


def cmd_replay_governor(args: argparse.Namespace) -> int:
    from dvfslab.traces.replay import replay_governor

    if not args.window_ms > 0:
        raise ConfigError(f"--window-ms: expected a positive number of ms, got {args.window_ms}")
    if args.scan is not None:
        return _scan(args)
    report = replay_governor(
        args.file, args.platform, args.governor, window_ms=args.window_ms, tsc_khz=args.tsc_khz
    )
    if args.json:
        print_json(report)
        return 0
    n = report["decisions"]
    print(
        f"{args.file}: {args.governor} on {args.platform}, {report['recorded_changes']} recorded "
        f"and {report['model_changes']} model frequency changes, {n} decisions"
    )
    if n == 0:
        print(f"exact OPP n/a, within one OPP n/a: {_no_decision(report)}")
    else:
        print(
            f"exact OPP {report['exact_match']:.0%}, within one OPP "
            f"{report['within_one_opp']:.0%}, unexplained {report['unexplained']}"
        )
    t = report["timing_ms"]
    if any(c["recorded_s"] is not None and c["model_s"] is not None for c in report["changes"]):
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
            "-" if c["recorded_khz"] is None else mhz(c["recorded_khz"]),
            "-" if c["model_s"] is None else f"{c['model_s']:.6f}",
            "-" if c["model_khz"] is None else mhz(c["model_khz"]),
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


def _no_decision(report: dict[str, Any]) -> str:
    """Why a replay judged nothing."""
    warm, model = len(report["warm_up"]), report["model_changes"]
    if not report["recorded_changes"] and not warm:
        why = "the recording has no frequency change"
    else:
        why = f"its {warm} recorded changes all fell in a policy's warm-up"
    if model:
        why += f"; the model's {model} changes fell in warm-up or at the recording's end"
    else:
        why += "; the model made none"
    return f"no decision to judge ({why})"


def cmd_replay_workload(args: argparse.Namespace) -> int:
    from dvfslab.traces.compare import replay_workload
    from dvfslab.traces.read import read_trace
    from dvfslab.traces.workload import rtapp_for

    trace = read_trace(args.file, tsc_khz=args.tsc_khz)
    if args.rtapp:
        text = rtapp_for(args.file, args.platform, trace.tsc_khz)
        replace_atomically(
            Path(args.rtapp), lambda tmp: Path(tmp).write_text(text, encoding="utf-8")
        )
    report = replay_workload(trace, args.platform, args.governor, seed=args.seed)
    if args.json:
        print_json(report)
        return 0
    print(f"{args.file}: {report['tasks']} tasks over {report['span_s']:.3f} s, on {args.platform}")
    for warning in report["conversion"]["warnings"]:
        print(f"note: {warning}")
    columns = {"recording": report["recorded"], **report["runs"]}
    kinds = sorted({k for f in columns.values() for k in f["busy_share"]})
    rows = []
    for name, f in columns.items():
        act = f["activation_ms"]
        shares = [f"{100 * f['busy_share'].get(k, 0.0):.0f}%" for k in kinds]
        residency = "; ".join(
            f"{k} "
            + ", ".join(
                f"{mhz(khz)} {100 * share:.0f}%"
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
                "-" if act["median"] is None else f"{act['median']:.2f}",
                "-" if act["p90"] is None else f"{act['p90']:.2f}",
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


def _scan_values(text: str) -> tuple[str, list[float]]:
    """`KEY=START:STOP:STEP` as the key and its values, STOP included."""
    bad = ConfigError(
        f"--scan {text!r}: expected KEY=START:STOP:STEP with STEP > 0 and STOP >= START, "
        "e.g. rate_limit_us=10000:100000:1000"
    )
    key, _, span = text.partition("=")
    try:
        start, stop, step = (float(x) for x in span.split(":"))
    except ValueError:
        raise bad from None
    if not key or not all(map(math.isfinite, (start, stop, step))) or step <= 0 or stop < start:
        raise bad
    count = int((stop - start) / step + 1e-9) + 1
    if count > 1000:
        raise ConfigError(f"--scan {text!r}: {count} values; at most 1000")
    return key, [start + i * step for i in range(count)]


def _scan(args: argparse.Namespace) -> int:
    from dvfslab.traces.replay import scan_tunable

    key, values = _scan_values(args.scan)
    found = scan_tunable(
        args.file,
        args.platform,
        args.governor,
        key,
        values,
        window_ms=args.window_ms,
        tsc_khz=args.tsc_khz,
    )
    if args.json:
        print_json(found)
        return 0
    print(f"{args.file}: {args.governor} on {args.platform}, {key} over {len(values)} values")
    rows = []
    for p in found["policies"]:
        fits = p["fits"]
        where = _ranges(fits, found["values"]) if fits else "none"
        if not p["judged"]:
            where = "no judged change"
        rows.append([f"policy{p['first_cpu']}", p["judged"], where])
    print_table(["policy", "judged changes", f"{key} that reproduces them"], rows)
    chosen = [
        f"policy{p['first_cpu']}.{key}={p['fits'][len(p['fits']) // 2]}"
        for p in found["policies"]
        if p["fits"]
    ]
    if chosen:
        print(f"\ne.g. -g '{args.governor},{','.join(chosen)}'")
    return 0


def _ranges(fits: list[Any], values: list[Any]) -> str:
    """The fitting values as runs of neighbours in the scanned list: `76000-85000, 90000`."""
    index = {v: i for i, v in enumerate(values)}
    runs: list[list[Any]] = []
    for v in fits:
        if runs and index[v] == index[runs[-1][-1]] + 1:
            runs[-1].append(v)
        else:
            runs.append([v])
    return ", ".join(f"{r[0]}-{r[-1]}" if len(r) > 1 else f"{r[0]}" for r in runs)
