"""A recorded trace as a workload: each task's runs, sleeps and wake-ups, written as an rt-app
file that the simulator runs under any governor (closed loop), and the figures that set a
simulation beside its recording (docs/traces.md).

Each task of the trace becomes an rt-app thread that replays what it did:

- a run is the work the task did between being switched in and out: its time scaled by the
  CPU's capacity and the recorded frequency, in µs of the biggest CPU at its top frequency
  (rt-app's `run` with `calibration` on that CPU);
- a block ends with the wake-up that ended it: a `sem_wait` on the task's own semaphore when
  another task of the trace woke it (that task does a `sem_post` at the same point of its own
  run: who woke whom), a `sleep` of the recorded time when an interrupt, a timer or the idle
  task did;
- RT tasks keep their priority (SCHED_FIFO), per-CPU kernel threads their CPU; a task first
  seen after the start starts then (`delay`).

Left out: the idle task, the stopper threads (`migration/N`) and schedutil's own kthreads
(`sugov:N`), which the simulated governor stands for.
"""

from __future__ import annotations

import bisect
import functools
import json
import os
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from dvfslab._core import ConfigError
from dvfslab.api import TRACE_PREFIX
from dvfslab.platforms import PlatformRef, describe_platform
from dvfslab.traces.read import Trace

PER_CPU_KTHREAD = re.compile(r"^(?:kworker/(\d+):|ksoftirqd/(\d+)$|watchdog/(\d+)$|cpuhp/(\d+)$)")
"""Kernel threads bound to one CPU, the CPU in the name."""
LEFT_OUT = re.compile(r"^(?:migration/\d+|sugov:\d+)$")
"""Threads the simulation stands for itself: the stoppers, schedutil's kthreads."""
DEVLIB_FREQUENCY = r"cpu_frequency_devlib:\s+state=(\d+)\s+cpu_id=(\d+)"
"""devlib's marker of a CPU's frequency, written where the kernel logged no change."""


@dataclass
class _Task:
    """One task of the recording while it is followed: its rt-app events so far and where it
    stands."""

    name: str
    prio: int
    cpu_bound: int | None
    events: list[tuple[str, Any]] = field(default_factory=list)
    start_s: float | None = None
    running_since: float | None = None
    running_cpu: int = -1
    blocked_since: float | None = None
    exited: bool = False
    carry_us: float = 0.0
    """Work below a whole µs, carried to the task's next run."""


def frequency_points(trace: Trace) -> pd.DataFrame:
    """Each CPU's known frequencies (time_s, cpu, freq_khz): its `cpu_frequency` events and the
    frequencies devlib writes as markers (`cpu_frequency_devlib: state=.. cpu_id=..`), which
    LISA's traces carry where the kernel logged no change."""
    rows = [trace.frequency[["time_s", "cpu", "freq_khz"]]]
    found = trace.markers["text"].astype(str).str.extract(DEVLIB_FREQUENCY)
    known = found.notna().all(axis=1)
    if known.any():
        rows.append(
            pd.DataFrame(
                {
                    "time_s": trace.markers["time_s"][known].astype(float),
                    "cpu": found[1][known].astype(int),
                    "freq_khz": found[0][known].astype(int),
                }
            )
        )
    return pd.concat(rows, ignore_index=True).sort_values("time_s", kind="stable")


class _Frequencies:
    """Each CPU's frequency over time (`frequency_points`); before the first known value, that
    value (else the CPU's top frequency)."""

    def __init__(self, trace: Trace, cpus: list[dict[str, Any]]) -> None:
        points = frequency_points(trace)
        self.times: dict[int, list[float]] = {}
        self.khz: dict[int, list[int]] = {}
        for cpu, info in enumerate(cpus):
            mine = points[points["cpu"] == cpu]
            if mine.empty:
                self.times[cpu], self.khz[cpu] = [float("-inf")], [info["max_khz"]]
            else:
                self.times[cpu] = [float(t) for t in mine["time_s"]]
                self.khz[cpu] = [int(k) for k in mine["freq_khz"]]

    def work_khz_s(self, cpu: int, t0: float, t1: float) -> float:
        """∫ frequency dt over [t0, t1] on `cpu`, in kHz·s (the first known value before it)."""
        times, khz = self.times[cpu], self.khz[cpu]
        i = max(bisect.bisect_right(times, t0) - 1, 0)
        total, t = 0.0, t0
        while t < t1:
            end = min(times[i + 1], t1) if i + 1 < len(times) else t1
            total += khz[i] * max(end - t, 0.0)
            t = max(end, t)
            i += 1
            if i >= len(times):
                total += khz[-1] * max(t1 - t, 0.0)
                break
        return total


