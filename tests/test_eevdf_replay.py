"""scripts/eevdf-replay: 6.18's EEVDF rules replayed over a trace, on a worked example and on
two recorded tbench runs (autogroup off and on)."""

from __future__ import annotations

import lzma
import re
from pathlib import Path

import pytest

import dvfslab
from dvfslab.traces import ftrace
from script_helpers import load_script

TRACES = Path(__file__).resolve().parent / "data" / "traces"


def switch(t: float, prev: str, pid: int, state: str, nxt: str, npid: int) -> str:
    return (
        f"{prev}-{pid} [000] d..2. {t:.6f}: sched_switch: prev_comm={prev} prev_pid={pid} "
        f"prev_prio=120 prev_state={state} ==> next_comm={nxt} next_pid={npid} next_prio=120"
    )


def runtime(t: float, comm: str, pid: int, ns: int) -> str:
    return (
        f"{comm}-{pid} [000] d..2. {t:.6f}: sched_stat_runtime: comm={comm} pid={pid} "
        f"runtime={ns} [ns]"
    )


def wakeup(
    t: float,
    waker: str,
    wpid: int,
    comm: str,
    pid: int,
    event: str,
    flags: str = "d..2.",
    target: int = 0,
) -> str:
    return (
        f"{waker}-{wpid} [000] {flags} {t:.6f}: {event}: comm={comm} pid={pid} prio=120 "
        f"target_cpu={target:03d}"
    )


def on(cpu: int, line: str) -> str:
    """`line` logged on `cpu` (the helpers above log on CPU 0)."""
    return line.replace("[000]", f"[{cpu:03d}]", 1)


def replayed(lines: list[str], tasks: str | None = None, settle_s: float = 0.0, **options):
    """The replay of a worked example (slice 1 ms, HZ 250), run over `lines`."""
    script = load_script("eevdf-replay")
    r = script.Replay(1_000_000, 4_000_000, re.compile(tasks) if tasks else None, **options)
    r.run(lines, settle_s)
    return r


def replay(lines: list[str], tasks: str | None = None) -> dict[str, int]:
    return dict(replayed(lines, tasks).counts)


def worked_example(wakeup_flags: str = "dN.2.") -> list[str]:
    """Slice 1 ms. a starts at vruntime 0 (deadline 0.5 ms, half a slice for a new task) and
    runs 0.3 ms; b starts at V = 0.3 ms (deadline 0.8 ms). a runs 0.4 ms more: past its
    deadline, renewed to 1.7 ms with a reschedule asked, and no longer eligible (V = 0.5 ms), so
    b is the pick. b runs 0.1 ms and blocks eligible (V = 0.55 ms): it leaves with lag 0.15 ms.
    a runs 0.25 ms; woken, b is placed at V - 0.15 · 2 = 0.65 ms with deadline 1.65 ms, before
    a's 1.7 ms, while a (0.95 ms) is past V (0.8 ms): b preempts it. `wakeup_flags`: the flags
    of b's last sched_wakeup (`N`: the kernel asked for the reschedule)."""
    return [
        wakeup(0.0, "<idle>", 0, "a", 1, "sched_wakeup_new"),
        switch(0.000001, "swapper/0", 0, "R", "a", 1),
        runtime(0.000300, "a", 1, 300_000),
        wakeup(0.000300, "a", 1, "b", 2, "sched_wakeup_new"),
        runtime(0.000700, "a", 1, 400_000),
        switch(0.000700, "a", 1, "R", "b", 2),
        runtime(0.000800, "b", 2, 100_000),
        switch(0.000800, "b", 2, "S", "a", 1),
        runtime(0.001000, "a", 1, 200_000),
        wakeup(0.001050, "a", 1, "b", 2, "sched_waking"),
        runtime(0.001050, "a", 1, 50_000),
        wakeup(0.001050, "a", 1, "b", 2, "sched_wakeup", wakeup_flags),
        switch(0.001051, "a", 1, "R", "b", 2),
    ]


def test_a_worked_example_of_deadlines_lags_and_the_woken_tasks_preemption() -> None:
    assert replay(worked_example()) == {
        "other switches: same task": 2,
        "preempting switches: same task": 2,
        "reschedule asked, recorded": 1,
    }
    # Had the kernel not asked for that reschedule, the replay would say so.
    assert replay(worked_example("d..2."))["reschedule asked, not recorded"] == 1


