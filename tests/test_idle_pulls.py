"""A CPU going idle while a task waits on another CPU: did it take the task (new-idle
balancing), read from traces made up here and from the model's own."""

from __future__ import annotations

import dvfslab
from dvfslab.traces.ftrace import render
from dvfslab.traces.idle_pulls import idle_pulls
from dvfslab.traces.read import parse_text
from trace_data import switch, wakeup

A, B, C, D, E = ("a", 10), ("b", 20), ("c", 30), ("d", 40), ("e", 50)
IDLE = ("swapper/0", 0)


def pulls(lines: list[str]) -> dict[str, int]:
    return idle_pulls(parse_text("".join(lines), "made up"), 0.0, 10.0)


def running_a_on_0_and_b_on_1() -> list[str]:
    return [
        switch(0, "1.000000", (*IDLE, "R"), A),
        switch(1, "1.000000", ("swapper/1", 0, "R"), B),
    ]


def test_a_cold_task_waiting_elsewhere_is_a_chance_taken_or_not() -> None:
    lines = running_a_on_0_and_b_on_1()
    # C, never seen running, waits on CPU 1; A sleeps and CPU 0 idles: a chance, idled.
    lines.append(wakeup(1, "1.000100", B, C[1], target=1))
    lines.append(switch(0, "1.000200", (*A, "S"), IDLE))
    # A is woken onto idle CPU 0 and runs; C still waits. A sleeps and CPU 0 takes C: pulled.
    lines.append(wakeup(1, "1.001000", B, A[1], target=0))
    lines.append(switch(0, "1.001010", (*IDLE, "R"), A))
    lines.append(switch(0, "1.001100", (*A, "S"), C))
    assert pulls(lines) == {"chances": 2, "pulled": 1, "idled": 1}


def test_a_cache_hot_task_or_work_queued_locally_is_no_chance() -> None:
    lines = running_a_on_0_and_b_on_1()
    # D ran on CPU 1 until 100 µs before A sleeps: cache-hot, a balance would leave it.
    lines.append(switch(1, "1.000100", (*B, "R"), D))
    lines.append(switch(1, "1.000150", (*D, "R"), B))
    lines.append(switch(0, "1.000250", (*A, "S"), IDLE))
    assert pulls(lines)["chances"] == 0
    # With E queued on CPU 0 itself, A's sleep switches to E: a local pick, not a chance.
    lines = running_a_on_0_and_b_on_1()
    lines.append(wakeup(1, "1.000100", B, C[1], target=1))
    lines.append(wakeup(0, "1.000110", A, E[1], target=0))
    lines.append(switch(0, "1.000200", (*A, "S"), E))
    assert pulls(lines)["chances"] == 0


def test_a_task_woken_onto_an_idle_cpu_runs_there_though_its_switch_in_was_lost() -> None:
    # CPU 1 is idle and its switches from idle go unlogged (a KVM guest's vCPU): C woken onto
    # it runs at once, so when A sleeps nothing waits, and CPU 0 idling is no chance.
    lines = [switch(0, "1.000000", (*IDLE, "R"), A), switch(1, "1.000000", (*B, "S"), IDLE)]
    lines.append(wakeup(0, "1.000100", A, C[1], target=1))
    lines.append(switch(0, "1.001000", (*A, "S"), IDLE))
    assert pulls(lines)["chances"] == 0


def idle_pull_share(kernel: str) -> float:
    """The model's kernbench on the recording machine's preset: the share of chances taken."""
    workload = "kernbench:jobs=2,units=2700,compile_scale=1.81,warmup_ms=2000"
    result = dvfslab.simulate(
        "kvm-guest-2cpu", f"performance:kernel={kernel}", workload, duration_s=8.0, timeline=True
    )
    counts = idle_pulls(parse_text(render(result, 2.0), "model"), 2.0, 8.0)
    assert counts["chances"] >= 60, counts
    return counts["pulled"] / counts["chances"]


def test_from_6_18_5_a_cpu_going_idle_takes_a_waiting_task_by_lottery() -> None:
    # 6.16 balances at every chance its average idle time pays for, and kernbench's pay: nearly
    # every chance is taken. 6.18.44 draws first, from sd_init's 50% success rate.
    every, drawn = idle_pull_share("6.16"), idle_pull_share("6.18.44")
    assert every > 0.8, every
    assert 0.25 < drawn < 0.7, drawn
