"""How a benchmark runs, from a trace: the statistics `dvfslab model check` compares between a
recording of the real benchmark and the model's own trace, computed the same way on both.

Per role (the benchmark's kinds of task, named by a pattern on the task's comm) and for all of
them together:
- per operation (the benchmark's own count): CPU time in cycles, switch-outs (sleeping in S,
  in D, or preempted), wake-ups;
- run lengths (switch-in to switch-out), sleep lengths (switch-out asleep to the wake-up) and
  waits for a CPU (the wake-up to the switch-in), p10 / p50 / p90 in µs;
- where wake-ups come from: a softirq, a hard interrupt, a kernel thread, or a process (the
  context sched_waking was logged in, and the task current there);
- the share of wake-ups that stay on the waker's CPU (sched_wakeup's CPU against
  sched_waking's), and of those that found the task's previous CPU running another task, the
  share kept there (a guest that packs its vCPUs keeps them; mainline moves them to an idle
  CPU or to a synchronous waker's);
- of the wake-ups from a task on another CPU onto a CPU running another task, the share whose
  running task is switched out for the woken one within [`PREEMPTED_WITHIN_S`] (the kernel's
  reschedule reaches it by IPI; one that blocks first counts as not preempted);
- of the wake-ups logged on the CPU the task lands on while another task runs there (its own
  wake-up, or an interrupt's over it), the share that switches that task out for the woken
  one, and the mean time from the wake-up's sched_waking to that switch: a kernel without
  forced preemption switches where the waker's system call returns to user mode;
- forks and execs per second;
- the longest wait for a CPU after a wake-up of any task in the trace, the benchmark's or not:
  a task starved by the kernel (docs/recording.md) waits hundreds of milliseconds;
- how often a CPU whose task blocks, with a task waiting on another CPU, takes that task
  rather than idle (new-idle balancing; `dvfslab.traces.idle_pulls`), any task's.
Intervals cut by the trace's edges (a task already running at its start) are left out.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dvfslab.traces.idle_pulls import idle_pulls
from dvfslab.traces.read import Trace
from dvfslab.traces.waits import longest_wait, waits

KERNEL_THREAD = re.compile(
    r"^(kworker|ksoftirqd|kthreadd|rcu_|migration|kswapd|jbd2|xfsaild|kcompactd|khugepaged|"
    r"irq/|watchdog|cpuhp|idle_inject|kblockd|writeback|flush-|md\d|dm-|scsi_|nvme|loop\d)"
)
"""Comms of kernel threads: a wake-up from one of them is a kernel thread's, not a process's."""

ALL = "all"
"""The row for every task of the benchmark together."""

PREEMPTED_WITHIN_S = 50e-6
"""How soon after a wake-up from another CPU the woken task's CPU switches to it when the
wake-up preempted its running task: the reschedule IPI's trip, 25 µs at the median and 41 at
p90 on the recording guest (`vcpu_wake.resched_us`). A wake-up on the CPU itself that
preempts switches within a few microseconds, at the waker's return to user mode, and is held
to the same bound."""

STATES = ("S", "D", "R")
CONTEXTS = ("softirq", "hardirq", "kthread", "process")


@dataclass
class RoleStats:
    """One role's statistics over the window."""

    tasks: int = 0
    cpu_cycles: float = 0.0
    unlogged_runs: int = 0
    """Runs whose start went unlogged (no switch to the task, no wake-up onto its CPU since
    that went idle): their CPU time is the role's mean run's (`_runs_and_switches`)."""
    switch_outs: dict[str, int] = field(default_factory=lambda: dict.fromkeys(STATES, 0))
    preempted_by_outsider: int = 0
    """Preemptions whose next task is none of the benchmark's (a kernel thread, another
    process): what the benchmark's own tasks do not explain."""
    wakeups: int = 0
    runs_us: list[float] = field(default_factory=list)
    sleeps_us: list[float] = field(default_factory=list)
    waits_us: list[float] = field(default_factory=list)
    contexts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CONTEXTS, 0))
    same_cpu: int = 0
    placed: int = 0
    """Wake-ups whose waker CPU and target CPU are both known."""
    sleeps_same_cpu_us: list[float] = field(default_factory=list)
    sleeps_other_cpu_us: list[float] = field(default_factory=list)
    """Of `sleeps_us`, those whose wake-up put the task on its waker's CPU, and on another."""
    migrations: int = 0
    woken_on_busy_cpu: int = 0
    """Wake-ups whose task's previous CPU ran another task at its sched_waking."""
    kept_on_busy_cpu: int = 0
    """Of those, the ones whose sched_wakeup put the task back on that CPU."""
    irq_there_busy: int = 0
    """Of those wake-ups, the ones from an interrupt on that CPU itself."""
    kept_irq_there_busy: int = 0
    woken_onto_remote_busy: int = 0
    """Wake-ups from a task on another CPU onto a CPU running another task."""
    preempted_remote_busy: int = 0
    """Of those, the ones whose CPU switched from that task to the woken one within
    [`PREEMPTED_WITHIN_S`]."""
    woken_onto_local_busy: int = 0
    """Wake-ups logged on the woken task's CPU while another task runs there."""
    preempted_local_busy: int = 0
    """Of those, the ones whose CPU switched from that task to the woken one within
    [`PREEMPTED_WITHIN_S`]."""
    local_preempt_delays_us: list[float] = field(default_factory=list)
    """Of the preempting ones, from the wake-up's sched_waking to the switch, µs."""