def test_explain_prints_each_wake_up_the_rules_and_the_kernel_decide_apart(capsys) -> None:
    for flags, printed in (("dN.2.", []), ("d..2.", ["b-2: kernel did not ask, rules did"])):
        replayed(worked_example(flags), explain=True)
        lines = capsys.readouterr().out.splitlines()
        assert [line.split(" ", 1)[1].split(";")[0] for line in lines] == printed
    # What the pick read: b's lag of 0.15 ms, placed 0.15 ms before V (0.8 ms with b), a 0.15
    # ms past it, a's deadline 0.05 ms after b's.
    assert "its lag 150000, v-V -150000; running 1: v-V 150000" in lines[0]
    assert "deadline less the woken one's 50000" in lines[0]
    # A wake-up in the stretch left out at the start is neither counted nor explained.
    replayed(worked_example("d..2."), settle_s=0.002, explain=True)
    assert capsys.readouterr().out == ""


def share(counts: dict[str, int], switches: str) -> float:
    """Of these switches, the share whose recorded next task the rules name."""
    same, other = counts[f"{switches}: same task"], counts.get(f"{switches}: other task", 0)
    return same / (same + other)


def recorded(name: str) -> list[str]:
    return lzma.decompress((TRACES / name).read_bytes()).decode().splitlines()


def test_the_kernels_picks_follow_the_rules_and_its_groups_ask_for_more_reschedules() -> None:
    # With autogroup off every task shares the CPU's run-queue: the rules name the task the
    # kernel switched to at nearly every switch and ask for most reschedules it recorded.
    flat = replay(recorded("tbench-4-autogroup-off.txt.xz"))
    assert share(flat, "other switches") > 0.97, flat
    assert share(flat, "preempting switches") > 0.95, flat
    asked = flat["reschedule asked, recorded"]
    missed = flat["reschedule not asked, recorded"]
    assert asked > 4 * missed, flat
    assert flat["reschedule asked, not recorded"] < 0.05 * asked, flat
    # With autogroup on, among the session's tasks the picks still follow, but a share of
    # recorded reschedules twice as large is asked above them (the group's entity).
    grouped = replay(recorded("tbench-4-autogroup-on.txt.xz"), tasks="^(tbench|tbench_srv)$")
    assert share(grouped, "other switches") > 0.97, grouped
    unasked = grouped["reschedule not asked, recorded"] / (
        grouped["reschedule not asked, recorded"] + grouped["reschedule asked, recorded"]
    )
    assert unasked > 2 * missed / (missed + asked), (grouped, flat)


def test_a_hackbench_run_traced_from_its_start_follows_the_rules_at_every_decision() -> None:
    # hackbench's forty workers on two vCPUs, in a task group of their own (the recorder runs
    # the command in a session of its own), every one of them born in the trace: the rules
    # name every next task the kernel switched to and ask for exactly the reschedules it
    # asked for, on the waker's CPU and on the other. Two things once hid this: the parent,
    # running from before its group existed (it is placed where its first accounting finds
    # it), and the new-idle balance, which pulls only after the blocking task has left.
    script = load_script("eevdf-replay")
    # Two vCPUs: the base slice is 0.7 ms · (1 + log2 2).
    r = script.Replay(1_400_000, 4_000_000, re.compile("^hackbench$"))
    r.run(recorded("hackbench-pipe-start.txt.xz"), 0.0)
    counts = dict(r.counts)
    assert counts["other switches: same task"] > 1500, counts
    assert counts["preempting switches: same task"] > 400, counts
    assert share(counts, "other switches") == 1.0, counts
    assert share(counts, "preempting switches") == 1.0, counts
    assert counts["reschedule asked, recorded"] > 400, counts
    assert counts["remote reschedule asked, recorded"] > 50, counts
    decided_apart = [
        k for k in counts if "reschedule" in k and ("not asked" in k) != ("not recorded" in k)
    ]
    assert decided_apart == [], counts


def test_a_wake_up_onto_another_cpus_running_task_is_decided_by_the_same_rules() -> None:
    # pgbench's thread on one vCPU wakes its backend onto the other, where the other backend
    # runs: the kernel's reschedule reaches that backend by IPI, so the trace shows it only as
    # a switch to the woken one, or as the backend running on past the IPI. The rules, on the
    # recorded vruntimes, ask for it where the kernel switched and not where it ran on.
    r = replayed(recorded("pgbench-rw-autogroup-off.txt.xz"), settle_s=0.02)
    c = {
        k.removeprefix("remote reschedule "): v
        for k, v in r.counts.items()
        if k.startswith("remote")
    }
    agree = c["asked, recorded"] + c["not asked, not recorded"]
    assert c["asked, recorded"] > 50, c
    assert c["not asked, not recorded"] > 50, c
    assert agree > 0.9 * sum(c.values()), c


