"""Chrome / Perfetto trace-event JSON: one track per CPU with the task slices, one per CPU with
its idle states, and counter tracks for each CPU's frequency (MHz) and util_avg.

Trace Event Format: "X" complete events (ts, dur in µs), "C" counters, "M" metadata naming the
processes and threads that become the tracks.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dvfslab.result import SimResult

# Track groups ("processes" in the trace-event model).
PID_TASKS, PID_IDLE, PID_FREQ, PID_UTIL = 1, 2, 3, 4


def _us(ns: int) -> float:
    return ns / 1000.0


def render(result: SimResult) -> str:
    tl = result.timeline_columns()
    names: list[str] = tl["task_names"]
    end_ns = round(result.sim_time_s * 1e9)
    ncpus = len(result.per_cpu)
    events: list[dict[str, Any]] = []
    for pid, label in ((PID_TASKS, "CPUs: tasks"), (PID_IDLE, "CPUs: idle states")):
        events.append({"ph": "M", "pid": pid, "name": "process_name", "args": {"name": label}})
        for cpu in range(ncpus):
            events.append(
                {
                    "ph": "M",
                    "pid": pid,
                    "tid": cpu,
                    "name": "thread_name",
                    "args": {"name": f"CPU {cpu}"},
                }
            )
    events.append(
        {"ph": "M", "pid": PID_FREQ, "name": "process_name", "args": {"name": "frequency"}}
    )
    events.append(
        {"ph": "M", "pid": PID_UTIL, "name": "process_name", "args": {"name": "util_avg"}}
    )

    # Task slices: from each switch to a task until the next switch on that CPU.
    sw = tl["switch"]
    running: dict[int, tuple[int, int]] = {}
    for t, cpu, nxt in zip(sw["time_ns"], sw["cpu"], sw["next"]):
        if cpu in running:
            task, start = running.pop(cpu)
            events.append(_slice(PID_TASKS, cpu, names[task], start, t, {"task": task}))
        if nxt >= 0:
            running[cpu] = (nxt, t)
    for cpu, (task, start) in running.items():
        events.append(_slice(PID_TASKS, cpu, names[task], start, end_ns, {"task": task}))

    # Idle-state slices: from entering a state until the CPU runs again ("C0").
    idle = tl["idle"]
    entered: dict[int, tuple[str, int]] = {}
    for t, cpu, state in zip(idle["time_ns"], idle["cpu"], idle["state"]):
        if cpu in entered:
            name, start = entered.pop(cpu)
            events.append(_slice(PID_IDLE, cpu, name, start, t, {}))
        if state != "C0":
            entered[cpu] = (state, t)
    for cpu, (name, start) in entered.items():
        events.append(_slice(PID_IDLE, cpu, name, start, end_ns, {}))

    freq = tl["frequency"]
    for t, cpu, khz in zip(freq["time_ns"], freq["cpu"], freq["freq_khz"]):
        events.append(
            {
                "ph": "C",
                "pid": PID_FREQ,
                "name": f"cpu{cpu} MHz",
                "ts": _us(t),
                "args": {"MHz": khz / 1000},
            }
        )
    util = tl["util"]
    for t, cpu, u in zip(util["time_ns"], util["cpu"], util["util_avg"]):
        events.append(
            {
                "ph": "C",
                "pid": PID_UTIL,
                "name": f"cpu{cpu} util",
                "ts": _us(t),
                "args": {"util": u},
            }
        )

    return json.dumps(
        {
            "traceEvents": events,
            "displayTimeUnit": "ns",
            "metadata": {
                "platform": result.platform,
                "governor": result.governor,
                "workload": result.workload,
                "seed": result.seed,
            },
        }
    )


def _slice(
    pid: int, cpu: int, name: str, start_ns: int, end_ns: int, args: dict[str, Any]
) -> dict[str, Any]:
    return {
        "ph": "X",
        "pid": pid,
        "tid": cpu,
        "name": name,
        "ts": _us(start_ns),
        "dur": _us(end_ns - start_ns),
        "args": args,
    }