def role_of_comm(roles: dict[str, re.Pattern[str]], comm: str) -> str | None:
    """The role whose pattern matches `comm`; a model task's `-N` suffix (its instance) is
    dropped first, so `tbench_srv-3` is a `tbench_srv`."""
    base = re.sub(r"-\d+$", "", comm)
    for role, pattern in roles.items():
        if pattern.search(base):
            return role
    return None


def behaviour(
    trace: Trace,
    roles: dict[str, str],
    operations: float,
    fixed_khz: int | None,
    window: tuple[float, float] | None = None,
) -> dict[str, Any]:
    """The statistics of `trace` within `window` (trace seconds; the whole trace by default)
    for the tasks whose comm matches `roles`, per operation of `operations` (the benchmark's
    count in the window). CPU time becomes cycles at each CPU's traced frequency, or at
    `fixed_khz` on a machine without cpufreq."""
    patterns = {role: re.compile(p) for role, p in roles.items()}
    start, end = window if window is not None else _span(trace)
    span_s = max(end - start, 1e-12)
    pid_role = pid_roles(trace, patterns)
    stats: dict[str, RoleStats] = defaultdict(RoleStats)
    for role in pid_role.values():
        stats[role].tasks += 1
        stats[ALL].tasks += 1
    freq_at = _frequency_lookup(trace, fixed_khz)

    _runs_and_switches(trace, pid_role, stats, freq_at, start, end)
    _wakeups(trace, pid_role, stats, start, end)
    _busy_previous_cpu(trace, pid_role, stats, start, end)
    _wakeup_preemptions(trace, pid_role, stats, start, end)
    longest = _waits(trace, pid_role, stats, start, end)
    _migrations(trace, pid_role, stats, start, end)
    forks, execs = _process_rates(trace, start, end)
    pulls = idle_pulls(trace, start, end)
    ops = max(operations, 1e-12)
    out: dict[str, Any] = {
        "window_s": span_s,
        "operations": operations,
        "operations_per_s": operations / span_s,
        "forks_per_s": forks / span_s,
        "execs_per_s": execs / span_s,
        "longest_wait": longest,
        "longest_wait_ms": None if longest is None else longest["ms"],
        "idle_pull_pct": _pct(pulls["pulled"], pulls["chances"]),
        "idle_pull_chances": pulls["chances"],
        "roles": {},
    }
    for role in [*roles, ALL]:
        s = stats[role]
        woken = sum(s.contexts.values())
        out["roles"][role] = {
            "tasks": s.tasks,
            "cpu_cycles_per_op": s.cpu_cycles / ops,
            "switch_outs_per_op": sum(s.switch_outs.values()) / ops,
            "preempted_per_op": s.switch_outs["R"] / ops,
            "preempted_outside_pct": _pct(s.preempted_by_outsider, s.switch_outs["R"]),
            "sleeps_s_per_op": s.switch_outs["S"] / ops,
            "sleeps_d_per_op": s.switch_outs["D"] / ops,
            "sleep_d_pct": _pct(s.switch_outs["D"], s.switch_outs["S"] + s.switch_outs["D"]),
            "wakeups_per_op": s.wakeups / ops,
            "run_us": quantiles(s.runs_us),
            "sleep_us": quantiles(s.sleeps_us),
            "wait_us": quantiles(s.waits_us),
            "wakeup_context_pct": {c: _pct(n, woken) for c, n in s.contexts.items()},
            "same_cpu_wakeup_pct": _pct(s.same_cpu, s.placed),
            "sleep_same_cpu_us": quantiles(s.sleeps_same_cpu_us),
            "sleep_other_cpu_us": quantiles(s.sleeps_other_cpu_us),
            "kept_on_busy_cpu_pct": _pct(s.kept_on_busy_cpu, s.woken_on_busy_cpu),
            "kept_irq_there_pct": _pct(s.kept_irq_there_busy, s.irq_there_busy),
            "remote_preempt_pct": _pct(s.preempted_remote_busy, s.woken_onto_remote_busy),
            "local_preempt_pct": _pct(s.preempted_local_busy, s.woken_onto_local_busy),
            "local_preempt_delay_us": _mean(s.local_preempt_delays_us),
            "migrations_per_op": s.migrations / ops,
            "unlogged_run_pct": _pct(s.unlogged_runs, s.unlogged_runs + len(s.runs_us)),
            # How many events each share and median is over.
            "samples": {
                "wakeups": woken,
                "blocks": s.switch_outs["S"] + s.switch_outs["D"],
                "runs": len(s.runs_us),
                "sleeps": len(s.sleeps_us),
                "woken_on_busy_cpu": s.woken_on_busy_cpu,
                "irq_there_busy": s.irq_there_busy,
                "woken_onto_remote_busy": s.woken_onto_remote_busy,
                "woken_onto_local_busy": s.woken_onto_local_busy,
            },
        }
    return out


