"""Whether a CPU about to idle takes a task waiting on another CPU: new-idle balancing, seen
from a trace.

A chance is a switch on a CPU whose task blocks (or exits) with nothing else queued there while
another CPU has a task waiting for it that has not run for at least the migration cost
(`sysctl_sched_migration_cost`, 500 µs: a task that ran more recently is cache-hot, and a
new-idle balance leaves it, `task_hot`). The CPU pulled the task if it switches to one queued
elsewhere, else it idles. Kernels differ in how often they balance at such a moment: every time
the CPU's average idle time pays for the balance (5.16 to 6.16), rarely after failed balances
(6.17's raised cost) or in proportion to the balances' recent success (the lottery of 6.1.160+,
6.12.65+ and 6.18.5+; `sched/newidle.rs`).

The run-queues are rebuilt from the events: a wake-up queues its task on its target CPU, a
switch-in takes it off, a preempted task (switched out runnable) is queued where it ran. A KVM
guest's vCPU can lose every event its idle task logs (its switches from idle among them), so a
task woken onto an idle CPU with nothing queued there counts as running at once, and a task
that logs any event runs where it logged it.
"""

from __future__ import annotations

from typing import Any

MIGRATION_COST_S = 500e-6
"""sysctl_sched_migration_cost: a task that ran within this is cache-hot (`task_hot`)."""

# At one printed microsecond, evidence that a task runs and wake-ups come before switches: a
# wake-up is logged before the switch to the task it woke.
_RUNS, _WAKE, _SWITCH = 0, 1, 2


def idle_pulls(trace: Any, start: float, end: float) -> dict[str, int]:
    """The chances in [`start`, `end`] (trace seconds) and how they ended: {"chances",
    "pulled", "idled"}. `trace`: a `dvfslab.traces.read.Trace`."""
    events: list[tuple[float, int, tuple[Any, ...]]] = []
    wg, wk, pr, sw = trace.wakings, trace.wakeups, trace.processes, trace.switches
    for t, cpu, waker in zip(wg["time_s"], wg["cpu"], wg["waker_pid"]):
        events.append((float(t), _RUNS, (int(cpu), int(waker))))
    for t, cpu, waker, pid, target in zip(
        wk["time_s"], wk["cpu"], wk["waker_pid"], wk["pid"], wk["target_cpu"]
    ):
        events.append((float(t), _RUNS, (int(cpu), int(waker))))
        events.append((float(t), _WAKE, (int(target), int(pid))))
    for t, cpu, event, pid, parent in zip(
        pr["time_s"], pr["cpu"], pr["event"], pr["pid"], pr["parent_pid"]
    ):
        events.append((float(t), _RUNS, (int(cpu), int(parent if event == "fork" else pid))))
    for t, cpu, prev, state, nxt in zip(
        sw["time_s"], sw["cpu"], sw["prev_pid"], sw["prev_state"], sw["next_pid"]
    ):
        events.append((float(t), _SWITCH, (int(cpu), int(prev), str(state), int(nxt))))
    events.sort(key=lambda e: (e[0], e[1]))

    queued: dict[int, int] = {}  # pid -> the CPU it waits on
    current: dict[int, int] = {}  # cpu -> the pid running there (0: idle)
    stopped: dict[int, float] = {}  # pid -> when it last stopped running
    pulled = idled = 0
    for t, kind, data in events:
        if kind == _RUNS:
            cpu, pid = data
            if pid != 0:
                queued.pop(pid, None)
                current[cpu] = pid
        elif kind == _WAKE:
            cpu, pid = data
            if pid in current.values():
                continue  # woken before it switched out: still running
            if current.get(cpu, 0) == 0 and cpu not in queued.values():
                current[cpu] = pid  # onto an idle CPU: runs at once
            else:
                queued[pid] = cpu
        else:
            cpu, prev, state, nxt = data
            if prev != 0:
                queued.pop(prev, None)
                stopped[prev] = t
                if state.startswith("R"):
                    queued[prev] = cpu
                elif start <= t <= end:
                    outcome = _chance(queued, stopped, cpu, nxt, t)
                    pulled += outcome == "pulled"
                    idled += outcome == "idled"
            queued.pop(nxt, None)
            current[cpu] = nxt
    return {"chances": pulled + idled, "pulled": pulled, "idled": idled}


def _chance(
    queued: dict[int, int], stopped: dict[int, float], cpu: int, nxt: int, t: float
) -> str | None:
    """How a switch on `cpu` whose task blocked at `t`, to `nxt`, ended: "pulled", "idled",
    or None when it was no chance (another task was queued on `cpu`, or nothing cold waited
    elsewhere, or `nxt` came from nowhere known)."""
    if any(q == cpu and pid != nxt for pid, q in queued.items()):
        return None
    from_cpu = queued.get(nxt)
    if nxt != 0 and from_cpu in (None, cpu):
        return None
    cold = any(
        q != cpu and t - stopped.get(pid, float("-inf")) >= MIGRATION_COST_S
        for pid, q in queued.items()
    )
    if not cold:
        return None
    return "idled" if nxt == 0 else "pulled"
