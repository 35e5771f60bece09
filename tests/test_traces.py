"""Traces of a run: Perfetto/Chrome JSON and ftrace text, parsed back."""

from __future__ import annotations

import json
import re

import pytest

import dvfslab
from dvfslab.platforms import load_platform, preset_values
from dvfslab.traces import chrome, ftrace
from dvfslab.traces.read import parse_text

WORKLOAD = "periodic:threads=3,run_us=2000,period_us=6000,jitter_pct=30"

# The kernel's trace-file line: TASK-PID [CPU] FLAGS TIMESTAMP: EVENT: FIELDS, the flags' third
# character the context (s softirq, h hard interrupt, . a task).
LINE = re.compile(
    r"^\s*(?P<task>.+)-(?P<pid>\d+)\s+\[(?P<cpu>\d{3})\] d(?P<resched>[.N])(?P<ctx>[.sh])2\.\s+"
    r"(?P<ts>\d+\.\d{6}): (?P<event>\w+): (?P<fields>.*)$"
)
SWITCH = re.compile(
    r"^prev_comm=\S+ prev_pid=\d+ prev_prio=\d+ prev_state=[RSDXI] ==> "
    r"next_comm=\S+ next_pid=\d+ next_prio=\d+$"
)


def fields_of(line: re.Match[str]) -> dict[str, str]:
    """An event's `key=value` fields (sched_switch's arrow and sched_stat_runtime's unit left
    out)."""
    plain = line["fields"].replace("==> ", "").removesuffix(" [ns]")
    return dict(kv.split("=", 1) for kv in plain.split())


@pytest.fixture(scope="module")
def result() -> dvfslab.SimResult:
    return dvfslab.simulate("juno-r2", "schedutil", WORKLOAD, duration_s=0.3, timeline=True)


def test_ftrace_text_parses_back(result: dvfslab.SimResult) -> None:
    text = ftrace.render(result)
    lines = [ln for ln in text.splitlines() if ln and not ln.startswith(("#", "cpus="))]
    tl = result.timeline_columns()
    counts: dict[str, int] = {}
    last_ts = 0.0
    for ln in lines:
        m = LINE.match(ln)
        assert m, ln
        counts[m["event"]] = counts.get(m["event"], 0) + 1
        ts = float(m["ts"])
        assert ts >= last_ts
        last_ts = ts
        fields = fields_of(m)
        if m["event"] == "sched_switch":
            assert SWITCH.match(m["fields"]), m["fields"]
            assert int(fields["prev_pid"]) == int(m["pid"])  # the line's task is the one leaving
        elif m["event"] == "sched_stat_runtime":
            assert int(fields["pid"]) == int(m["pid"])  # the task charged is the one running
            assert int(fields["runtime"]) > 0
        elif m["event"] in ("cpu_frequency", "cpu_idle"):
            assert int(fields["cpu_id"]) == int(m["cpu"])
        elif m["event"] == "sched_waking":
            # periodic's tasks sleep on their own timers: each wakes in hard-interrupt context
            # on the CPU it slept on.
            assert m["ctx"] == "h"
            assert int(fields["target_cpu"]) == int(m["cpu"])
    assert counts["sched_switch"] == len(tl["switch"]["time_ns"]) > 0
    assert counts["sched_waking"] == len(tl["waking"]["time_ns"]) > 0
    assert counts["sched_stat_runtime"] == len(tl["runtime"]["time_ns"]) > 0
    # Each task's first wake-up is its start: sched_wakeup_new.
    assert counts["sched_wakeup_new"] == len(set(tl["wakeup"]["task"])) > 0
    assert counts["sched_wakeup"] + counts["sched_wakeup_new"] == len(tl["wakeup"]["time_ns"])
    assert counts["sched_wakeup"] > 0
    assert counts["cpu_frequency"] == len(tl["frequency"]["time_ns"]) > 0
    assert counts["cpu_idle"] == len(tl["idle"]["time_ns"]) > 0
    assert text.startswith(f"cpus={len(result.per_cpu)}\n")


def test_a_forks_sched_wakeup_new_is_logged_by_the_parent_on_its_cpu() -> None:
    # wake_up_new_task runs on the parent: its sched_wakeup_new sits on the CPU of the
    # sched_process_fork, logged by the parent, whatever CPU fork balancing chose (target_cpu).
    run = dvfslab.simulate(
        "kvm-guest-2cpu", "performance", "gitsource:commands=60", duration_s=1.0, timeline=True
    )
    forks: dict[str, tuple[str, str]] = {}
    new_wakeups = []
    for ln in ftrace.render(run).splitlines():
        m = LINE.match(ln)
        if not m:
            continue
        fields = fields_of(m)
        if m["event"] == "sched_process_fork":
            forks[fields["child_pid"]] = (m["cpu"], m["pid"])
        elif m["event"] == "sched_wakeup_new" and fields["pid"] in forks:
            new_wakeups.append((m["cpu"], m["pid"], fields["target_cpu"], forks[fields["pid"]]))
    assert len(new_wakeups) > 50
    assert all((cpu, pid) == fork for cpu, pid, _, fork in new_wakeups)
    # Fork balancing sends some children to the other CPU.
    assert any(target != cpu for cpu, _, target, _ in new_wakeups)