def _busy_previous_cpu(
    trace: Trace, pid_role: dict[int, str], stats: dict[str, RoleStats], start: float, end: float
) -> None:
    """Wake-ups whose task's previous CPU (sched_waking's `target_cpu`, the CPU the task last
    ran on) was running another task, and whether sched_wakeup kept the task there. What a CPU
    runs is its last switch's next task, or any task that logs an event on it since (a vCPU
    can lose its switches from idle)."""
    sw, wg, wk = trace.switches, trace.wakings, trace.wakeups
    # (time, kind, cpu, pid, the woken pid, its previous CPU, an interrupt's wake-up); kind 0 a
    # switch (pid: the task switched in), 1 a sched_waking (pid: the waker), 2 a sched_wakeup
    # (cpu: its target).
    events = sorted(
        [
            (float(t), 0, int(c), int(n), -1, -1, False)
            for t, c, n in zip(sw["time_s"], sw["cpu"], sw["next_pid"])
        ]
        + [
            (float(t), 1, int(c), int(w), int(p), int(prev), ctx in ("softirq", "hardirq", "nmi"))
            for t, c, w, p, prev, ctx in zip(
                wg["time_s"],
                wg["cpu"],
                wg["waker_pid"],
                wg["pid"],
                wg["target_cpu"],
                wg["context"],
            )
        ]
        + [
            (float(t), 2, int(target), int(p), -1, -1, False)
            for t, target, p, new in zip(wk["time_s"], wk["target_cpu"], wk["pid"], wk["new"])
            if not new
        ],
        key=lambda e: (e[0], e[1]),
    )
    running: dict[int, int] = {}  # cpu -> pid (0: idle)
    # pid -> its previous CPU, busy at its sched_waking, and whether an interrupt there woke it
    found_busy: dict[int, tuple[int, bool]] = {}
    for t, kind, cpu, pid, woken, prev, interrupt in events:
        if kind == 0:
            running[cpu] = pid
        elif kind == 1:
            if pid != 0:
                running[cpu] = pid  # the waker, or the task an interrupt found running
            found_busy.pop(woken, None)
            if woken in pid_role and running.get(prev, 0) not in (0, woken):
                found_busy[woken] = (prev, interrupt and cpu == prev)
        else:
            busy = found_busy.pop(pid, None)
            if busy is None or not (start <= t <= end):
                continue
            prev, there = busy
            kept = cpu == prev
            for r in (pid_role[pid], ALL):
                stats[r].woken_on_busy_cpu += 1
                stats[r].kept_on_busy_cpu += kept
                stats[r].irq_there_busy += there
                stats[r].kept_irq_there_busy += there and kept


