"""scripts/measure-timer-horizon's reading of a trace: the time to the next timer each CPU
would wake for, at each of its idle entries."""

from __future__ import annotations

from script_helpers import load_script


def _line(cpu: int, t: float, event: str, fields: str) -> str:
    return f"          <idle>-0       [{cpu:03d}] d..2. {t:.6f}: {event}: {fields}\n"


def _hrtimer(cpu: int, t: float, name: str, function: str, expires_s: float) -> str:
    ns = round(expires_s * 1e9)
    return _line(
        cpu,
        t,
        "hrtimer_start",
        f"hrtimer={name} function={function} expires={ns} softexpires={ns} mode=ABS was_armed=0",
    )


def _timer(cpu: int, t: float, name: str, function: str, jiffies: int, flags: str) -> str:
    return _line(
        cpu,
        t,
        "timer_start",
        f"timer={name} function={function} expires={1000 + jiffies} [timeout={jiffies}] "
        f"bucket_expiry={1000 + jiffies} cpu={cpu} idx=3 flags={flags}",
    )


def _to_idle(cpu: int, t: float) -> str:
    return _line(
        cpu,
        t,
        "sched_switch",
        f"prev_comm=work prev_pid=7 prev_prio=120 prev_state=S ==> "
        f"next_comm=swapper/{cpu} next_pid=0 next_prio=120",
    )


def test_the_horizon_is_the_soonest_timer_an_idle_cpu_wakes_for() -> None:
    script = load_script("measure-timer-horizon")
    trace = "".join(
        [
            # Before the warm-up's end: armed, but no idle entry is read yet.
            _hrtimer(0, 1.0, "wd", "watchdog_timer_fn", 5.0),
            _hrtimer(0, 1.0, "tick", "tick_nohz_handler", 1.004),
            _timer(0, 1.0, "vmstat", "vmstat_update", 1, "D|P"),  # deferrable: never waits
            _to_idle(0, 1.5),
            # After it: a global timer 100 ms ahead and a pinned one 12 ms ahead (HZ=250).
            _timer(0, 2.0, "orphan", "tcp_orphan_update", 25, ""),
            _timer(0, 2.0, "work", "delayed_work_timer_fn", 3, "P"),
            _to_idle(0, 2.0),
            # The pinned one cancelled: the CPU's own next timer is the watchdog's, 2.95 s away.
            _line(0, 2.04, "timer_cancel", "timer=work"),
            _to_idle(0, 2.05),
            # CPU 1 has started nothing it would wake for.
            _to_idle(1, 2.5),
        ]
    )
    h = script.horizons(trace, warmup_s=0.9, hz=250)
    assert [round(x, 3) for x in h.own_ms[0]] == [12.0, 2950.0]
    assert [round(x, 3) for x in h.global_ms[0]] == [12.0, 50.0]
    assert h.bounded_by[0] == {"delayed_work_timer_fn": 1, "watchdog_timer_fn": 1}
    assert h.unseen == {1: 1}
    assert "CPU 1: 1 idle entries, 1 with no timer seen" in script.report(h)