@pytest.mark.parametrize(("platform", "first"), [("juno-r2", "WFI"), ("skylake-e3-1240v5", "POLL")])
def test_ftrace_idle_states_are_numbered_as_cpuidle_lists_them(platform: str, first: str) -> None:
    # UDP_STREAM's receiver often sleeps briefly: the first state, index 0, is used.
    run = dvfslab.simulate(
        platform, "performance", "netperf:test=udp-stream", duration_s=0.02, timeline=True
    )
    names = [list(c["time_in_idle_state"]) for c in run.per_cpu]
    assert all(n[0] == first for n in names)
    idle = run.timeline_columns()["idle"]
    # The timeline logs an exit when the wake-up starts, at the time the core will be up:
    # ftrace lists events in time order.
    rows = sorted(
        zip(idle["time_ns"], idle["seq"], idle["cpu"], idle["state"], strict=True),
        key=lambda r: (r[0], r[1]),
    )
    expected = [
        ftrace.CPU_IDLE_EXIT if state == "C0" else names[cpu].index(state)
        for _, _, cpu, state in rows
    ]
    got = [int(m) for m in re.findall(r"cpu_idle: state=(\d+)", ftrace.render(run))]
    assert got == expected
    assert 0 in got


def test_chrome_json_is_a_valid_trace(result: dvfslab.SimResult) -> None:
    trace = json.loads(chrome.render(result))
    events = trace["traceEvents"]
    assert {e["ph"] for e in events} == {"M", "X", "C"}
    slices = [e for e in events if e["ph"] == "X"]
    for e in slices:
        assert e["dur"] >= 0
        assert 0 <= e["ts"] <= result.sim_time_s * 1e6 + 1e-6
    # Task slices on one CPU never overlap, and add up to the CPU's busy time less the idle
    # exits it waited through (a woken task's slice starts once the hardware is back; the
    # summary counts the exit as busy): at most one slowest exit per exit from idle.
    text, _ = load_platform(result.platform)
    clusters = preset_values(json.loads(text))["clusters"]
    slowest_exit_us = max(s["exit_latency_us"] for c in clusters for s in c["idle_states"])
    idle = result.timeline_columns()["idle"]
    for cpu, row in enumerate(result.per_cpu):
        mine = sorted(
            (e["ts"], e["dur"]) for e in slices if e["pid"] == chrome.PID_TASKS and e["tid"] == cpu
        )
        for (t0, d0), (t1, _) in zip(mine, mine[1:]):
            assert t0 + d0 <= t1 + 1e-6
        busy_us = sum(d for _, d in mine)
        summary_busy_us = row["busy_pct"] / 100 * result.sim_time_s * 1e6
        exits = sum(1 for c, st in zip(idle["cpu"], idle["state"]) if c == cpu and st == "C0")
        assert busy_us <= summary_busy_us + 1e-3
        assert summary_busy_us - busy_us <= exits * slowest_exit_us + 1e-3
    counters = {e["name"] for e in events if e["ph"] == "C"}
    assert any(n.endswith("MHz") for n in counters)
    assert any(n.endswith("util") for n in counters)


def test_cli_writes_both_formats(cli, tmp_path) -> None:
    for name in ("run.json", "run.txt"):
        out = tmp_path / name
        r = cli(
            "run",
            "-p",
            "pixel6",
            "-g",
            "performance",
            "-w",
            "cpu-bound:threads=2",
            "--duration",
            "0.05",
            "--trace",
            str(out),
        )
        assert r.code == 0, r.stderr
        assert out.stat().st_size > 0
    bad = cli(
        "run",
        "-p",
        "pixel6",
        "-g",
        "performance",
        "-w",
        "cpu-bound",
        "--trace",
        str(tmp_path / "x.csv"),
    )
    assert bad.code == 1
    assert "error:" in bad.stderr
    assert ".json" in bad.stderr