def remote_example(running_on_us: float) -> list[str]:
    """a runs on CPU 1 from 0 (vruntime 0, deadline and protection 0.5 ms, half a slice); b,
    woken there from CPU 0 at 0.6 ms, when a is past its protection and its deadline is
    renewed to 1.6 ms, is placed at V = 0.6 ms with the same deadline: a keeps the CPU only
    with a strictly earlier one, so the rules ask. a then runs on `running_on_us` µs and is
    switched out for b, runnable."""

    end = 0.0006 + running_on_us * 1e-6
    return [
        on(1, wakeup(0.0, "<idle>", 0, "a", 1, "sched_wakeup_new")),
        on(1, switch(0.000001, "swapper/1", 0, "R", "a", 1)),
        wakeup(0.0, "<idle>", 0, "c", 3, "sched_wakeup_new"),
        switch(0.000001, "swapper/0", 0, "R", "c", 3),
        wakeup(0.0006, "c", 3, "b", 2, "sched_waking"),
        runtime(0.0006, "a", 1, 600_000),
        wakeup(0.0006, "c", 3, "b", 2, "sched_wakeup", target=1),
        on(1, runtime(end, "a", 1, round(running_on_us * 1000))),
        on(1, switch(end, "a", 1, "R", "b", 2)),
    ]


def test_a_remote_wake_ups_outcome_is_read_from_the_running_tasks_switch_out() -> None:
    # Switched out for the woken task 25 µs later (the IPI): the kernel asked, as the rules do.
    assert replay(remote_example(25))["remote reschedule asked, recorded"] == 1
    # Still running 60 µs later, past the IPI, switched out for it only then: the kernel did
    # not ask.
    assert replay(remote_example(60))["remote reschedule asked, not recorded"] == 1


def test_an_accounting_logged_on_the_wakers_cpu_charges_the_other_cpus_task() -> None:
    # a runs on CPU 1; c, on CPU 0, wakes b onto CPU 1, which is busy: try_to_wake_up enqueues
    # from CPU 0, and the enqueue's update_curr of a (100 µs) is logged there.
    lines = [
        on(1, wakeup(0.0, "<idle>", 0, "a", 1, "sched_wakeup_new")),
        on(1, switch(0.000001, "swapper/1", 0, "R", "a", 1)),
        wakeup(0.0, "<idle>", 0, "c", 3, "sched_wakeup_new"),
        switch(0.000001, "swapper/0", 0, "R", "c", 3),
        wakeup(0.000050, "c", 3, "b", 2, "sched_wakeup_new"),
        switch(0.000060, "c", 3, "S", "b", 2),
        switch(0.000070, "b", 2, "S", "c", 3),
        wakeup(0.000100, "c", 3, "b", 2, "sched_waking"),
        runtime(0.000100, "a", 1, 100_000),
        wakeup(0.000100, "c", 3, "b", 2, "sched_wakeup", target=1),
    ]
    r = replayed(lines)
    a = r.entities[1]
    # a started at vruntime 0 on an empty run-queue: its vruntime is the 100 µs it ran.
    assert a.vruntime == 100_000, a.vruntime


def test_the_wake_up_pick_lets_go_of_a_delayed_task_it_picks_and_picks_again() -> None:
    # Slice 1 ms. a, first seen running (at lag 0, deadline 1 ms), runs 0.3 ms and the new d
    # (deadline 0.5 ms) is picked; d runs 0.5 ms, its deadline renewed to 1.5 ms, and blocks
    # not eligible (V = 0.4 ms): delayed. a runs 0.3 ms, within its slice (V = 0.55 ms: d
    # eligible again). b wakes at V = 0.55 ms (deadline 1.55): the pick takes d (deadline
    # 1.5), delayed, lets it go, and picks again: with d gone V = 0.575 ms, a (0.6) is not
    # eligible, b is, and b preempts a.
    lines = [
        switch(0.000001, "swapper/0", 0, "R", "a", 1),
        wakeup(0.000001, "a", 1, "d", 3, "sched_wakeup_new"),
        runtime(0.000300, "a", 1, 300_000),
        switch(0.000300, "a", 1, "R", "d", 3),
        runtime(0.000800, "d", 3, 500_000),
        switch(0.000800, "d", 3, "S", "a", 1),
        runtime(0.001100, "a", 1, 300_000),
        wakeup(0.001100, "a", 1, "b", 2, "sched_waking"),
        wakeup(0.001100, "a", 1, "b", 2, "sched_wakeup", "dN.2."),
    ]
    r = replayed(lines)
    assert r.counts["reschedule asked, recorded"] == 1, dict(r.counts)
    assert r.entities[3] not in r.members(r.rqs[0])


