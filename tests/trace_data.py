"""Made-up ftrace text for the trace tests: switches, wake-ups and many short-lived processes,
in the kernel's `key=value` form.

`python tests/trace_data.py N FILE` writes the recording of N short-lived processes (what the
memory measurement in docs/traces.md ran on).
"""

from __future__ import annotations

import sys
from typing import TextIO


def switch(cpu: int, t: str, prev: tuple[str, int, str], nxt: tuple[str, int]) -> str:
    """A sched_switch line on `cpu` at `t` from prev (comm, pid, state) to nxt (comm, pid)."""
    fields = (
        f"prev_comm={prev[0]} prev_pid={prev[1]} prev_prio=120 prev_state={prev[2]} ==> "
        f"next_comm={nxt[0]} next_pid={nxt[1]} next_prio=120"
    )
    return f"  {prev[0]}-{prev[1]} [{cpu:03d}] {t}: sched_switch: {fields}\n"


def wakeup(
    cpu: int, t: str, waker: tuple[str, int], pid: int, target: int, new: bool = False
) -> str:
    """A sched_wakeup (or sched_wakeup_new) of `pid` logged by `waker` on `cpu`."""
    event = "sched_wakeup_new" if new else "sched_wakeup"
    body = f"comm=t pid={pid} prio=120 target_cpu={target:03d}"
    return f"  {waker[0]}-{waker[1]} [{cpu:03d}] {t}: {event}: {body}\n"


def waking(cpu: int, t: str, waker: tuple[str, int], comm: str, pid: int, prev: int) -> str:
    """A sched_waking of `pid` (`comm`), which last ran on `prev`, logged by `waker` on `cpu`."""
    body = f"comm={comm} pid={pid} prio=120 target_cpu={prev:03d}"
    return f"  {waker[0]}-{waker[1]} [{cpu:03d}] {t}: sched_waking: {body}\n"


def short_lived(count: int, out: TextIO, cpus: int = 2) -> None:
    """`count` processes, each forked, run 20 µs, asleep 10 µs (a timer wakes it), run 20 µs
    and exit: one every 100 µs on each of `cpus` CPUs in turn."""
    for i in range(count):
        cpu, pid = i % cpus, 1000 + i
        base = 1_000_000 + (i // cpus) * 100  # µs
        me = (f"p{i}", pid)
        idle = (f"swapper/{cpu}", 0)

        def at(us: int) -> str:
            return f"{us // 1_000_000}.{us % 1_000_000:06d}"

        out.write(
            wakeup(cpu, at(base), ("<idle>", 0), pid, cpu, new=True)
            + switch(cpu, at(base), (*idle, "R"), me)
            + switch(cpu, at(base + 20), (*me, "S"), idle)
            + wakeup(cpu, at(base + 30), ("<idle>", 0), pid, cpu)
            + switch(cpu, at(base + 30), (*idle, "R"), me)
            + switch(cpu, at(base + 50), (*me, "X"), idle)
        )


if __name__ == "__main__":
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        short_lived(int(sys.argv[1]), f)