def _wakeup_preemptions(
    trace: Trace, pid_role: dict[int, str], stats: dict[str, RoleStats], start: float, end: float
) -> None:
    """Wake-ups of the benchmark's tasks onto a CPU running another task, and whether that CPU
    then switched from its task, runnable, to the woken one within [`PREEMPTED_WITHIN_S`]:
    those a task on another CPU logged (sched_wakeup on the waker's CPU), and those logged on
    the CPU itself (the running task's own, or an interrupt's over it)."""
    sw, wk, wg = trace.switches, trace.wakeups, trace.wakings
    # (time, kind, cpu, pid, other pid, flag); kind 0 a wake-up (cpu: its target, other: the
    # waker, flag: logged on another CPU), 1 a switch (cpu: where, pid: next, other: prev,
    # flag: prev runnable), -1 a sched_waking (pid: the woken). A wake-up goes before a switch
    # at the same time: the model logs a preempting wake-up on its own CPU and the switch it
    # causes at one instant, and a recording's microseconds often do.
    events = sorted(
        [(float(t), -1, -1, int(p), -1, False) for t, p in zip(wg["time_s"], wg["pid"])]
        + [
            (float(t), 1, int(c), int(n), int(p), str(st).startswith("R"))
            for t, c, n, p, st in zip(
                sw["time_s"], sw["cpu"], sw["next_pid"], sw["prev_pid"], sw["prev_state"]
            )
        ]
        + [
            (float(t), 0, int(target), int(p), int(w), int(logged) != int(target))
            for t, logged, target, p, w, new in zip(
                wk["time_s"], wk["cpu"], wk["target_cpu"], wk["pid"], wk["waker_pid"], wk["new"]
            )
            if not new
        ],
        key=lambda e: (e[0], e[1]),
    )
    running: dict[int, int] = {}  # cpu -> pid (0: idle)
    # cpu -> (when, running pid, woken pid, from another CPU): the wake-up that the CPU's next
    # switch answers. A wake-up on the CPU itself is answered at once, so one that another
    # wake-up follows before the switch did not preempt; of wake-ups from other CPUs the last
    # before the switch counts (the reschedule's IPI is on its way). What a CPU runs is read
    # from switches alone; a vCPU that loses its switches from idle loses them in the model's
    # trace too (`drop_idle_events`), so both sides count alike.
    pending: dict[int, tuple[float, int, int, bool, float]] = {}
    waking: dict[int, float] = {}  # pid -> its last sched_waking

    def count(woken: int, remote: bool, preempted: bool, delay_s: float = 0.0) -> None:
        for r in (pid_role[woken], ALL):
            if remote:
                stats[r].woken_onto_remote_busy += 1
                stats[r].preempted_remote_busy += preempted
            else:
                stats[r].woken_onto_local_busy += 1
                stats[r].preempted_local_busy += preempted
                if preempted:
                    stats[r].local_preempt_delays_us.append(delay_s * 1e6)

    for t, kind, cpu, pid, other, flag in events:
        if kind == -1:
            waking[pid] = t
            continue
        if kind == 0:
            busy = running.get(cpu, 0) not in (0, pid)
            from_task = other != 0 or not flag
            if from_task and busy and pid in pid_role and start <= t <= end:
                earlier = pending.get(cpu)
                if earlier is not None and not earlier[3]:
                    count(earlier[2], False, False)
                pending[cpu] = (t, running[cpu], pid, flag, waking.get(pid, t))
            continue
        seen = pending.pop(cpu, None)
        running[cpu] = pid
        if seen is None:
            continue
        when, was, woken, remote, woken_at = seen
        switched_to_it = other == was and flag and pid == woken
        count(woken, remote, switched_to_it and t - when <= PREEMPTED_WITHIN_S, t - woken_at)