def test_a_lag_brought_from_before_the_trace_places_a_task_first_seen() -> None:
    # a runs; ksoftirqd, first seen at its wake-up beside a, is placed at V less its lag
    # doubled (one task beside it). At lag 0 it ties with a, which keeps the CPU; with the
    # 0.5 ms its life since boot left it (as scripts/wakeup-lag reads it), it preempts a.
    lines = [
        switch(0.000001, "swapper/0", 0, "R", "a", 1),
        runtime(0.000200, "a", 1, 200_000),
        wakeup(0.000200, "a", 1, "ksoftirqd/0", 14, "sched_waking"),
        wakeup(0.000200, "a", 1, "ksoftirqd/0", 14, "sched_wakeup", "dNs4."),
    ]
    r = replayed(lines)
    assert r.counts["reschedule not asked, recorded"] == 1, dict(r.counts)
    r = replayed(lines, start_lags=[(re.compile("ksoftirqd"), 500_000)])
    assert r.counts["reschedule asked, recorded"] == 1, dict(r.counts)
    assert r.entities[1].vruntime - r.entities[14].vruntime == 1_000_000


def test_a_task_woken_while_still_on_its_run_queue_is_not_placed_again() -> None:
    # a runs 0.2 ms, then wakes itself (a wake-up that finds it running, p == current, before
    # it blocks): ttwu_runnable places nothing. b then starts at V = a's vruntime; had a been
    # queued a second time its own weight would count twice in V.
    lines = [
        wakeup(0.0, "<idle>", 0, "a", 1, "sched_wakeup_new"),
        switch(0.000001, "swapper/0", 0, "R", "a", 1),
        runtime(0.000200, "a", 1, 200_000),
        wakeup(0.000200, "a", 1, "a", 1, "sched_waking"),
        wakeup(0.000200, "a", 1, "a", 1, "sched_wakeup"),
        wakeup(0.000300, "a", 1, "b", 2, "sched_waking"),
        runtime(0.000300, "a", 1, 100_000),
        wakeup(0.000300, "a", 1, "b", 2, "sched_wakeup"),
    ]
    r = replayed(lines)
    a, b = r.entities[1], r.entities[2]
    members = r.members(r.rqs[0])
    assert members.count(a) == 1, members
    assert (a.vruntime, b.vruntime) == (300_000, 300_000)


def test_an_idle_cpu_drops_its_delayed_tasks_and_a_balance_attaches_in_reverse() -> None:
    # Slice 1 ms. On CPU 0, a runs 0.6 ms beside b and blocks owing time (V = 0.3 ms): it stays
    # queued, delayed. b runs 0.1 ms and blocks; the CPU idles, and on the way pick_task_fair
    # dequeues a, its lag read then: 0, the last task there being V itself (before, a stayed
    # queued and a later wake-up elsewhere placed it with a lag from an earlier sleep).
    lines = [
        wakeup(0.0, "<idle>", 0, "a", 1, "sched_wakeup_new"),
        wakeup(0.0, "<idle>", 0, "b", 2, "sched_wakeup_new"),
        switch(0.000001, "swapper/0", 0, "R", "a", 1),
        runtime(0.000600, "a", 1, 600_000),
        switch(0.000600, "a", 1, "S", "b", 2),
        runtime(0.000700, "b", 2, 100_000),
        switch(0.000700, "b", 2, "S", "swapper/0", 0),
    ]
    r = replayed(lines)
    a = r.entities[1]
    assert not a.delayed
    assert a not in r.rqs[0].queued
    assert a.vlag == 0

    # Three tasks wait on CPU 0 behind c; idle CPU 1 pulls two of them in one balance (its
    # sched_migrate_task lines, then its switch): attach_tasks queues the last detached first.
    def migrate(t: float, comm: str, pid: int) -> str:
        return (
            f"<idle>-0 [001] dNs2. {t:.6f}: sched_migrate_task: comm={comm} pid={pid} "
            "prio=120 orig_cpu=0 dest_cpu=1"
        )

    lines = [
        *(
            wakeup(0.0, "<idle>", 0, name, pid, "sched_wakeup_new")
            for name, pid in (("c", 3), ("d", 4), ("e", 5), ("f", 6))
        ),
        switch(0.000001, "swapper/0", 0, "R", "c", 3),
        runtime(0.000500, "c", 3, 500_000),
        migrate(0.000500, "d", 4),
        migrate(0.000501, "e", 5),
        on(1, switch(0.000510, "swapper/1", 0, "R", "e", 5)),
    ]
    r = replayed(lines)
    d, e = r.entities[4], r.entities[5]
    assert r.rqs[1].queued == [d]
    assert r.rqs[1].curr is e
    assert e.seq < d.seq, "e, detached last, was queued first"
    # A delayed task that a balance moves stays delayed where it lands: a blocks owing time
    # beside b, and CPU 1 pulls it (its balance ends at CPU 1's next event, an accounting of
    # b from there).
    lines = [
        *(
            wakeup(0.0, "<idle>", 0, name, pid, "sched_wakeup_new")
            for name, pid in (("a", 1), ("b", 2))
        ),
        switch(0.000001, "swapper/0", 0, "R", "a", 1),
        runtime(0.000600, "a", 1, 600_000),
        switch(0.000600, "a", 1, "S", "b", 2),
        migrate(0.000650, "a", 1),
        on(1, runtime(0.000660, "b", 2, 60_000)),
    ]
    r = replayed(lines)
    a = r.entities[1]
    assert a.delayed
    assert a in r.rqs[1].queued