def trace_to_rtapp(trace: Trace, platform: PlatformRef) -> dict[str, Any]:
    """The rt-app document that replays `trace`'s tasks on `platform` (its CPUs numbered as the
    trace numbers them)."""
    info = describe_platform(platform)
    cpus = _cpus(info)
    if trace.cpus > len(cpus):
        raise ConfigError(
            f"{trace.path}: the trace has {trace.cpus} CPUs, {info['id']} has {len(cpus)}"
        )
    if trace.switches.empty:
        raise ConfigError(f"{trace.path}: no sched_switch events: the tasks cannot be followed")
    reference = max(range(len(cpus)), key=lambda c: (cpus[c]["capacity"], -c))
    freqs = _Frequencies(trace, cpus)
    start = float(min([trace.switches["time_s"].min(), *trace.wakeups["time_s"].head(1)]))
    tasks: dict[int, _Task] = {}

    def task(pid: int, comm: str, prio: int) -> _Task | None:
        if pid == 0 or LEFT_OUT.match(comm):
            return None
        if pid not in tasks:
            m = PER_CPU_KTHREAD.match(comm)
            bound = next((int(g) for g in m.groups() if g is not None), None) if m else None
            tasks[pid] = _Task(f"{comm}-{pid}", prio, bound)
        return tasks[pid]

    def close_run(t: _Task, now: float) -> None:
        if t.running_since is None:
            return
        cpu = t.running_cpu
        # Capacity-seconds: what the CPU did, at its capacity scaled by the frequency it ran;
        # the reference CPU at its top frequency does its capacity's worth a second.
        work = (
            freqs.work_khz_s(cpu, t.running_since, now)
            * cpus[cpu]["capacity"]
            / cpus[cpu]["max_khz"]
        )
        us = work / cpus[reference]["capacity"] * 1e6 + t.carry_us
        whole = int(us)
        t.carry_us = us - whole
        if whole > 0:
            if t.events and t.events[-1][0] == "run":
                t.events[-1] = ("run", t.events[-1][1] + whole)
            else:
                t.events.append(("run", whole))
        t.running_since = now

    for kind, row in _events_in_order(trace):
        now = float(row.time_s)
        if kind == "switch":
            prev = task(int(row.prev_pid), str(row.prev_comm), int(row.prev_prio))
            if prev is not None and prev.running_since is not None:
                close_run(prev, now)
                prev.running_since = None
                after = _after_switch(str(row.prev_state))
                if after == "exited":
                    prev.exited = True
                elif after == "blocked":
                    prev.blocked_since = now
            nxt = task(int(row.next_pid), str(row.next_comm), int(row.next_prio))
            if nxt is not None and not nxt.exited:
                if nxt.start_s is None:
                    nxt.start_s = now
                nxt.running_since = now
                nxt.running_cpu = int(row.cpu)
        else:
            wakee = task(int(row.pid), str(row.comm), int(row.prio))
            if wakee is None:
                continue
            if wakee.start_s is None:
                # A task first seen waking: it starts now.
                wakee.start_s = now
                continue
            if wakee.blocked_since is None:
                continue
            waker = tasks.get(int(row.waker_pid))
            if waker is not None and waker.running_since is not None and waker is not wakee:
                close_run(waker, now)
                waker.events.append(("sem_post", f"wake_{int(row.pid)}"))
                wakee.events.append(("sem_wait", f"wake_{int(row.pid)}"))
            else:
                slept_us = round((now - wakee.blocked_since) * 1e6)
                if slept_us > 0:
                    wakee.events.append(("sleep", slept_us))
            wakee.blocked_since = None
    end = float(max(trace.switches["time_s"].max(), start))
    for t in tasks.values():
        close_run(t, end)
    return _document(tasks, start, reference)


def _after_switch(state: str) -> str:
    """What `prev_state` says of a task switched out: runnable (preempted), blocked or exited.
    Kernels print letters (R, R+, S, D, X, Z, I...); raw records of older ones a number: 0 is
    TASK_RUNNING, 1 and 2 sleeping, 16 to 128 the exit states, and a single bit from 256 up the
    "preempted" report value."""
    if state.isdigit():
        n = int(state)
        if n == 0 or (n >= 256 and n & (n - 1) == 0):
            return "runnable"
        return "exited" if n in (16, 32, 64, 128) else "blocked"
    if state.startswith("R"):
        return "runnable"
    return "exited" if state.startswith(("X", "Z")) else "blocked"


