"""`dvfslab trace summary`: what a recorded trace holds."""

from __future__ import annotations

import argparse
from typing import Any

from dvfslab._core import ConfigError
from dvfslab.cli.output import mhz, print_json
from dvfslab.cli.parser import add_json_flag, add_tsc_flag, command
from dvfslab.report.printing import print_table


def register(commands: Any) -> None:
    p = command(
        commands,
        "trace",
        "Read a recorded trace.",
        _cmd_trace_help,
        "  dvfslab trace summary trace.txt          (trace-cmd report output, or trace_pipe text)\n"
        "  dvfslab trace summary trace.dat --json   (needs trace-cmd installed)",
    )
    sub = p.add_subparsers(title="commands", dest="trace_command", metavar="COMMAND")
    summary = command(
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
    add_tsc_flag(summary)
    add_json_flag(summary)


def _cmd_trace_help(args: argparse.Namespace) -> int:
    raise ConfigError("trace needs a command: summary (see 'dvfslab trace -h')")


def cmd_trace_summary(args: argparse.Namespace) -> int:
    from dvfslab.traces.read import cpu_map, preset_cpu_map, read_trace

    types = None
    if args.cpus is not None:
        types = cpu_map(args.cpus)
    elif args.platform is not None:
        types = preset_cpu_map(args.platform)
    info = read_trace(args.file, tsc_khz=args.tsc_khz).summary(types)
    if args.json:
        print_json(info)
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
    lost = info["lost"]
    if lost["reports"]:
        per_cpu = ", ".join(f"CPU {c}: {n}" for c, n in lost["per_cpu"].items() if c >= 0)
        unknown = f", {lost['unknown']} reports without a count" if lost["unknown"] else ""
        print(
            f"lost: {lost['events']} events in {lost['reports']} [LOST EVENTS] reports"
            f"{unknown}{' (' + per_cpu + ')' if per_cpu else ''}: a ring buffer overflowed, "
            "the tables miss events there"
        )
    longest = info["longest_wait"]
    if longest is not None:
        still = ", still waiting at the end" if longest["still_waiting"] else ""
        print(
            f"longest wait for a CPU after a wake-up: {longest['ms']:,.1f} ms "
            f"({longest['comm']}{still})"
        )
    if info["tsc_khz"] is not None:
        khz = info["tsc_khz"]
        shown = f"{khz:.0f}" if float(khz).is_integer() else f"{khz}"
        print(f"timestamps: raw TSC counts at {shown} kHz, shown in seconds")
    rows = []
    for c in info["per_cpu"]:
        busy = "-" if c["busy_pct"] is None else f"{c['busy_pct']:.1f}"
        top = sorted(c["freq_residency_khz_pct"].items(), key=lambda kv: -kv[1])[:3]
        freqs = ", ".join(f"{mhz(khz)} {pct:.0f}%" for khz, pct in top) or "-"
        rows.append([c["cpu"], c["type"] or "-", busy, c["frequency_changes"], freqs])
    print()
    print_table(
        ["cpu", "type", "busy %", "freq changes", "time at frequency (top 3)"],
        rows,
        right={"cpu", "busy %", "freq changes"},
    )
    if info["idle_exits"]:
        print("\nwake-ups from idle, from another CPU's signal to the idle exit (upper bounds):")
        print_table(
            ["idle state", "wake-ups", "median us", "min us"],
            [[e["state"], e["wakeups"], e["median_us"], e["min_us"]] for e in info["idle_exits"]],
            right={"idle state", "wake-ups", "median us", "min us"},
        )
    return 0