@pytest.mark.parametrize("pipes", [1, 0])
def test_the_models_two_vcpu_hackbench_follows_the_rules(pipes: int) -> None:
    # hackbench's forty tasks on the recording guest's two vCPUs, its host's costs included:
    # wake-ups that reach a halted vCPU by IPI go by its wake list, and the task it runs first
    # is picked among all of them and charged from the last enqueue before that pick. The
    # replay names nearly every next task the model switches to, pipes and sockets.
    run = dvfslab.simulate(
        "kvm-guest-2cpu",
        "performance:kernel=6.18.44",
        f"hackbench:pipes={pipes},loops=2000",
        0.2,
        timeline=True,
    )
    script = load_script("eevdf-replay")
    r = script.Replay(1_400_000, 4_000_000, None)
    r.run(ftrace.render(run).splitlines(), 0.01)
    counts = dict(r.counts)
    assert counts["other switches: same task"] > 5_000, counts
    assert share(counts, "other switches") > 0.99, counts
    assert share(counts, "preempting switches") > 0.99, counts


def test_the_models_own_trace_replays_to_every_one_of_its_picks() -> None:
    # The model's ftrace carries sched_stat_runtime as the kernel's does, so the replay checks
    # the model against the kernel's rules: tbench's pairs without task groups, where every
    # preemption turns on tenths of a microsecond (a sender's last 0.62 µs before its switch
    # are the woken task's, rq_clock_skip_update), and the rules must name every next task.
    run = dvfslab.simulate(
        "kvm-guest-2cpu", "performance:kernel=6.18.44", "tbench:clients=2", 0.1, timeline=True
    )
    script = load_script("eevdf-replay")
    # Two CPUs: a 1.4 ms slice; the first 10 ms left out (the pairs' start, before the first
    # task is placed where the trace can see it).
    r = script.Replay(1_400_000, 4_000_000, None)
    r.run(ftrace.render(run).splitlines(), 0.01)
    counts = dict(r.counts)
    assert counts["preempting switches: same task"] > 5000, counts
    assert share(counts, "other switches") == 1.0, counts
    assert share(counts, "preempting switches") == 1.0, counts
    # Its wake-ups carry the need-resched flag where they asked for a reschedule, as the
    # kernel's do: the rules ask at (nearly) the same ones.
    asked = counts["reschedule asked, recorded"]
    disagree = counts.get("reschedule asked, not recorded", 0)
    disagree += counts.get("reschedule not asked, recorded", 0)
    assert asked > 5000, counts
    assert disagree < 0.001 * (asked + counts["reschedule not asked, not recorded"]), counts


