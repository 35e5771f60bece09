"""`dvfslab record`: run a command under tracing on this machine and write its ftrace text."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from dvfslab.cli.output import print_json
from dvfslab.cli.parser import add_json_flag, command


def register(commands: Any) -> None:
    p = command(
        commands,
        "record",
        "Record a command's scheduling and frequency events on this Linux machine (root).",
        cmd_record,
        "  sudo dvfslab record -o tbench.txt -- tbench -t 10 2 127.0.0.1\n"
        "  sudo dvfslab record -o hb.txt --duration 5 -- hackbench -l 100000\n"
        "  sudo dvfslab record -o pg.txt --window 3:0.5 -- pgbench -S -T 8 bench\n"
        "  sudo dvfslab record --events sched/sched_switch,power/cpu_frequency -- make -j4\n"
        "then: dvfslab trace summary tbench.txt, dvfslab model check tbench.txt -w tbench:...",
    )
    p.add_argument(
        "-o", "--output", default="trace.txt", metavar="FILE", help="where (default trace.txt)"
    )
    p.add_argument(
        "--duration",
        type=float,
        metavar="S",
        help="stop the command after S seconds (SIGINT, then SIGTERM, then SIGKILL)",
    )
    p.add_argument(
        "--window",
        metavar="START:LENGTH",
        help="trace only LENGTH seconds from START seconds after the command starts (the "
        "command runs on): a steady slice of a long run",
    )
    p.add_argument(
        "--events",
        metavar="GROUP/NAME,...",
        help="the tracepoints to enable instead of the default set (see docs/recording.md)",
    )
    p.add_argument(
        "--buffer-kb",
        type=int,
        default=None,
        metavar="KB",
        help="ring buffer per CPU in KiB (default 131072, at most 2 GiB over all CPUs); when "
        "it fills, later events are dropped and counted",
    )
    add_json_flag(p, "print what was recorded as JSON")
    p.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD ARGS", help="the command")


def cmd_record(args: argparse.Namespace) -> int:
    from dvfslab.record import DEFAULT_EVENTS, RecordError, record

    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not cmd:
        raise RecordError("dvfslab record needs a command to run: dvfslab record -- CMD ARGS")
    events = DEFAULT_EVENTS if args.events is None else tuple(args.events.split(","))
    window = None if args.window is None else _window(args.window)
    try:
        rec = record(
            cmd,
            args.output,
            duration_s=args.duration,
            window=window,
            events=events,
            buffer_kb=args.buffer_kb,
        )
    except KeyboardInterrupt:
        print("error: interrupted; tracing switched off, nothing written", file=sys.stderr)
        return 130
    info = {
        "path": str(rec.path),
        "command": rec.command,
        "exit_status": rec.exit_status,
        "duration_s": round(rec.duration_s, 6),
        "bytes": rec.bytes_written,
        "clock": rec.clock,
        "events": rec.events,
        "missing_events": rec.missing_events,
        "lost_events": rec.lost_events,
        "stopped_by": rec.stopped_by,
        "window": rec.window,
        # With a window: the kernel's switch counts by comm, untraced and traced.
        "switches": {
            label: [round(seconds, 6), counts]
            for label, (seconds, counts) in (rec.switches or {}).items()
        },
    }
    if args.json:
        print_json(info)
    else:
        print(
            f"{rec.path}: {rec.bytes_written / 1e6:.1f} MB of events over {rec.duration_s:.2f} s "
            f"(clock {rec.clock}); the command exited with {rec.exit_status}"
            + (", stopped after --duration" if rec.stopped_by == "duration" else "")
        )
        if rec.missing_events:
            print(f"not in this kernel: {', '.join(rec.missing_events)}")
        if rec.lost_events:
            print(
                f"warning: {rec.lost_events} events were dropped (the ring buffer was full): "
                "raise --buffer-kb, trace a shorter --window or enable fewer events",
                file=sys.stderr,
            )
    # The command's own failure is the recording's: a benchmark that failed is no ground truth.
    return 0 if rec.exit_status == 0 or rec.stopped_by else 1


def _window(text: str) -> tuple[float, float]:
    from dvfslab.record import RecordError

    start, sep, length = text.partition(":")
    try:
        if not sep:
            raise ValueError
        return float(start), float(length)
    except ValueError:
        raise RecordError(
            f"--window {text!r}: expected START:LENGTH in seconds, e.g. 3:0.5"
        ) from None
