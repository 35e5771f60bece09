"""The context switches the kernel counts for every task without tracing
(`/proc/PID/task/TID/status`: `voluntary_ctxt_switches`, a block in S or D, and
`nonvoluntary_ctxt_switches`, a preemption). `dvfslab record --window` reads every task's over
as long a stretch just before its window as the window is long, and over the window itself, and
writes both, by comm, into its header; `dvfslab model check` then shows how often the
benchmark's tasks were preempted untraced, beside the model. Tracing is not free: each event
costs the task running when it is logged, and where two tasks take turns the wake-up preemption
between them can turn on a microsecond (docs/recording.md)."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

Counts = dict[str, tuple[int, int]]
"""comm -> (voluntary, involuntary) switches."""

PROC = Path("/proc")
HEADER = re.compile(r"^# switches (untraced|traced) over ([0-9.]+) s: (\{.*\})$")


def machine_tasks(proc: Path = PROC) -> dict[int, tuple[str, int, int]]:
    """Every thread on the machine: tid -> (comm, voluntary, involuntary); the command's and
    the others', since a benchmark's server may run in a session of its own (tbench_srv,
    PostgreSQL). A task that exits while it is read is left out."""
    tasks: dict[int, tuple[str, int, int]] = {}
    for status in proc.glob("[0-9]*/task/[0-9]*/status"):
        counts = _status_counts(status)
        if counts is not None:
            tasks[int(status.parent.name)] = counts
    return tasks


def _status_counts(status: Path) -> tuple[str, int, int] | None:
    try:
        lines = dict(
            line.split(":\t", 1) for line in status.read_text().splitlines() if ":\t" in line
        )
        return (
            lines["Name"],
            int(lines["voluntary_ctxt_switches"]),
            int(lines["nonvoluntary_ctxt_switches"]),
        )
    except (OSError, KeyError, ValueError):
        return None


def between(
    before: dict[int, tuple[str, int, int]], after: dict[int, tuple[str, int, int]]
) -> Counts:
    """The switches from `before` to `after` (two `machine_tasks` readings), summed by comm
    over the tasks that switched: a task first seen in `after` counts from its start; one gone
    by then is not counted (its last switches are not known)."""
    counts: dict[str, list[int]] = {}
    for tid, (comm, voluntary, involuntary) in after.items():
        _, v0, i0 = before.get(tid, (comm, 0, 0))
        if (voluntary, involuntary) == (v0, i0):
            continue
        total = counts.setdefault(comm, [0, 0])
        total[0] += voluntary - v0
        total[1] += involuntary - i0
    return {comm: (v, i) for comm, (v, i) in sorted(counts.items())}


def header_line(label: str, seconds: float, counts: Counts) -> str:
    """The header line of a recording that holds `counts` (`label`: untraced or traced)."""
    data = {comm: list(pair) for comm, pair in counts.items()}
    return f"# switches {label} over {seconds:.3f} s: {json.dumps(data, sort_keys=True)}\n"


def read_header(text: str) -> dict[str, tuple[float, Counts]]:
    """The switch counts a recording's header holds, by label; none in a recording made
    without them (a whole run traced, or by an older `dvfslab record`)."""
    found: dict[str, tuple[float, Counts]] = {}
    for line in io.StringIO(text):  # the header only: a trace may be hundreds of megabytes
        if not line.startswith(("#", "cpus=")):
            break
        m = HEADER.match(line.rstrip("\n"))
        if m:
            counts = {comm: (int(v), int(i)) for comm, (v, i) in json.loads(m[3]).items()}
            found[m[1]] = (float(m[2]), counts)
    return found