def test_a_new_idle_balance_pulls_after_the_blocking_task_has_left() -> None:
    # CPU 1 runs d with c queued behind it: c's lag grows while it waits. On CPU 0, b runs
    # alone and blocks; __schedule dequeues it, then its new-idle balance pulls c (the
    # sched_migrate_task line b logs in task context), then put_prev_task accounts b once more,
    # and only then does the trace log the switch. b left alone, eligible, with lag 0; c lands
    # on an empty run-queue, at V. Attached before b had left, c's lag (doubled beside b)
    # would have pulled V below b, which would have stayed queued as if it owed time.
    lines = [
        on(1, wakeup(0.0, "<idle>", 0, "d", 4, "sched_wakeup_new", target=1)),
        on(1, switch(0.000001, "swapper/1", 0, "R", "d", 4)),
        on(1, runtime(0.000100, "d", 4, 100_000)),
        on(1, wakeup(0.000100, "d", 4, "c", 3, "sched_wakeup_new", target=1)),
        wakeup(0.000100, "<idle>", 0, "b", 2, "sched_wakeup_new"),
        switch(0.000101, "swapper/0", 0, "R", "b", 2),
        on(1, runtime(0.000400, "d", 4, 300_000)),
        runtime(0.000400, "b", 2, 300_000),
        (
            "b-2 [000] d..2. 0.000401: sched_migrate_task: comm=c pid=3 prio=120 "
            "orig_cpu=1 dest_cpu=0"
        ),
        runtime(0.000405, "b", 2, 5_000),
        switch(0.000405, "b", 2, "S", "c", 3),
    ]
    r = replayed(lines)
    b, c = r.entities[2], r.entities[3]
    assert not b.delayed
    assert not b.on_rq
    assert b.vlag == 0
    assert r.rqs[0].curr is c
    assert r.members(r.rqs[0]) == [c]
    assert dict(r.counts) == {"other switches: same task": 3}


def test_a_new_idle_balance_finds_its_cpus_delayed_tasks_dropped() -> None:
    # On CPU 0, a runs 0.6 ms beside b and blocks owing time: delayed. b runs 0.1 ms and blocks,
    # eligible. Only a is left, delayed: pick_task_fair picks it, dequeues it (its lag read
    # then, 0 with nothing else there) and finds nothing; only then does the new-idle balance
    # pull c from CPU 1, where it waited behind d. c lands on an empty run-queue.
    lines = [
        wakeup(0.0, "<idle>", 0, "a", 1, "sched_wakeup_new"),
        wakeup(0.0, "<idle>", 0, "b", 2, "sched_wakeup_new"),
        on(1, wakeup(0.0, "<idle>", 0, "d", 4, "sched_wakeup_new", target=1)),
        on(1, switch(0.000001, "swapper/1", 0, "R", "d", 4)),
        on(1, runtime(0.000100, "d", 4, 100_000)),
        on(1, wakeup(0.000100, "d", 4, "c", 3, "sched_wakeup_new", target=1)),
        switch(0.000001, "swapper/0", 0, "R", "a", 1),
        runtime(0.000600, "a", 1, 600_000),
        switch(0.000600, "a", 1, "S", "b", 2),
        runtime(0.000700, "b", 2, 100_000),
        (
            "b-2 [000] d..2. 0.000701: sched_migrate_task: comm=c pid=3 prio=120 "
            "orig_cpu=1 dest_cpu=0"
        ),
        switch(0.000702, "b", 2, "S", "c", 3),
    ]
    r = replayed(lines)
    a, c = r.entities[1], r.entities[3]
    assert not a.delayed
    assert a.vlag == 0
    assert r.members(r.rqs[0]) == [c]


def test_a_task_first_seen_by_its_accounting_runs_from_there() -> None:
    # p ran from before the trace (or from before setsid moved it into its session's new task
    # group): its first line is its own accounting. From there it is the running task, so the
    # child it forks is placed beside it, at V = p's vruntime then (0.2 ms), with half a slice
    # to its deadline; p runs 90 µs more and blocks past V (0.245 ms), owing time: it stays
    # queued, delayed, and the child is the pick.
    lines = [
        runtime(0.000200, "p", 1, 200_000),
        wakeup(0.000210, "p", 1, "q", 2, "sched_wakeup_new"),
        runtime(0.000300, "p", 1, 90_000),
        switch(0.000300, "p", 1, "S", "q", 2),
    ]
    r = replayed(lines)
    p, q = r.entities[1], r.entities[2]
    assert (p.vruntime, q.vruntime) == (290_000, 200_000)
    assert q.deadline - q.vruntime == 500_000
    assert p.delayed
    assert p in r.rqs[0].queued
    assert dict(r.counts) == {"other switches: same task": 1}
