"""`dvfslab model check`: a benchmark model against a recording of the real benchmark."""

from __future__ import annotations

import argparse
import re
from typing import Any

from dvfslab._core import ConfigError
from dvfslab.cli.output import print_json
from dvfslab.cli.parser import add_json_flag, command
from dvfslab.report.printing import print_table


def register(commands: Any) -> None:
    p = command(
        commands,
        "model",
        "Check the benchmark models against recordings of the real benchmarks.",
        _cmd_model_help,
        "  dvfslab model list\n  dvfslab model check tbench-2\n  dvfslab model check --json",
    )
    sub = p.add_subparsers(title="commands", dest="model_command", metavar="COMMAND")
    command(sub, "list", "The shipped recordings.", cmd_model_list, "  dvfslab model list")
    check = command(
        sub,
        "check",
        "The same statistics on a recording and on its model's run, side by side, each "
        "within its tolerance or not (docs/recording.md).",
        cmd_model_check,
        "  dvfslab model check                   (every shipped recording)\n"
        "  dvfslab model check tbench-2 hackbench-pipe\n"
        "  dvfslab model check --seeds 3         (the model at seeds 0, 1 and 2)\n"
        "  dvfslab model check my-run.toml --json",
    )
    check.add_argument(
        "recordings",
        nargs="*",
        metavar="RECORDING",
        help="a shipped recording's name or a NAME.toml (default: every shipped recording)",
    )
    check.add_argument("--seed", type=int, default=0, help="the model run's seed (default 0)")
    check.add_argument(
        "--seeds",
        type=int,
        default=1,
        metavar="N",
        help="run the model at N seeds from --seed on and give, per statistic, the model's "
        "median and in how many seeds it was within tolerance (default 1): one seed is one draw "
        "of the run's chances, so compare totals between models over several",
    )
    check.add_argument(
        "--markdown",
        action="store_true",
        help="one summary row per recording, all the benchmark's tasks, as a Markdown table "
        "(the table in docs/recording.md)",
    )
    add_json_flag(check)


def _cmd_model_help(args: argparse.Namespace) -> int:
    raise ConfigError("model needs a command: list or check (see 'dvfslab model -h')")


def cmd_model_list(args: argparse.Namespace) -> int:
    from dvfslab.recordings import load_recording, shipped_recordings

    rows = []
    for name in shipped_recordings():
        rec = load_recording(name)
        runs = 1 + len(rec.repeats)
        rows.append([rec.name, rec.workload, rec.command, f"{rec.window_s:g} s", runs, rec.machine])
    print_table(["recording", "model", "command", "window", "runs", "machine"], rows)
    return 0


def cmd_model_check(args: argparse.Namespace) -> int:
    from dvfslab._progress import Progress
    from dvfslab.recordings import load_recording, shipped_recordings
    from dvfslab.recordings.check import check, check_seeds

    if args.seeds < 1:
        raise ConfigError(f"--seeds must be >= 1 (got {args.seeds})")
    names = args.recordings or shipped_recordings()
    recordings = [load_recording(name) for name in names]
    seeds = list(range(args.seed, args.seed + args.seeds))
    intro = _count(len(recordings), "recording") + (
        f", the model at {len(seeds)} seeds of each" if len(seeds) > 1 else ""
    )
    progress = Progress("model check", len(recordings) * len(seeds), unit="model runs", intro=intro)
    with progress.shown(enabled=progress.total > 1):
        if len(seeds) == 1:
            reports = []
            for rec in recordings:
                reports.append(check(rec, seed=args.seed))
                progress.advance()
        else:
            reports = [check_seeds(rec, seeds, progress) for rec in recordings]
    if args.json:
        print_json(reports[0] if len(args.recordings) == 1 else reports)
        return 0
    if args.markdown:
        print(markdown_summary(reports))
        return 0
    for report in reports:
        _print_report(report)
    return 0


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _within(report: dict[str, Any]) -> str:
    """'25 of 39', or over several seeds '25, 25, 35 of 39'."""
    within = report.get("within_by_seed", [report.get("within")])
    return f"{', '.join(str(w) for w in within)} of {report['judged']}"


