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
- a block with no recorded wake-up (a trace without `sched_wakeup`, or one lost) ends at the
  task's next switch-in: a `sleep` that then includes its wait for a CPU;
- RT tasks keep their priority (SCHED_FIFO), fair tasks their nice value (a `prio` of 100-139
  is nice -20..19), per-CPU kernel threads their CPU; a task first seen after the start starts
  then (`delay`).

Left out: the idle task, the stopper threads (`migration/N`) and schedutil's own kthreads
(`sugov:N`), which the simulated governor stands for. A run is the task's only when its own
switch-out ends it: a run whose switch-out is missing (the CPU switched from another task
next, the task was switched in elsewhere, or the recording ended) is dropped, and a task with
no such run at all is left out. Both are counted in the conversion's notes (`Conversion`).
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

from dvfslab._core import MAX_TASKS, ConfigError
from dvfslab.platforms import PlatformRef, describe_platform
from dvfslab.traces.read import PRIO_NICE_0, Trace

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
    """The CPU of its last switch-in; -1 before its first."""
    blocked_since: float | None = None
    exited: bool = False
    carry_us: float = 0.0
    """Work below a whole µs, carried to the task's next run."""
    runs: int = 0
    """Runs ended by the task's own switch-out."""


@dataclass
class Conversion:
    """A recording's tasks as an rt-app document, and what the conversion could not follow."""

    document: dict[str, Any]
    notes: dict[str, Any]
    """tasks (replayed), left_out (tasks switched in and never switched out: count and the
    first names), runs_dropped (runs whose switch-out is missing), wakeups (recorded, and
    taken at the next switch-in), lost (the trace's `[LOST N EVENTS]`), warnings (sentences)"""


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
    return convert(trace, platform).document


def convert(trace: Trace, platform: PlatformRef) -> Conversion:
    """`trace`'s tasks as rt-app threads on `platform`, with notes on what could not be
    followed (`Conversion.notes`)."""
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
    on_cpu: dict[int, int] = {}
    """The pid each CPU last switched to."""
    dropped = 0
    derived = 0

    done: list[_Task] = []
    """Tasks that exited, their pid free for another."""
    names: dict[str, int] = {}

    def task(pid: int, comm: str, prio: int) -> _Task | None:
        if pid == 0 or LEFT_OUT.match(comm):
            return None
        if pid in tasks and tasks[pid].exited:
            done.append(tasks.pop(pid))  # the pid reused by a new task
        if pid not in tasks:
            m = PER_CPU_KTHREAD.match(comm)
            bound = next((int(g) for g in m.groups() if g is not None), None) if m else None
            name = f"{comm}-{pid}"
            names[name] = names.get(name, 0) + 1
            if names[name] > 1:
                name = f"{name}.{names[name]}"
            tasks[pid] = _Task(name, prio, bound)
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

    def drop_run(pid: int | None) -> None:
        """The run of `pid` under way ends without its switch-out: not counted as work."""
        nonlocal dropped
        t = tasks.get(pid) if pid is not None else None
        if t is not None and t.running_since is not None:
            t.running_since = None
            t.blocked_since = None
            dropped += 1

    for kind, row in events_in_order(trace):
        now = float(row.time_s)
        if kind == "switch":
            cpu, prev_pid = int(row.cpu), int(row.prev_pid)
            if on_cpu.get(cpu, prev_pid) != prev_pid:
                drop_run(on_cpu[cpu])  # the CPU's last task was switched out unseen
            prev = task(prev_pid, str(row.prev_comm), int(row.prev_prio))
            if prev is not None and prev.start_s is not None:
                if prev.running_since is not None and prev.running_cpu == cpu:
                    close_run(prev, now)
                    prev.running_since = None
                    prev.runs += 1
                else:
                    drop_run(prev_pid)  # its switch-in here is missing
                after = _after_switch(str(row.prev_state))
                if after == "exited":
                    prev.exited = True
                elif after == "blocked":
                    prev.blocked_since = now
            next_pid = int(row.next_pid)
            on_cpu[cpu] = next_pid
            nxt = task(next_pid, str(row.next_comm), int(row.next_prio))
            if nxt is not None and not nxt.exited:
                drop_run(next_pid)  # still running elsewhere: that switch-out is missing
                if nxt.start_s is None:
                    nxt.start_s = now
                if nxt.blocked_since is not None:
                    # No wake-up recorded since it blocked: it woke by this switch-in.
                    slept_us = round((now - nxt.blocked_since) * 1e6)
                    if slept_us > 0:
                        nxt.events.append(("sleep", slept_us))
                    nxt.blocked_since = None
                    derived += 1
                nxt.running_since = now
                nxt.running_cpu = cpu
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
                waker.events.append(("sem_post", f"wake_{wakee.name}"))
                wakee.events.append(("sem_wait", f"wake_{wakee.name}"))
            else:
                slept_us = round((now - wakee.blocked_since) * 1e6)
                if slept_us > 0:
                    wakee.events.append(("sleep", slept_us))
            wakee.blocked_since = None
    # Runs still under way at the end have no switch-out: the recording stopped, or lost it.
    for pid in list(tasks):
        drop_run(pid)
    every = done + list(tasks.values())
    left_out = [t.name for t in every if t.runs == 0 and t.running_cpu >= 0]
    notes = _notes(trace, left_out, dropped, derived)
    document = _document(every, start, reference)
    if not document["tasks"]:
        raise ConfigError(
            f"{trace.path}: no task of the recording to replay: "
            + ("; ".join(notes["warnings"]) or "only the idle task, migration/N and sugov:N ran")
        )
    if len(document["tasks"]) > MAX_TASKS:
        raise ConfigError(
            f"{trace.path}: {len(document['tasks'])} tasks to replay; a run takes at most "
            f"{MAX_TASKS}: cut the recording into shorter time windows"
        )
    notes["tasks"] = len(document["tasks"])
    return Conversion(document, notes)