def _cpus(info: dict[str, Any]) -> list[dict[str, Any]]:
    by_cpu: dict[int, dict[str, Any]] = {}
    for p in info["policies"]:
        for cpu in p["cpus"]:
            by_cpu[cpu] = {"capacity": p["capacity"], "max_khz": p["max_khz"], "type": p["cluster"]}
    return [by_cpu[c] for c in sorted(by_cpu)]


def _events_in_order(trace: Trace) -> list[tuple[str, Any]]:
    """Switches and wake-ups by time; at equal times a wake-up first (it precedes the switch
    to the task it woke)."""
    switches = [("switch", r) for r in trace.switches.itertuples(index=False)]
    wakeups = [("wakeup", r) for r in trace.wakeups.itertuples(index=False)]
    return sorted(wakeups + switches, key=lambda e: (float(e[1].time_s), e[0] == "switch"))


def _document(tasks: dict[int, _Task], start: float, reference: int) -> dict[str, Any]:
    threads: dict[str, Any] = {}
    for t in tasks.values():
        if not any(kind == "run" for kind, _ in t.events):
            continue
        events: dict[str, Any] = {}
        for i, (kind, value) in enumerate(t.events):
            events[f"{kind}_{i}"] = value
        thread: dict[str, Any] = {"loop": 1, "delay": round(((t.start_s or start) - start) * 1e6)}
        if 0 <= t.prio < 100:
            thread.update(policy="SCHED_FIFO", priority=99 - t.prio)
        if t.cpu_bound is not None:
            thread["cpus"] = [t.cpu_bound]
        thread["phases"] = {"replay": {"loop": 1, **events}}
        threads[t.name] = thread
    # Semaphores no thread posts would leave their waiters asleep forever: such a wait becomes
    # nothing (the wake-up came from a task the replay left out).
    posted = {
        v
        for th in threads.values()
        for k, v in th["phases"]["replay"].items()
        if k.startswith("sem_post")
    }
    for th in threads.values():
        phase = th["phases"]["replay"]
        for k in [k for k, v in phase.items() if k.startswith("sem_wait") and v not in posted]:
            del phase[k]
    return {
        "global": {
            "duration": -1,
            "calibration": f"CPU{reference}",
            "default_policy": "SCHED_OTHER",
        },
        "tasks": threads,
    }


def rtapp_for(path: str | os.PathLike[str], platform: PlatformRef) -> str:
    """The rt-app text that replays the trace file at `path` on `platform`, converted once per
    file version and platform."""
    source = Path(path)
    try:
        stat = source.stat()
    except OSError:
        raise ConfigError(f"trace file {source} does not exist") from None
    return _rtapp_cached(str(source), stat.st_mtime_ns, stat.st_size, _platform_key(platform))


def _platform_key(platform: PlatformRef) -> str:
    return os.fspath(platform) if isinstance(platform, os.PathLike) else platform


@functools.lru_cache(maxsize=8)
def _rtapp_cached(path: str, mtime_ns: int, size: int, platform: str) -> str:
    from dvfslab.traces.read import read_trace

    return json.dumps(trace_to_rtapp(read_trace(path), platform), indent=1)


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


def _activations(trace: Trace, start_s: float, end_s: float) -> dict[str, float | int]:
    """Wake-up to the next block of the same task, in ms: count, median, 90th percentile."""
    woke: dict[int, float] = {}
    spans: list[float] = []
    for kind, row in _events_in_order(trace):
        t = float(row.time_s)
        if not start_s <= t <= end_s:
            continue
        if kind == "wakeup":
            woke.setdefault(int(row.pid), t)
        elif int(row.prev_pid) in woke and not str(row.prev_state).startswith("R"):
            spans.append((t - woke.pop(int(row.prev_pid))) * 1e3)
    if not spans:
        return {"count": 0, "median": 0.0, "p90": 0.0}
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
    from dvfslab.api import simulate
    from dvfslab.traces import ftrace
    from dvfslab.traces.read import parse_text, preset_cpu_map

    if not governors:
        raise ConfigError("replay workload needs at least one governor")
    types = preset_cpu_map(platform)
    text = rtapp_for(trace.path, platform)
    start = float(trace.switches["time_s"].min())
    end = float(trace.switches["time_s"].max())
    recorded = figures(trace, types, start, end)
    runs: dict[str, Any] = {}
    for governor in governors:
        result = simulate(
            platform, governor, f"{TRACE_PREFIX}{trace.path}", seed=seed, timeline=True
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
        "activation_median_ratio": sim["activation_ms"]["median"] / rec_act if rec_act else None,
    }