def _migrations(
    trace: Trace, pid_role: dict[int, str], stats: dict[str, RoleStats], start: float, end: float
) -> None:
    """Each role's moves to another CPU (sched_migrate_task): wake-up placement and the
    balancers'."""
    m = trace.migrations
    inside = m[(m["time_s"] >= start) & (m["time_s"] <= end)]
    for pid in inside["pid"]:
        role = pid_role.get(int(pid))
        if role is not None:
            stats[role].migrations += 1
            stats[ALL].migrations += 1


def _span(trace: Trace) -> tuple[float, float]:
    times = [float(df["time_s"].min()) for df in (trace.switches, trace.wakeups) if len(df)]
    ends = [float(df["time_s"].max()) for df in (trace.switches, trace.wakeups) if len(df)]
    return (min(times), max(ends)) if times else (0.0, 0.0)


def pid_roles(trace: Trace, patterns: dict[str, re.Pattern[str]]) -> dict[int, str]:
    """Each pid's role, by the last comm the trace gives it (a comm changes at exec)."""
    comms: dict[int, str] = {}
    sw = trace.switches
    for pid, comm in zip(sw["prev_pid"], sw["prev_comm"]):
        comms[int(pid)] = comm
    for pid, comm in zip(sw["next_pid"], sw["next_comm"]):
        comms.setdefault(int(pid), comm)
    for pid, comm in zip(trace.wakeups["pid"], trace.wakeups["comm"]):
        comms.setdefault(int(pid), comm)
    out = {}
    for pid, comm in comms.items():
        role = role_of_comm(patterns, comm) if pid != 0 else None
        if role is not None:
            out[pid] = role
    return out


def _frequency_lookup(trace: Trace, fixed_khz: int | None) -> Any:
    """A function (cpu, t) -> kHz from the trace's cpu_frequency events, else `fixed_khz`."""
    freq = trace.frequency
    if len(freq) == 0:
        if fixed_khz is None:
            raise ValueError(
                "the trace has no cpu_frequency events: give the machine's fixed frequency"
            )
        return lambda cpu, t: fixed_khz
    per_cpu: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for cpu, rows in freq.groupby("cpu"):
        per_cpu[int(cpu)] = (rows["time_s"].to_numpy(float), rows["freq_khz"].to_numpy(float))

    def at(cpu: int, t: float) -> float:
        times, khz = per_cpu.get(cpu, (np.array([0.0]), np.array([fixed_khz or 0.0])))
        i = int(np.searchsorted(times, t, side="right")) - 1
        return float(khz[max(i, 0)])

    return at


def _runs_and_switches(
    trace: Trace,
    pid_role: dict[int, str],
    stats: dict[str, RoleStats],
    freq_at: Any,
    start: float,
    end: float,
) -> None:
    """Run intervals (and their cycles) and switch-outs by state.

    A run whose start went unlogged is counted at its role's mean run's cycles: a task woken
    onto an idle vCPU whose idle loop took the wake-up itself (polling, before it halted)
    leaves neither its switch-in nor its wake-up in a guest's trace that loses the idle
    task's events (docs/recording.md); leaving those runs out would undercount the CPU per
    op by their share (the first netperf stream recording's receiver: 22% of its runs)."""
    running: dict[int, tuple[int, float]] = {}  # cpu -> (pid, since)
    logged_cycles: dict[str, list[float]] = defaultdict(list)
    woken = _wakeup_times(trace, pid_role)
    sw = trace.switches
    for t, cpu, prev, state, nxt in zip(
        sw["time_s"], sw["cpu"], sw["prev_pid"], sw["prev_state"], sw["next_pid"]
    ):
        t, cpu, prev, nxt = float(t), int(cpu), int(prev), int(nxt)
        role = pid_role.get(prev)
        if role is not None and start <= t <= end:
            kind = _switch_kind(str(state))
            if kind is not None:
                outsider = kind == "R" and nxt != 0 and nxt not in pid_role
                for r in (role, ALL):
                    stats[r].switch_outs[kind] += 1
                    stats[r].preempted_by_outsider += outsider
            began = running.get(cpu)
            if began is not None and began[0] == 0 and prev != 0:
                since = _unlogged_switch_in(woken.get(prev), cpu, began[1], t)
                if since is None and kind is not None:
                    stats[role].unlogged_runs += 1
                began = began if since is None else (prev, since)
            if began is not None and began[0] == prev:
                run_s = t - began[1]
                # A run that began before the window counts its CPU time from the window's start.
                cycles = (t - max(began[1], start)) * freq_at(cpu, began[1]) * 1e3
                if began[1] >= start:
                    logged_cycles[role].append(cycles)
                for r in (role, ALL):
                    stats[r].cpu_cycles += cycles
                    stats[r].runs_us.append(run_s * 1e6)
        running[cpu] = (nxt, t)
    for role in [r for r in stats if r != ALL]:
        unlogged = stats[role].unlogged_runs
        stats[ALL].unlogged_runs += unlogged
        # A role with no logged run has no mean to count its unlogged ones at: their CPU time
        # stays unknown, and its share of unlogged runs (100%) says so.
        if unlogged and logged_cycles[role]:
            estimate = unlogged * float(np.mean(logged_cycles[role]))
            for r in (role, ALL):
                stats[r].cpu_cycles += estimate
    # What was still running at the end counts as CPU time, not as a run.
    for cpu, (pid, since) in running.items():
        role = pid_role.get(pid)
        if role is not None and since < end:
            cycles = (end - max(since, start)) * freq_at(cpu, since) * 1e3
            for r in (role, ALL):
                stats[r].cpu_cycles += cycles


