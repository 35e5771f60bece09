"""scripts/measure-vcpu-ipi's reading of a trace: the reschedule and the send per wake-up."""

from __future__ import annotations

from script_helpers import load_script


def switch(cpu: int, t: float, prev: str, pid: int, state: str, nxt: str, npid: int) -> str:
    return (
        f"{prev}-{pid} [{cpu:03d}] d..2. {t:.6f}: sched_switch: prev_comm={prev} "
        f"prev_pid={pid} prev_prio=120 prev_state={state} ==> next_comm={nxt} "
        f"next_pid={npid} next_prio=120"
    )


def waking(cpu: int, t: float, waker: str, waker_pid: int, comm: str, pid: int, target: int) -> str:
    return (
        f"{waker}-{waker_pid} [{cpu:03d}] d..3. {t:.6f}: sched_waking: comm={comm} pid={pid} "
        f"prio=120 target_cpu={target:03d}"
    )


def test_each_wake_up_gives_the_spinners_preemption_and_the_wakers_way_back_to_sleep() -> None:
    gaps = load_script("measure-vcpu-ipi").gaps
    # The waker (pid 10) wakes the wakee (11) beside the spinner (12) on CPU 1: the spinner is
    # switched out for it 25 µs later, the waker sleeps 16 µs after its sched_waking. Another
    # program's wake-up and a switch of the wakee that is not a preemption are not counted.
    trace = "\n".join(
        [
            waking(0, 1.000000, "ipi", 10, "ipi", 11, 1),
            switch(0, 1.000016, "ipi", 10, "S", "swapper/0", 0),
            switch(1, 1.000025, "ipi", 12, "R", "ipi", 11),
            waking(0, 1.002000, "bash", 99, "sshd", 98, 1),
            switch(1, 1.002030, "ipi", 12, "R", "sshd", 98),
            waking(0, 1.004000, "ipi", 10, "ipi", 11, 1),
            switch(0, 1.004012, "ipi", 10, "S", "swapper/0", 0),
            switch(1, 1.004040, "ipi", 12, "R", "ipi", 11),
            waking(0, 1.006000, "ipi", 10, "ipi", 11, 1),
            switch(1, 1.006050, "swapper/1", 0, "I", "ipi", 11),
        ]
    )
    resched, send = gaps(trace)
    assert [round(x) for x in resched] == [25, 40]
    assert [round(x) for x in send] == [16, 12]