def test_ftrace_follows_the_kernels_order_around_idle_and_starts_with_every_frequency(
    result: dvfslab.SimResult,
) -> None:
    # Kernel order (kernel/sched/idle.c do_idle): the idle task logs cpu_idle entry after the
    # sched_switch to it, and a CPU logs cpu_idle exit before the switch to the woken task,
    # with only the wake-ups of the interrupt that ends the idle state between (a second
    # wake-up while the CPU leaves idle; the switch goes to the one picked).
    lines = [LINE.match(ln) for ln in ftrace.render(result).splitlines()]
    events = [m for m in lines if m]
    ncpus = len(result.per_cpu)
    first = events[:ncpus]
    assert [(m["event"], float(m["ts"])) for m in first] == [("cpu_frequency", 0.0)] * ncpus
    assert sorted(int(m["cpu"]) for m in first) == list(range(ncpus))
    idle = [m for m in events if m["event"] == "cpu_idle"]
    assert idle
    assert all(m["task"].strip() == "<idle>" and m["pid"] == "0" for m in idle)
    previous: dict[int, str] = {}
    for m in events:
        cpu = int(m["cpu"])
        if m["event"] == "sched_switch" and m["pid"] == "0":
            assert previous.get(cpu, "").startswith("cpu_idle: state=4294967295"), m.string
        if m["event"] not in ("sched_waking", "sched_wakeup"):
            previous[cpu] = f"{m['event']}: {m['fields']}"


def test_a_move_to_another_cpu_is_logged_where_it_is_made_and_reads_back() -> None:
    # Three tasks on two CPUs: a CPU whose task sleeps pulls one waiting on the other (new-idle
    # balancing, every time at 6.16). set_task_cpu's caller logs sched_migrate_task: the
    # pulling CPU, just before it switches to the task.
    run = dvfslab.simulate(
        "kvm-guest-2cpu",
        "performance:kernel=6.16",
        "periodic:threads=3,run_us=1500,period_us=2000,jitter_pct=50",
        duration_s=1.0,
        timeline=True,
    )
    text = ftrace.render(run)
    moves, pulled_then_run = [], 0
    pulled_onto: dict[str, str] = {}  # CPU -> the pid it just logged a pull of
    for ln in text.splitlines():
        m = LINE.match(ln)
        if not m:
            continue
        fields = fields_of(m)
        pulled = pulled_onto.pop(m["cpu"], None)
        if pulled is not None and m["event"] == "sched_switch":
            pulled_then_run += fields["next_pid"] == pulled
        if m["event"] == "sched_migrate_task":
            assert fields["orig_cpu"] != fields["dest_cpu"]
            moves.append((int(fields["pid"]), int(fields["orig_cpu"]), int(fields["dest_cpu"])))
            if int(fields["dest_cpu"]) == int(m["cpu"]):
                pulled_onto[m["cpu"]] = fields["pid"]
    tl = run.timeline_columns()["migrate"]
    assert len(moves) == len(tl["time_ns"]) >= 10
    assert pulled_then_run >= 5, pulled_then_run
    read = parse_text(text, "run.txt").migrations
    assert list(zip(read["pid"], read["orig_cpu"], read["dest_cpu"])) == moves


def test_a_move_is_logged_in_the_context_of_the_code_that_makes_it() -> None:
    # hackbench's forty tasks on two vCPUs: wake-ups move tasks (logged between sched_waking
    # and sched_wakeup, in the waker's context), new-idle balances pull (the pulling CPU's task,
    # in task context) and the periodic balance pulls from its softirq (`s`), as the flags
    # column shows them in a kernel trace (what `scripts/eevdf-replay` tells them apart by).
    run = dvfslab.simulate(
        "kvm-guest-2cpu",
        "performance:kernel=6.18.44",
        "hackbench:pipes=1,loops=2000",
        duration_s=0.3,
        timeline=True,
    )
    waking: dict[str, tuple[str, str]] = {}  # CPU -> (pid, context) of the wake-up under way
    contexts: dict[str, int] = {}
    for ln in ftrace.render(run).splitlines():
        m = LINE.match(ln)
        if not m:
            continue
        fields = fields_of(m)
        if m["event"] == "sched_waking":
            waking[m["cpu"]] = (fields["pid"], m["ctx"])
        elif m["event"] == "sched_wakeup":
            waking.pop(m["cpu"], None)
        elif m["event"] == "sched_migrate_task":
            under_way = waking.get(m["cpu"])
            if under_way is not None and under_way[0] == fields["pid"]:
                assert m["ctx"] == under_way[1], ln
                key = "wake-up"
            else:
                assert int(fields["dest_cpu"]) == int(m["cpu"]), ln  # a pull
                key = "softirq balance" if m["ctx"] == "s" else "new-idle balance"
                assert m["ctx"] in ".s", ln
            contexts[key] = contexts.get(key, 0) + 1
    assert set(contexts) == {"wake-up", "softirq balance", "new-idle balance"}, contexts


