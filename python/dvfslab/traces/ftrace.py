"""ftrace text, as the kernel's tracing/trace file prints it with the nop tracer:

    # tracer: nop
    #           TASK-PID     CPU#     TIMESTAMP  FUNCTION
        cpu-bound-0-1       [003] d..2.     0.004000: sched_switch: prev_comm=... ==> next_comm=...

Events: sched_switch (prev_state S sleeping, D waiting on a device, R preempted, Z exited and
not yet reaped by its parent, X exited with no simulated parent), sched_waking (on the waker's
CPU, in its context: the flags column's third character is `s` for a softirq, `h` for a hard
interrupt such as a timer, `.` for a task), sched_wakeup (its second character `N` where the
wake-up asked the logging CPU's running task to reschedule, its third the waker's context when
logged on the waker's CPU; on the CPU whose code enqueued the
task: the target's for a wake-up its wake list takes, or an idle target's wake-up before the
wake list; the waker's for one it enqueues itself, on a busy CPU of its LLC or a task still
queued; a task's first, its start, as sched_wakeup_new, on the CPU that forked it, as
wake_up_new_task logs it from the parent), sched_migrate_task (on the CPU whose code moves the
task: the waker's for a wake-up's placement, the balancing CPU for a pull, the source for an
active balance; in that code's context, `s` for a periodic or idle balance's softirq),
sched_process_fork / exec / exit, sched_stat_runtime (each accounting of a
running task, update_curr's, with the nanoseconds it charged, on the task's CPU or on a waker's
that accounts it while enqueuing there: what `scripts/eevdf-replay` reads vruntimes from),
cpu_frequency (state = kHz; every CPU's first at time 0) and cpu_idle (state = idle state
index, 4294967295 when the CPU leaves idle), with the kernel's field names, in the kernel's
order: `<idle>-0` enters an idle state after the switch to it, a CPU leaves it before the
switch to the woken task, and a migrated task leaves its source CPU before it runs on the
destination. Task pids are task id + 1; the idle task is `<idle>-0` (its comm `swapper/N` in
sched_switch fields).
A CPU woken from an idle state logs its `cpu_idle` exit and the switch to the woken task once
the state's exit latency has passed, as the kernel does; the run summary counts that wait as
the CPU's busy time, so task slices fall short of `busy_pct` by the exits.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator
from itertools import chain
from typing import TYPE_CHECKING, Any

from dvfslab.traces.read import PRIO_NICE_0

if TYPE_CHECKING:
    from dvfslab.result import SimResult

CPU_IDLE_EXIT = 4294967295  # PWR_EVENT_EXIT, (u32)-1


def render(result: SimResult, since_s: float = 0.0, runtime: bool = True) -> str:
    """The run's timeline as ftrace text. `since_s`: what happened before that time is left
    out, except what statistics over a later window read of it (`dvfslab.recordings.behaviour`,
    which leaves out sleeps that began before its window): each CPU's last switch, where the
    run under way began, and its last frequency. A long warm-up then costs no text.
    `runtime=False` leaves out sched_stat_runtime, as a recording without it has."""
    tl = result.timeline_columns()
    names: list[str] = tl["task_names"]
    prios: list[int] = tl["task_prios"]
    ncpus = len(result.per_cpu)
    idle_index = _idle_indexes(result)

    def comm(task: int, cpu: int) -> str:
        return f"swapper/{cpu}" if task < 0 else names[task].replace(" ", "_")[:15]

    def prio(task: int) -> int:
        return PRIO_NICE_0 if task < 0 else prios[task]

    # Every event as (time_ns, seq, cpu, function, fields), in time then `seq` order: `seq`
    # orders events of the same nanosecond as they happen in the kernel (rows of one kind are
    # not always in `seq` order: a migration's source switch-out keeps an earlier place).
    def switch_fields(p: int, st: str, n: int, cpu: int) -> str:
        return (
            f"prev_comm={comm(p, cpu)} prev_pid={p + 1} prev_prio={prio(p)} prev_state={st}"
            f" ==> next_comm={comm(n, cpu)} next_pid={n + 1} next_prio={prio(n)}"
        )

    def wakeup_fields(task: int, cpu: int) -> str:
        return f"comm={comm(task, cpu)} pid={task + 1} prio={prio(task)} target_cpu={cpu:03d}"

    def waking_fields(task: int, prev_cpu: int) -> str:
        return (
            f"comm={comm(task, prev_cpu)} pid={task + 1} prio={prio(task)} "
            f"target_cpu={prev_cpu:03d}"
        )

    def process_fields(kind: str, task: int, child: int, cpu: int) -> str:
        if kind == "F":
            return (
                f"comm={comm(task, cpu)} pid={task + 1} child_comm={comm(child, cpu)} "
                f"child_pid={child + 1}"
            )
        if kind == "E":
            return f"filename={comm(task, cpu)} pid={task + 1} old_pid={task + 1}"
        return f"comm={comm(task, cpu)} pid={task + 1} prio={prio(task)}"

    def migrate_fields(task: int, src: int, dst: int) -> str:
        return (
            f"comm={comm(task, src)} pid={task + 1} prio={prio(task)} orig_cpu={src} dest_cpu={dst}"
        )

    def idle_fields(state: str, cpu: int) -> str:
        index = CPU_IDLE_EXIT if state == "C0" else idle_index[cpu][state]
        return f"state={index} cpu_id={cpu}"

    sw, wk, fq, idle = tl["switch"], tl["wakeup"], tl["frequency"], tl["idle"]
    wg, pr, mg, rt = tl["waking"], tl["process"], tl["migrate"], tl["runtime"]
    # The text has microseconds: an event up to half a microsecond before `since_s` prints as
    # its microsecond, where a reader cutting at `since_s` counts it, so it is kept.
    since_ns = max(0, round(since_s * 1e9) - 500)
    kept_switches = _last_before(since_ns, sw)
    kept_frequencies = _last_before(since_ns, fq)
    # A task's first wake-up is its start (wake_up_new_task): sched_wakeup_new, logged by the
    # parent on the CPU it forked on (a workload's first tasks have no fork: their own CPU).
    first_wakeup: dict[int, int] = {}
    for q, task in zip(wk["seq"], wk["task"]):
        first_wakeup[task] = min(q, first_wakeup.get(task, q))
    forked_on = {
        child: cpu for kind, child, cpu in zip(pr["kind"], pr["child"], pr["cpu"]) if kind == "F"
    }

    def logged_on(q: int, task: int, logged: int) -> int:
        return forked_on.get(task, logged) if q == first_wakeup[task] else logged

    # A wake-up logged on the CPU of its sched_waking is logged in the waker's context there
    # (a softirq's wake-up shows `s` on both lines); one a wake list delivers on its target, in
    # the target's (`.` here).
    wakings: dict[int, list[tuple[int, int, str]]] = {}
    for q, task, c, ctx in sorted(zip(wg["seq"], wg["task"], wg["cpu"], wg["context"])):
        wakings.setdefault(task, []).append((q, c, ctx))

    def wakeup_context(q: int, task: int, logged: int) -> str:
        seen = wakings.get(task, [])
        i = bisect_left(seen, (q,)) - 1
        return seen[i][2] if i >= 0 and seen[i][1] == logged else "."

    process_events = {
        "F": "sched_process_fork",
        "E": "sched_process_exec",
        "X": "sched_process_exit",
    }
    # (time_ns, seq, cpu, function, fields, the flags column's need-resched and context
    # characters, (prev, next) of a switch)
    Event = tuple[int, int, int, str, str, str, tuple[int, int] | None]
    streams: list[Iterator[Event]] = [
        (
            (t, q, c, "sched_switch", switch_fields(p, st, n, c), "..", (p, n))
            for t, q, c, p, st, n in zip(
                sw["time_ns"], sw["seq"], sw["cpu"], sw["prev"], sw["prev_state"], sw["next"]
            )
            if t >= since_ns or q in kept_switches
        ),
        (
            (
                t,
                q,
                at,
                _wakeup_event(q, first_wakeup[task]),
                wakeup_fields(task, c),
                ("N" if resched else ".") + wakeup_context(q, task, at),
                None,
            )
            for t, q, task, c, lc, resched in zip(
                wk["time_ns"],
                wk["seq"],
                wk["task"],
                wk["cpu"],
                wk["logged_cpu"],
                wk["need_resched"],
            )
            if t >= since_ns
            for at in (logged_on(q, task, lc),)
        ),
        (
            (t, q, c, "cpu_frequency", f"state={khz} cpu_id={c}", "..", None)
            for t, q, c, khz in zip(fq["time_ns"], fq["seq"], fq["cpu"], fq["freq_khz"])
            if t >= since_ns or q in kept_frequencies
        ),
        (
            (t, q, c, "cpu_idle", idle_fields(state, c), "..", None)
            for t, q, c, state in zip(idle["time_ns"], idle["seq"], idle["cpu"], idle["state"])
            if t >= since_ns
        ),
        (
            (t, q, c, "sched_waking", waking_fields(task, prev), f".{ctx}", None)
            for t, q, c, task, prev, ctx in zip(
                wg["time_ns"], wg["seq"], wg["cpu"], wg["task"], wg["prev_cpu"], wg["context"]
            )
            if t >= since_ns
        ),
        (
            (t, q, c, "sched_migrate_task", migrate_fields(task, src, dst), f".{ctx}", None)
            for t, q, c, task, src, dst, ctx in zip(
                mg["time_ns"], mg["seq"], mg["cpu"], mg["task"], mg["src"], mg["dst"], mg["context"]
            )
            if t >= since_ns
        ),
        (
            (t, q, c, process_events[kind], process_fields(kind, task, child, c), "..", None)
            for t, q, c, kind, task, child in zip(
                pr["time_ns"], pr["seq"], pr["cpu"], pr["kind"], pr["task"], pr["child"]
            )
            if t >= since_ns
        ),
    ]

    if runtime:
        streams.append(
            (
                t,
                q,
                c,
                "sched_stat_runtime",
                f"comm={comm(task, c)} pid={task + 1} runtime={ns} [ns]",
                "..",
                None,
            )
            for t, q, c, task, ns in zip(
                rt["time_ns"], rt["seq"], rt["cpu"], rt["task"], rt["runtime_ns"]
            )
            if t >= since_ns
        )

    lines = [
        f"cpus={ncpus}",
        "# tracer: nop",
        "#",
        "#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION",
    ]
    current = [-1] * ncpus
    for t, _, cpu, func, fields, flags, switch in sorted(
        chain(*streams), key=lambda e: (e[0], e[1])
    ):
        # A switch is logged by the task switched out (the one current there, unless what
        # came before it was left out: `since_s`).
        who = current[cpu] if switch is None else switch[0]
        task = "<idle>-0" if who < 0 else f"{comm(who, cpu)}-{who + 1}"
        lines.append(f"{task:>20} [{cpu:03d}] d{flags}2. {t / 1e9:13.6f}: {func}: {fields}")
        if switch is not None:
            current[cpu] = switch[1]
    return "\n".join(lines) + "\n"


def _last_before(since_ns: int, rows: dict[str, list[Any]]) -> set[int]:
    """The `seq` of each CPU's last row before `since_ns`."""
    last: dict[int, tuple[int, int]] = {}
    if since_ns > 0:
        for t, q, cpu in zip(rows["time_ns"], rows["seq"], rows["cpu"]):
            if t < since_ns and (cpu not in last or (t, q) > last[cpu]):
                last[cpu] = (t, q)
    return {q for _, q in last.values()}


def _wakeup_event(seq: int, first_seq: int) -> str:
    return "sched_wakeup_new" if seq == first_seq else "sched_wakeup"


def _idle_indexes(result: SimResult) -> list[dict[str, int]]:
    """cpuidle state index of each idle-state name, per CPU: its place in the preset's list,
    which follows cpuidle's own (POLL first on x86, WFI first on Arm)."""
    return [{name: i for i, name in enumerate(c["time_in_idle_state"])} for c in result.per_cpu]
