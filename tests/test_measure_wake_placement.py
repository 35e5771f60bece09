"""scripts/measure-wake-placement's reading of a trace: where a wake-up whose previous vCPU
is busy with another task went."""

from __future__ import annotations

import importlib.machinery
import importlib.util
from pathlib import Path
from types import ModuleType

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "measure-wake-placement"


def load_script() -> ModuleType:
    loader = importlib.machinery.SourceFileLoader("measure_wake_placement", str(SCRIPT))
    spec = importlib.util.spec_from_loader("measure_wake_placement", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def switch(cpu: int, t: float, prev: str, nxt: str, npid: int) -> str:
    return (
        f"{prev}-1 [{cpu:03d}] d..2. {t:.6f}: sched_switch: prev_comm={prev} prev_pid=1 "
        f"prev_prio=120 prev_state=S ==> next_comm={nxt} next_pid={npid} next_prio=120"
    )


def waking(cpu: int, t: float, comm: str, pid: int, prev: int) -> str:
    return (
        f"x-1 [{cpu:03d}] d..3. {t:.6f}: sched_waking: comm={comm} pid={pid} prio=120 "
        f"target_cpu={prev:03d}"
    )


def wakeup(cpu: int, t: float, comm: str, pid: int, target: int) -> str:
    return (
        f"x-1 [{cpu:03d}] d..4. {t:.6f}: sched_wakeup: comm={comm} pid={pid} prio=120 "
        f"target_cpu={target:03d}"
    )


def test_counts_only_wake_ups_whose_previous_vcpu_runs_another_task() -> None:
    script = load_script()
    trace = "\n".join(
        [
            switch(0, 1.0, "swapper/0", "pair-client", 10),
            switch(1, 1.0, "swapper/1", "disturber", 30),
            # The server slept on CPU 1, which runs the disturber: kept there.
            waking(0, 1.1, "pair-server", 20, 1),
            wakeup(0, 1.1, "pair-server", 20, 1),
            # Again, now moved to the waker's CPU.
            waking(0, 1.2, "pair-server", 20, 1),
            wakeup(0, 1.2, "pair-server", 20, 0),
            # CPU 1 idle again: not counted.
            switch(1, 1.3, "disturber", "swapper/1", 0),
            waking(0, 1.4, "pair-server", 20, 1),
            wakeup(0, 1.4, "pair-server", 20, 1),
            # A wake-up on the previous CPU itself: not counted either.
            switch(1, 1.5, "swapper/1", "disturber", 30),
            waking(1, 1.6, "pair-client", 10, 1),
            wakeup(1, 1.6, "pair-client", 10, 1),
        ]
    )
    placed = script.busy_previous(trace)
    assert placed == {"previous": 1, "waker": 1}
