"""How long woken tasks waited for a CPU: from each `sched_wakeup` to the task's next switch-in.

On a fair kernel a woken task waits at most a few slices of the tasks ahead of it; one that
waits hundreds of milliseconds while its CPU runs others is starved, as the recording kernel
starves tasks outside a task group spread over both CPUs (docs/recording.md). Two cases have no
known wait: a task whose next logged switch is its own switch-out was switched in unlogged (a
KVM guest's vCPU can lose every event its idle task logs), and one neither switched in nor out
by the end may be running unlogged, unless its CPU ran another task meanwhile: then it is still
waiting, and counts until the end.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np
import pandas as pd


def waits(trace: Any, start: float | None = None, end: float | None = None) -> pd.DataFrame:
    """One row per wake-up in [`start`, `end`] (a fork's first included) whose wait is known:
    `time_s`, `pid`, `comm`, `cpu` (the target), `wait_s` (to the switch-in, or to `end` for one
    `still_waiting`). `trace`: a `dvfslab.traces.read.Trace`; the window defaults to the
    trace's events."""
    sw, wk = trace.switches, trace.wakeups
    times = [df["time_s"] for df in (sw, wk) if len(df)]
    if start is None:
        start = min(float(t.min()) for t in times) if times else 0.0
    if end is None:
        end = max(float(t.max()) for t in times) if times else 0.0
    ins = _times_by_pid(sw["next_pid"], sw["time_s"])
    outs = _times_by_pid(sw["prev_pid"], sw["time_s"])
    busy = {
        int(cpu): np.sort(rows["time_s"].to_numpy(float))
        for cpu, rows in sw[sw["next_pid"] != 0].groupby("cpu")
    }
    empty = np.empty(0)
    rows = []
    for t, pid, comm, cpu in zip(wk["time_s"], wk["pid"], wk["comm"], wk["target_cpu"]):
        t, pid, cpu = float(t), int(pid), int(cpu)
        if not (start <= t <= end) or pid == 0:
            continue
        switch_in = _first(ins.get(pid, empty), t, inclusive=True)
        switch_out = _first(outs.get(pid, empty), t, inclusive=True)
        if switch_in is not None and (switch_out is None or switch_in <= switch_out):
            rows.append((t, pid, str(comm), cpu, min(switch_in, end) - t, switch_in > end))
        elif switch_out is None and _first(busy.get(cpu, empty), t, inclusive=False) is not None:
            rows.append((t, pid, str(comm), cpu, end - t, True))
    return pd.DataFrame(
        rows, columns=["time_s", "pid", "comm", "cpu", "wait_s", "still_waiting"]
    ).astype({"pid": int, "cpu": int, "wait_s": float, "still_waiting": bool})


def longest_wait(table: pd.DataFrame) -> dict[str, Any] | None:
    """The longest of `waits`' rows as {"ms", "comm", "still_waiting"}; None without one."""
    if table.empty:
        return None
    row = table.loc[table["wait_s"].idxmax()]
    return {
        "ms": float(row["wait_s"]) * 1e3,
        "comm": str(row["comm"]),
        "still_waiting": bool(row["still_waiting"]),
    }


def _times_by_pid(pids: Any, times: Any) -> dict[int, np.ndarray]:
    by_pid: dict[int, list[float]] = defaultdict(list)
    for pid, t in zip(pids, times):
        by_pid[int(pid)].append(float(t))
    return {pid: np.sort(np.asarray(ts)) for pid, ts in by_pid.items()}


def _first(times: np.ndarray, t: float, inclusive: bool) -> float | None:
    """The first of sorted `times` at or after `t` (`inclusive`), or after it."""
    i = int(np.searchsorted(times, t, side="left" if inclusive else "right"))
    return float(times[i]) if i < len(times) else None