def _wakeup_times(
    trace: Trace, pid_role: dict[int, str]
) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Each role task's wake-ups (not a fork's first): their times, sorted, and target CPUs."""
    wk = trace.wakeups
    wk = wk[wk["pid"].isin(list(pid_role)) & ~wk["new"]].sort_values("time_s", kind="stable")
    return {
        int(pid): (rows["time_s"].to_numpy(float), rows["target_cpu"].to_numpy(int))
        for pid, rows in wk.groupby("pid")
    }


def _unlogged_switch_in(
    woken: tuple[np.ndarray, np.ndarray] | None, cpu: int, idle_since: float, t: float
) -> float | None:
    """The start of a task's run that ended at `t` on `cpu` with no logged switch to it: the
    CPU's last logged switch went to its idle task, at `idle_since`, and the switch from idle
    to the task went unlogged (a KVM guest's vCPU can lose every event its idle task logs
    outside interrupts, its `cpu_idle` exits and its switches from idle among them). The
    task began to run when it was woken onto the idle CPU: its latest wake-up there since
    `idle_since`. None without one."""
    if woken is None:
        return None
    times, cpus = woken
    i = int(np.searchsorted(times, t, side="right")) - 1
    while i >= 0 and times[i] >= idle_since:
        if cpus[i] == cpu:
            return float(times[i])
        i -= 1
    return None


def _switch_kind(state: str) -> str | None:
    """S sleeping, D uninterruptible, R preempted (R+ too); other states (exit) are not
    counted."""
    kind = state[:1]
    return kind if kind in STATES else None


def _wakeups(
    trace: Trace,
    pid_role: dict[int, str],
    stats: dict[str, RoleStats],
    start: float,
    end: float,
) -> None:
    """Wake-ups: their count, where they came from, where they landed, and sleep lengths."""
    # The sleep that each wake-up ends: the task's last switch-out asleep before it.
    sleeps: dict[int, list[float]] = defaultdict(list)
    sw = trace.switches
    for t, prev, state in zip(sw["time_s"], sw["prev_pid"], sw["prev_state"]):
        if int(prev) in pid_role and _switch_kind(str(state)) in ("S", "D"):
            sleeps[int(prev)].append(float(t))
    waking: dict[int, tuple[int, str]] = {}  # pid -> (waker CPU, context), the latest
    wg = trace.wakings
    wk = trace.wakeups
    events = sorted(
        [
            (float(t), 0, int(p), int(c), ctx, wc)
            for t, p, c, ctx, wc in zip(
                wg["time_s"], wg["pid"], wg["cpu"], wg["context"], wg["waker_comm"]
            )
        ]
        + [
            (float(t), 1, int(p), int(c), "", "")
            for t, p, c, new in zip(wk["time_s"], wk["pid"], wk["target_cpu"], wk["new"])
            if not new
        ],
        key=lambda e: (e[0], e[1]),
    )
    cursor: dict[int, int] = defaultdict(int)
    for t, is_wakeup, pid, cpu, ctx, waker_comm in events:
        role = pid_role.get(pid)
        if role is None:
            continue
        if not is_wakeup:
            waking[pid] = (cpu, _context(ctx, waker_comm))
            continue
        if not (start <= t <= end):
            continue
        roles = (role, ALL)
        for r in roles:
            stats[r].wakeups += 1
        origin = waking.pop(pid, None)
        if origin is not None:
            for r in roles:
                stats[r].contexts[origin[1]] += 1
                stats[r].placed += 1
                stats[r].same_cpu += origin[0] == cpu
        # The sleep this wake-up ends began at the last switch-out asleep before it.
        times = sleeps.get(pid, [])
        k = cursor[pid]
        while k < len(times) and times[k] <= t:
            k += 1
        cursor[pid] = k
        if k > 0 and times[k - 1] >= start:
            slept_us = (t - times[k - 1]) * 1e6
            for r in roles:
                rs = stats[r]
                rs.sleeps_us.append(slept_us)
                if origin is not None:
                    by_cpu = rs.sleeps_same_cpu_us if origin[0] == cpu else rs.sleeps_other_cpu_us
                    by_cpu.append(slept_us)


def _waits(
    trace: Trace,
    pid_role: dict[int, str],
    stats: dict[str, RoleStats],
    start: float,
    end: float,
) -> dict[str, Any] | None:
    """Each role task's known waits for a CPU after its wake-ups in the window, finished
    ones only, into its `waits_us` (`dvfslab.traces.waits`); returns the longest wait of any
    task, still waiting included."""
    table = waits(trace, start, end)
    finished = table[~table["still_waiting"]]
    for pid, wait_s in zip(finished["pid"], finished["wait_s"]):
        role = pid_role.get(int(pid))
        if role is not None:
            for r in (role, ALL):
                stats[r].waits_us.append(float(wait_s) * 1e6)
    return longest_wait(table)


def _context(ctx: str, waker_comm: str) -> str:
    """Where a wake-up came from: its interrupt context, else a kernel thread or a process."""
    if ctx in ("softirq", "hardirq"):
        return ctx
    if ctx == "nmi":
        return "hardirq"
    return "kthread" if KERNEL_THREAD.search(waker_comm) else "process"


def _process_rates(trace: Trace, start: float, end: float) -> tuple[int, int]:
    pr = trace.processes
    inside = pr[(pr["time_s"] >= start) & (pr["time_s"] <= end)]
    return int((inside["event"] == "fork").sum()), int((inside["event"] == "exec").sum())


MEDIAN_INTERVAL_Z = 1.645
"""The normal quantile of the median's sampling interval (`median_interval`): 90%."""