def _notes(trace: Trace, left_out: list[str], dropped: int, derived: int) -> dict[str, Any]:
    """What the conversion could not follow, as counts and sentences."""
    warnings = []
    lost = trace.lost_summary()
    if lost["reports"]:
        unknown = f" (and {lost['unknown']} reports without a count)" if lost["unknown"] else ""
        warnings.append(
            f"the recording lost {lost['events']} events{unknown} in {lost['reports']} "
            "[LOST EVENTS] reports (a ring buffer overflowed): tasks' runs and wake-ups are "
            "missing there"
        )
    if left_out:
        shown = ", ".join(left_out[:5]) + (", ..." if len(left_out) > 5 else "")
        warnings.append(
            f"tasks left out: {len(left_out)}, switched in and never switched out in the "
            f"recording ({shown})"
        )
    if dropped:
        warnings.append(
            f"runs dropped: {dropped}, whose switch-out is missing (events lost, or the "
            "recording ended while they ran)"
        )
    recorded = len(trace.wakeups)
    if recorded == 0 and derived:
        warnings.append(
            f"the recording has no sched_wakeup events: {derived} wake-ups are taken at the "
            "task's next switch-in (its sleeps include its wait for a CPU; who woke whom is "
            "unknown)"
        )
    elif derived:
        warnings.append(
            f"{derived} blocks had no recorded wake-up: taken at the task's next switch-in"
        )
    return {
        "left_out": {"count": len(left_out), "first": left_out[:10]},
        "runs_dropped": dropped,
        "wakeups": {"recorded": recorded, "at_switch_in": derived},
        "lost": lost,
        "warnings": warnings,
    }


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


def _document(tasks: list[_Task], start: float, reference: int) -> dict[str, Any]:
    threads: dict[str, Any] = {}
    for t in tasks:
        if not any(kind == "run" for kind, _ in t.events):
            continue
        events: dict[str, Any] = {}
        for i, (kind, value) in enumerate(t.events):
            events[f"{kind}_{i}"] = value
        thread: dict[str, Any] = {"loop": 1, "delay": round(((t.start_s or start) - start) * 1e6)}
        if 0 <= t.prio < 100:
            thread.update(policy="SCHED_FIFO", priority=99 - t.prio)
        elif 100 <= t.prio < 140 and t.prio != PRIO_NICE_0:
            thread["priority"] = t.prio - PRIO_NICE_0
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


def rtapp_for(
    path: str | os.PathLike[str], platform: PlatformRef, tsc_khz: float | None = None
) -> str:
    """The rt-app text that replays the trace file at `path` on `platform`, converted once per
    file version and platform. `tsc_khz`: the clock's rate when its timestamps are raw counts."""
    return _converted(path, platform, tsc_khz)[0]


def conversion_notes(
    path: str | os.PathLike[str], platform: PlatformRef, tsc_khz: float | None = None
) -> dict[str, Any]:
    """What converting the trace at `path` could not follow (`Conversion.notes`)."""
    notes: dict[str, Any] = json.loads(_converted(path, platform, tsc_khz)[1])
    return notes


def _converted(
    path: str | os.PathLike[str], platform: PlatformRef, tsc_khz: float | None
) -> tuple[str, str]:
    source = Path(path)
    try:
        stat = source.stat()
    except OSError:
        raise ConfigError(f"trace file {source} does not exist") from None
    return _rtapp_cached(
        str(source), stat.st_mtime_ns, stat.st_size, _platform_key(platform), tsc_khz
    )


def _platform_key(platform: PlatformRef) -> str:
    return os.fspath(platform) if isinstance(platform, os.PathLike) else platform


@functools.lru_cache(maxsize=8)
def _rtapp_cached(
    path: str, mtime_ns: int, size: int, platform: str, tsc_khz: float | None
) -> tuple[str, str]:
    """The rt-app text and the notes (JSON: the cache hands out no shared mutable value)."""
    from dvfslab.traces.read import read_trace

    done = convert(read_trace(path, tsc_khz=tsc_khz), platform)
    return json.dumps(done.document, indent=1), json.dumps(done.notes)