def _print_report(report: dict[str, Any]) -> None:
    seeds = report.get("seeds")
    over = f" (model seeds {seeds[0]}-{seeds[-1]})" if seeds else ""
    print(
        f"\n{report['recording']}: model {report['workload']} on {report['platform']}, per "
        f"operation = per {report['operations_unit']}; {_within(report)} judged statistics "
        f"within tolerance{over}"
    )
    rec_ops = report["recorded"]
    models = report.get("by_seed", [report])
    model_ops = ", ".join(f"{m['model']['operations']:,.0f}" for m in models)
    counted = ", ".join(f"{m['model']['operations_reported']:,.0f}" for m in models)
    print(
        f"operations: {report['operations_counted']}: recorded {rec_ops['operations']:,.0f} "
        f"(reported {rec_ops['operations_reported']:,.0f}), model {model_ops} (counted {counted})"
    )
    if report.get("autogroup") == "on" and not re.search(
        r"[:,]autogroup=1(,|$)", report["workload"]
    ):
        print(
            "recorded with autogroup on, modelled without task groups: add autogroup=1 to its "
            "workload to model them (docs/recording.md)"
        )
    repeats = report.get("repeats", 0)
    if repeats:
        print(
            f"recorded: the median of {repeats + 1} runs (the recording and its repeats); a model "
            "inside the runs' range is within tolerance too"
        )
    rows = []
    for row in report["rows"]:
        if row["recorded"] is None and row["model"] is None:
            continue
        values = [row["role"], row["label"], _fmt(row["recorded"])]
        if repeats:
            known = [v for v in row["recorded_runs"] if v is not None]
            values.append(f"{_fmt(min(known))} to {_fmt(max(known))}" if known else "-")
        values.append(_fmt(row["model"]))
        verdict = row["verdict"]
        if row.get("in_runs_range_only"):
            verdict = "ok, in the runs' range"
        if row.get("in_sampling_interval_only"):
            verdict = "ok, within sampling"
        if "too_few_samples" in row:
            verdict = f"reported: over {row['too_few_samples']} events"
        if seeds:
            known = [v for v in row["model_by_seed"] if v is not None]
            values.append(f"{_fmt(min(known))} to {_fmt(max(known))}" if known else "-")
            if row["judged_seeds"]:
                verdict = f"ok in {row['within_seeds']} of {row['judged_seeds']}"
                if row.get("in_runs_range_only_seeds"):
                    verdict += f", {row['in_runs_range_only_seeds']} in the runs' range"
                if row.get("in_sampling_interval_only_seeds"):
                    verdict += f", {row['in_sampling_interval_only_seeds']} within sampling"
        rows.append([*values, row["tolerance"], verdict])
    model = ["model median", "over the seeds"] if seeds else ["model"]
    recorded = ["recorded", "over the runs"] if repeats else ["recorded"]
    print_table(
        ["role", "statistic", *recorded, *model, "tolerance", "verdict"],
        rows,
        right={"recorded", "model", "model median"},
    )


SUMMARY = (
    ("cpu_cycles_per_op", "CPU cycles/op"),
    ("switch_outs_per_op", "switch-outs/op"),
    ("preempted_per_op", "preempted/op"),
    ("wakeups_per_op", "wake-ups/op"),
    ("sleep_d_pct", "sleeps in D %"),
)


def markdown_summary(reports: list[dict[str, Any]]) -> str:
    """Per recording, the whole benchmark's main statistics, recorded → model."""
    from dvfslab.recordings.behaviour import ALL
    from dvfslab.recordings.check import statistic

    head = ["recording", "within tolerance", *(label for _, label in SUMMARY), "woken mostly from"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for report in reports:
        # Over several seeds, the first seed's model (the table's values are one run's); the
        # recorded side as judged (the median of the runs where the recording has repeats).
        model = report.get("by_seed", [report])[0]["model"]["roles"]["all"]
        recorded = {
            row["statistic"]: row["recorded"] for row in report["rows"] if row["role"] == ALL
        }
        m = {key: statistic(model, key) for key in recorded}
        cells = [report["recording"], _within(report)]
        cells += [f"{_fmt(recorded[key])} → {_fmt(m[key])}" for key, _ in SUMMARY]
        cells.append(f"{_top_context(recorded)} → {_top_context(m)}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _top_context(stats: dict[str, Any]) -> str:
    """The most common wake-up context of statistics keyed as the check's rows are."""
    prefix = "wakeup_context_pct."
    shares = {
        k[len(prefix) :]: v for k, v in stats.items() if k.startswith(prefix) and v is not None
    }
    if not shares:
        return "-"
    name, pct = max(shares.items(), key=lambda kv: kv[1])
    return f"{name} {pct:.0f}%"


def _fmt(value: float | None) -> str:
    if value is None:
        return "-"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.3g}"