def quantiles(values: list[float]) -> dict[str, Any]:
    """p10, p50 and p90 of `values`, the median's sampling interval and their count."""
    if not values:
        return {"p10": None, "p50": None, "p90": None, "p50_interval": None, "n": 0}
    q = np.percentile(np.asarray(values), [10, 50, 90])
    return {
        "p10": float(q[0]),
        "p50": float(q[1]),
        "p90": float(q[2]),
        "p50_interval": median_interval(values),
        "n": len(values),
    }


def median_interval(values: list[float]) -> list[float]:
    """The distribution-free 90% interval of the median of `values`, from their order
    statistics: the count of values below the true median is Binomial(n, 1/2), so the
    values of rank n/2 ∓ 1.645·√n/2 (1-based, the upper one past the middle) bracket it
    with 90% probability, whatever the distribution. Narrow where values crowd around the
    median; wide where it falls between two modes, where a few events more in one mode move
    the median across the gap."""
    x = sorted(values)
    n = len(x)
    half = MEDIAN_INTERVAL_Z * n**0.5 / 2
    lo = max(int(np.floor(n / 2 - half)), 1)
    hi = min(int(np.ceil(n / 2 + half)) + 1, n)
    return [float(x[lo - 1]), float(x[hi - 1])]


def _pct(part: float, whole: float) -> float | None:
    return 100.0 * part / whole if whole else None


def _mean(values: list[float]) -> float | None:
    return float(np.mean(values)) if values else None