def test_each_charge_of_a_running_task_is_logged_where_the_kernel_logs_it() -> None:
    # tbench's client wakes its server from its own send's softirq: the kernel logs the
    # client's accounting (wakeup_preempt's update_curr) after sched_waking and before
    # sched_wakeup. And time is conserved: the charges add up to the time the tasks ran
    # between their switches.
    run = dvfslab.simulate(
        "kvm-guest-2cpu", "performance:kernel=6.18.44", "tbench:clients=2", 0.05, timeline=True
    )
    text = ftrace.render(run)
    events = [m for m in map(LINE.match, text.splitlines()) if m]
    local_wakeups = charged_between = 0
    for cpu in ("000", "001"):
        here = [m for m in events if m["cpu"] == cpu]
        for before, waking, charge, wakeup in zip(here, here[1:], here[2:], here[3:]):
            # sched_waking names the CPU the task slept on; it stays there unless moved. A
            # task charged at that very time just before (a tick) has nothing left to charge.
            stays = charge["event"] != "sched_migrate_task"
            just_charged = before["event"] == "sched_stat_runtime" and before["ts"] == waking["ts"]
            if (
                waking["event"] == "sched_waking"
                and f"target_cpu={cpu}" in waking["fields"]
                and stays
                and not just_charged
            ):
                local_wakeups += 1
                charged_between += charge["event"] == "sched_stat_runtime" and (
                    wakeup["event"] == "sched_wakeup"
                )
    assert local_wakeups > 1000
    assert charged_between == local_wakeups
    assert "sched_stat_runtime" not in ftrace.render(run, runtime=False)
    tl = run.timeline_columns()
    ran = {0: 0, 1: 0}
    since: dict[int, int] = {}
    for t, cpu, nxt in sorted(
        zip(tl["switch"]["time_ns"], tl["switch"]["cpu"], tl["switch"]["next"])
    ):
        ran[cpu] += t - since.pop(cpu, t)
        if nxt >= 0:
            since[cpu] = t
    # (A charge is logged where it is made, a waker's CPU for a task it enqueues elsewhere:
    # summed over both CPUs.)
    charged = sum(tl["runtime"]["runtime_ns"])
    assert abs(charged - sum(ran.values())) < 0.005 * 2 * 50e6, (charged, ran)


def test_a_wake_up_the_waker_enqueues_on_a_busy_cpu_is_logged_on_the_wakers_cpu() -> None:
    # Four tbench pairs on two vCPUs: a send that wakes a task on the other, busy vCPU enqueues
    # it there itself (try_to_wake_up without the wake list), so its sched_wakeup, and its
    # accounting of that CPU's running task, are logged on the waker's CPU, right after its
    # sched_waking.
    run = dvfslab.simulate(
        "kvm-guest-2cpu", "performance:kernel=6.18.44", "tbench:clients=4", 0.05, timeline=True
    )
    events = [m for m in map(LINE.match, ftrace.render(run).splitlines()) if m]
    remote = 0
    for cpu in ("000", "001"):
        here = [m for m in events if m["cpu"] == cpu]
        for i, m in enumerate(here):
            fields = fields_of(m)
            if m["event"] != "sched_wakeup" or fields["target_cpu"] == cpu:
                continue
            remote += 1
            before = [e for e in here[max(0, i - 3) : i] if e["event"] != "sched_migrate_task"]
            waking = [e for e in before if e["event"] == "sched_waking"]
            assert waking, m.string
            assert fields_of(waking[-1])["pid"] == fields["pid"], m.string
    assert remote > 100


def test_a_softirq_wake_up_is_logged_in_softirq_context_on_both_lines() -> None:
    # tbench's loopback send wakes its partner from the softirq on the sender's CPU: the
    # kernel logs sched_waking and, where the sender enqueues the task itself, sched_wakeup in
    # that softirq (`s` in the flags column's third character on both).
    run = dvfslab.simulate(
        "kvm-guest-2cpu", "performance:kernel=6.18.44", "tbench:clients=2", 0.05, timeline=True
    )
    events = [m for m in map(LINE.match, ftrace.render(run).splitlines()) if m]
    last_waking: dict[str, re.Match[str]] = {}
    pairs = softirq_pairs = 0
    for m in events:
        pid = fields_of(m).get("pid")
        if m["event"] == "sched_waking":
            last_waking[pid] = m
        elif m["event"] == "sched_wakeup" and pid in last_waking:
            waking = last_waking.pop(pid)
            if waking["cpu"] == m["cpu"]:
                pairs += 1
                assert m["ctx"] == waking["ctx"], (waking.group(0), m.group(0))
                softirq_pairs += m["ctx"] == "s"
    assert pairs > 1000
    assert softirq_pairs > 0.9 * pairs, (pairs, softirq_pairs)
