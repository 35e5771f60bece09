"""A recorded trace as a workload: each task's runs, sleeps and wake-ups, written as an rt-app
file that the simulator runs under any governor (closed loop; docs/traces.md). Running it and
comparing with the recording is `dvfslab.traces.compare`.

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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from dvfslab._core import ConfigError
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
        first = max(bisect.bisect_right(times, t0) - 1, 0)
        total = 0.0
        for k in range(first, len(times)):
            start = t0 if k == first else times[k]
            if start >= t1:
                break
            end = min(times[k + 1], t1) if k + 1 < len(times) else t1
            total += khz[k] * (end - start)
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

    for kind, row in events_in_order(trace):
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


def events_in_order(trace: Trace) -> list[tuple[str, Any]]:
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
