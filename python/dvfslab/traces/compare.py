"""A recorded workload run again under governors (`dvfslab replay workload`), and the figures
that set a run beside its recording: per CPU type its share of the busy time and its time at
each frequency, and the tasks' activations (docs/traces.md). A recording and a simulation's own
trace are measured the same way, from their ftrace tables.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

import pandas as pd

from dvfslab._core import ConfigError
from dvfslab.api import TRACE_PREFIX
from dvfslab.platforms import PlatformRef
from dvfslab.traces.read import Trace
from dvfslab.traces.workload import conversion_notes, events_in_order, frequency_points, rtapp_for


def figures(
    trace: Trace, cpu_types: dict[int, str], start_s: float, end_s: float
) -> dict[str, Any]:
    """What a run of the workload looks like, for a recording or a simulation's trace alike:
    per CPU type its share of the busy time and its time at each frequency, and the tasks'
    activation durations (wake-up to block)."""
    busy: dict[str, float] = defaultdict(float)
    sw = trace.switches.sort_values("time_s", kind="stable")
    for cpu, rows in sw.groupby("cpu"):
        times = [*rows["time_s"].astype(float), end_s]
        for t0, t1, pid in zip(times, times[1:], rows["next_pid"]):
            if int(pid) != 0:
                busy[cpu_types.get(int(cpu), "?")] += max(min(t1, end_s) - max(t0, start_s), 0.0)
    total_busy = sum(busy.values())
    residency: dict[str, dict[int, float]] = {}
    for cpu, rows in frequency_points(trace).groupby("cpu"):
        kind = cpu_types.get(int(cpu), "?")
        if kind in residency:
            continue  # one CPU per type: a cluster shares its frequency
        # Before its first known value a CPU ran that value, as far as the trace tells.
        times = [start_s, *rows["time_s"].astype(float).iloc[1:], end_s]
        spent: dict[int, float] = defaultdict(float)
        for t0, t1, khz in zip(times, times[1:], rows["freq_khz"]):
            spent[int(khz)] += max(min(t1, end_s) - max(t0, start_s), 0.0)
        span = sum(spent.values())
        residency[kind] = {k: v / span for k, v in sorted(spent.items())} if span > 0 else {}
    return {
        "busy_share": {k: v / total_busy for k, v in sorted(busy.items())} if total_busy else {},
        "busy_s": total_busy,
        "residency": residency,
        "activation_ms": _activations(trace, start_s, end_s),
    }


def _activations(trace: Trace, start_s: float, end_s: float) -> dict[str, float | int | None]:
    """Wake-up to the next block of the same task, in ms: count, median, 90th percentile (None
    without any: a trace without sched_wakeup has no activation to time)."""
    woke: dict[int, float] = {}
    spans: list[float] = []
    for kind, row in events_in_order(trace):
        t = float(row.time_s)
        if not start_s <= t <= end_s:
            continue
        if kind == "wakeup":
            woke.setdefault(int(row.pid), t)
        elif int(row.prev_pid) in woke and not str(row.prev_state).startswith("R"):
            spans.append((t - woke.pop(int(row.prev_pid))) * 1e3)
    if not spans:
        return {"count": 0, "median": None, "p90": None}
    s = pd.Series(spans)
    return {"count": len(spans), "median": float(s.median()), "p90": float(s.quantile(0.9))}


def replay_workload(
    trace: Trace,
    platform: PlatformRef,
    governors: list[str],
    *,
    seed: int = 0,
) -> dict[str, Any]:
    """Run the recording's tasks (`trace_to_rtapp`) under each governor, and set each run's
    figures (`figures`) beside the recording's. The first governor is taken as the one that
    was recorded: its `error` is the model's own error on this workload."""
    from dvfslab.api import simulate_text
    from dvfslab.traces import ftrace
    from dvfslab.traces.read import parse_text, preset_cpu_map

    if not governors:
        raise ConfigError("replay workload needs at least one governor")
    types = preset_cpu_map(platform)
    text = rtapp_for(trace.path, platform, trace.tsc_khz)
    notes = conversion_notes(trace.path, platform, trace.tsc_khz)
    start = float(trace.switches["time_s"].min())
    end = float(trace.switches["time_s"].max())
    recorded = figures(trace, types, start, end)
    runs: dict[str, Any] = {}
    for governor in governors:
        result = simulate_text(
            platform, governor, text, f"{TRACE_PREFIX}{trace.path}", seed=seed, timeline=True
        )
        simulated = parse_text(ftrace.render(result), f"{governor} on {trace.path}")
        runs[governor] = {
            **figures(simulated, types, 0.0, result.sim_time_s),
            "sim_time_s": result.sim_time_s,
            "energy_j": result.energy_j,
            "run_stretch": result.metric.value,
        }
    first = runs[governors[0]]
    return {
        "trace": trace.path,
        "span_s": end - start,
        "tasks": len(json.loads(text)["tasks"]),
        "conversion": notes,
        "recorded": recorded,
        "runs": runs,
        "error": _error(first, recorded),
    }


def _error(sim: dict[str, Any], rec: dict[str, Any]) -> dict[str, Any]:
    """How far a run of the recorded governor is from the recording: busy time (ratio), each
    CPU type's busy share (difference), each type's frequency residency (total variation
    distance: half the summed absolute differences, 0 = same, 1 = disjoint), activations
    (ratio of medians)."""
    kinds = sorted(set(sim["busy_share"]) | set(rec["busy_share"]))
    residency = {}
    for kind in sorted(set(sim["residency"]) & set(rec["residency"])):
        a, b = sim["residency"][kind], rec["residency"][kind]
        residency[kind] = 0.5 * sum(abs(a.get(k, 0.0) - b.get(k, 0.0)) for k in set(a) | set(b))
    rec_act = rec["activation_ms"]["median"]
    return {
        "busy_ratio": sim["busy_s"] / rec["busy_s"] if rec["busy_s"] else None,
        "busy_share_diff": {
            k: sim["busy_share"].get(k, 0.0) - rec["busy_share"].get(k, 0.0) for k in kinds
        },
        "residency_distance": residency,
        "activation_median_ratio": (
            sim["activation_ms"]["median"] / rec_act
            if rec_act and sim["activation_ms"]["median"] is not None
            else None
        ),
    }
