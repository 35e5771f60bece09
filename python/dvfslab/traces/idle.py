"""How long a recorded machine took to leave each idle state.

A CPU leaves idle when another one signals it: a wake-up logged elsewhere with this CPU as
`target_cpu`, or a run-queue update of this CPU logged elsewhere (a task enqueued on it by a
remote wake-up or a migration, `sched_pelt_cfs` / `sched_load_cfs_rq`). The time from the last
such signal of an idle period to the CPU's `cpu_idle` exit is the wake-up's cost: the
inter-processor interrupt, then the hardware leaving the state. The signal is logged before the
interrupt is sent, so each figure is an upper bound of the hardware's exit, and the smallest
ones are the closest.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd


def idle_exits(
    idle: pd.DataFrame, wakeups: pd.DataFrame, pelt: pd.DataFrame
) -> list[dict[str, Any]]:
    """Per idle state index the recording shows (a trace's `idle`, `wakeups` and `pelt`
    tables), the wake-ups signalled from another CPU: their count and the median and smallest
    time (µs) from the signal to the idle exit."""
    signals = _remote_signals(wakeups, pelt)
    by_state: dict[int, list[float]] = {}
    for cpu, periods in _idle_periods(idle).items():
        times = np.sort(signals.get(cpu, np.empty(0)))
        for state, entered, left in periods:
            # The last signal before the exit: an idle-load balancer that updates an idle
            # CPU's load from afar logs signals that wake nothing.
            last = np.searchsorted(times, left, side="right") - 1
            if last >= 0 and times[last] > entered:
                by_state.setdefault(state, []).append((left - times[last]) * 1e6)
    return [
        {
            "state": state,
            "wakeups": len(delays),
            "median_us": round(float(np.median(delays)), 1),
            "min_us": round(float(np.min(delays)), 1),
        }
        for state, delays in sorted(by_state.items())
    ]


def _remote_signals(wakeups: pd.DataFrame, pelt: pd.DataFrame) -> dict[int, np.ndarray]:
    """Per CPU, the times another CPU logged a wake-up or a run-queue update for it."""
    parts = []
    remote = wakeups[wakeups["target_cpu"] != wakeups["cpu"]]
    parts.append(pd.DataFrame({"cpu": remote["target_cpu"], "time_s": remote["time_s"]}))
    remote = pelt[pelt["cpu"] != pelt["logged_cpu"]]
    parts.append(pd.DataFrame({"cpu": remote["cpu"], "time_s": remote["time_s"]}))
    both = pd.concat(parts, ignore_index=True)
    return {int(cpu): group["time_s"].to_numpy() for cpu, group in both.groupby("cpu")}


def _idle_periods(idle: pd.DataFrame) -> dict[int, list[tuple[int, float, float]]]:
    """Per CPU, its idle periods as (state, entered, left), from `cpu_idle` entries and exits."""
    out: dict[int, list[tuple[int, float, float]]] = {}
    for cpu, events in idle.sort_values("time_s", kind="stable").groupby("cpu"):
        entered: tuple[int, float] | None = None
        for state, time_s in zip(events["state"], events["time_s"], strict=True):
            if state >= 0:
                entered = (int(state), float(time_s))
            elif entered is not None:
                out.setdefault(int(cpu), []).append((entered[0], entered[1], float(time_s)))
                entered = None
    return out
