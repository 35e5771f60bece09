"""menu's idle-state choices recomputed from the decision log, from menu.c by kernel version.

Every choice `df_idle_decisions()` logs is made again here from what menu_select reads (the
recent intervals, the next timer, the time to the next tick, the tasks in iowait, the
platform's state table), by an implementation written from drivers/cpuidle/governors/menu.c:
get_typical_interval in its forms (4.x - 6.5 dropping the largest values; 6.6+ no prediction
from an all-zero history; 6.15+ dropping either end, returning the largest sample left until
6.17), the 6.6+ skip of the timer under RESIDENCY_THRESHOLD_NS, the performance multiplier
(to 6.12), the exit cap at the prediction (6.13 - 6.16) and none (6.17+), the polling
override by version, and from 4.17 the retained tick: the state bounded by the next tick,
and the tick at which menu, woken by it with 45 ms recorded, stops the tick. Stable updates
carry later rules from the update that took them (Debian's 6.1 and 6.12 changelogs, the
6.18.3 release): STABLE below.

One input is the simulator's own: the timer-based estimate, next_timer x correction factor in
menu.c, is the sooner of the next timer and the logged running average of the measured idle
periods (docs/model.md says why), so the check covers what menu does with its inputs, not how
the correction factor learns.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import NamedTuple

import pandas as pd
import pytest

import dvfslab

INTERVALS = 8
U64_MAX = 2**64 - 1
UINT_MAX = 2**32 - 1
INT_MAX = 2**31 - 1
RESIDENCY_THRESHOLD_NS = 15_000
TICK_WAKEUP_NS = 9 * 50_000_000 // 10  # 9/10 of MAX_INTERESTING
PLATFORMS = Path(dvfslab.__file__).parent / "data" / "platforms"

Kernel = tuple[int, ...]

# Later menu.c rules in stable updates: the first update of each series that has the rule, and
# the first that no longer has it.
STABLE: dict[str, tuple[list[Kernel], list[Kernel]]] = {
    # "cpuidle: menu: Avoid discarding useful information" (6.15), reverted.
    "largest_when_unsure": ([(6, 1, 141), (6, 12, 31)], [(6, 1, 158), (6, 12, 56)]),
    # "Remove iowait influence" with "Avoid selecting states with too much latency" (6.17).
    "no_exit_cap": ([(6, 12, 44)], []),
    # "Select polling state in some more cases" (6.18).
    "poll_exit_within_prediction": ([(6, 12, 58)], []),
    # "Use residency threshold in polling state override decisions" (after 6.18).
    "poll_residency_threshold": ([(6, 12, 64), (6, 18, 3)], []),
}


def stable_has(kernel: Kernel, rule: str) -> bool:
    def reached(firsts: list[Kernel]) -> bool:
        return any(kernel[:2] == f[:2] and kernel >= f for f in firsts)

    first, reverted = STABLE[rule]
    return reached(first) and not reached(reverted)


class State(NamedTuple):
    exit_ns: int
    target_ns: int
    polling: bool


def us_value(field: float | dict[str, float]) -> float:
    return field["value"] if isinstance(field, dict) else field


def table(platform: str) -> tuple[list[State], int]:
    """The first cluster's idle states (ns, truncated as the simulator converts them) and the
    tick period of the platform's default HZ."""
    plat = json.loads((PLATFORMS / f"{platform}.json").read_text())
    states = [
        State(
            int(us_value(s["exit_latency_us"]) * 1000),
            int(us_value(s["target_residency_us"]) * 1000),
            s["power"] == "polling",
        )
        for s in plat["clusters"][0]["idle_states"]
    ]
    hz = plat["defaults"]["hz"]
    return states, (1_000_000_000 + hz // 2) // hz


def typical_interval(intervals: list[int], kernel: Kernel) -> int | None:
    """get_typical_interval (us); None stands for UINT_MAX, no prediction."""
    if kernel >= (6, 15):
        min_thresh, max_thresh = -1, UINT_MAX
        while True:
            kept = [v for v in intervals if min_thresh < v < max_thresh]
            if not kept or max(kept) == 0:
                return None
            divisor, lo, hi = len(kept), min(kept), max(kept)
            avg = sum(kept) // divisor
            variance = sum(v * v for v in kept) // divisor - avg * avg
            if variance <= U64_MAX // 36 and (
                (avg * avg > variance * 36 and divisor * 4 >= INTERVALS * 3) or variance <= 400
            ):
                return avg
            if divisor * 4 <= INTERVALS * 3:
                if kernel < (6, 18) and divisor >= INTERVALS // 2:
                    return hi
                return None
            if avg - lo > hi - avg:
                min_thresh = lo
            else:
                max_thresh = hi
    thresh = INT_MAX
    while True:
        kept = [v for v in intervals if v <= thresh]
        divisor, hi = len(kept), max(kept)
        if kernel >= (6, 6) and hi == 0:
            return None
        avg = sum(kept) // divisor
        variance = sum((v - avg) ** 2 for v in kept) // divisor
        if variance <= U64_MAX // 36 and (
            (avg * avg > variance * 36 and divisor * 4 >= INTERVALS * 3) or variance <= 400
        ):
            return avg
        if divisor * 4 <= INTERVALS * 3:
            if stable_has(kernel, "largest_when_unsure") and divisor >= INTERVALS // 2:
                return hi
            return None
        thresh = hi - 1


class Select(NamedTuple):
    idx: int
    stop_tick: bool
    next_timer_ns: int


def menu_select(
    intervals: list[int],
    avg_ns: int | None,
    now: int,
    timer: int | None,
    nr_iowait: int,
    kernel: Kernel,
    states: list[State],
    tick_ns: int,
) -> Select:
    """menu_select, with the tick running at the idle entry (tick_nohz_tick_stopped false)."""
    big = 2**64
    until_timer = big if timer is None else max(timer - now, 0)
    to_tick = min((now // tick_ns + 1) * tick_ns - now, until_timer)
    typical = typical_interval(intervals, kernel)
    typical_ns = big if typical is None else typical * 1000
    if kernel < (6, 6) or typical_ns > RESIDENCY_THRESHOLD_NS:
        next_timer_ns, delta_tick = until_timer, to_tick
        timer_based = min(until_timer, big if avg_ns is None else avg_ns)
        predicted = min(timer_based, typical_ns)
    else:
        next_timer_ns, delta_tick = big, tick_ns // 2
        predicted = typical_ns
    if kernel >= (6, 17) or stable_has(kernel, "no_exit_cap"):
        latency_req = big
    elif kernel >= (6, 13):
        latency_req = predicted
    else:
        latency_req = predicted // (1 + 10 * nr_iowait)

    if kernel < (5, 0):
        # first_idx: default to the first physical state unless a timer is due very soon.
        first_idx = 0
        if (
            states[0].polling
            and len(states) > 1
            and next_timer_ns > max(20_000, states[1].target_ns)
        ):
            first_idx = 1
        idx = first_idx
        for i in range(first_idx, len(states)):
            if states[i].target_ns > predicted:
                break
            if states[i].exit_ns > latency_req:
                if kernel >= (4, 17):
                    predicted = states[idx].target_ns
                break
            idx = i
    else:
        idx = -1
        for i, s in enumerate(states):
            if idx == -1:
                idx = i
            if s.target_ns > predicted:
                exit_within_prediction = kernel >= (6, 18) or stable_has(
                    kernel, "poll_exit_within_prediction"
                )
                exit_cap = predicted if exit_within_prediction else latency_req
                threshold = stable_has(kernel, "poll_residency_threshold")
                if (
                    states[idx].polling
                    and s.exit_ns <= exit_cap
                    and s.target_ns <= next_timer_ns
                    and (not threshold or s.target_ns < RESIDENCY_THRESHOLD_NS)
                ):
                    predicted = s.target_ns
                    idx = i
                    break
                if predicted < tick_ns:
                    break
                predicted = states[idx].target_ns
                break
            if s.exit_ns > latency_req:
                break
            idx = i

    if kernel < (4, 17):
        return Select(idx, True, next_timer_ns)
    stop_tick = True
    if states[idx].polling or predicted < tick_ns:
        stop_tick = False
        if idx > 0 and states[idx].target_ns > delta_tick:
            for i in range(idx - 1, -1, -1):
                idx = i
                if states[i].target_ns <= delta_tick:
                    break
    return Select(idx, stop_tick, next_timer_ns)


def push(intervals: list[int], avg_ns: int | None, measured_ns: int) -> tuple[list[int], int]:
    """menu_update_intervals, newest first, and the running average."""
    avg = measured_ns if avg_ns is None else avg_ns - avg_ns // 8 + measured_ns // 8
    return [min(measured_ns // 1000, UINT_MAX), *intervals[:-1]], avg


def recompute(
    row: dict[str, float], kernel: Kernel, states: list[State], tick_ns: int
) -> tuple[int, int | None]:
    """(state, reconsider_at_ns or None) for one logged decision."""
    intervals = [int(row[f"interval_{i}"]) for i in range(INTERVALS)]
    avg = None if math.isnan(row["avg_ns"]) else int(row["avg_ns"])
    timer = None if math.isnan(row["next_timer_ns"]) else int(row["next_timer_ns"])
    now, iowait = int(row["time_ns"]), int(row["nr_iowait"])
    first = menu_select(intervals, avg, now, timer, iowait, kernel, states, tick_ns)
    if first.stop_tick:
        return first.idx, None
    # Woken by each retained tick: menu_update records 45 ms (no more than the timer it saw
    # is away; a timer within a tick of the selection wakes the CPU first), then selects.
    seen, tick = first.next_timer_ns, (now // tick_ns + 1) * tick_ns
    for _ in range(INTERVALS):
        if (timer is not None and timer <= tick) or seen <= tick_ns:
            return first.idx, None
        intervals, avg = push(intervals, avg, min(TICK_WAKEUP_NS, seen))
        again = menu_select(intervals, avg, tick, timer, iowait, kernel, states, tick_ns)
        if again.stop_tick:
            return first.idx, tick
        seen, tick = again.next_timer_ns, tick + tick_ns
    return first.idx, None


def agreement(
    platform: str, kernel: str, workload: str, duration_s: float
) -> tuple[int, int, pd.DataFrame]:
    r = dvfslab.simulate(
        platform,
        f"schedutil:kernel={kernel}",
        workload,
        duration_s=duration_s,
        seed=3,
        explain=True,
    )
    df = r.df_idle_decisions()
    states, tick_ns = table(platform)
    version = tuple(int(x) for x in kernel.split("."))
    got = [recompute(row, version, states, tick_ns) for row in df.to_dict("records")]
    want_state = [s for s, _ in got]
    want_at = [math.nan if t is None else float(t) for _, t in got]
    same = (df["state"] == want_state) & (
        (df["reconsider_at_ns"] == want_at) | (df["reconsider_at_ns"].isna() & pd.isna(want_at))
    )
    return int(same.sum()), len(df), df[~same]


# At least one version per form of the typical interval and of the selection loop, the
# stable updates among them.
KERNELS = [
    "4.14", "4.19", "5.4", "6.1", "6.1.141", "6.6", "6.12", "6.12.31", "6.12.44",
    "6.12.58", "6.12.118", "6.15", "6.17", "6.18", "6.18.3",
]  # fmt: skip
# Seconds simulated: tbench enters idle about 500 k times a second.
WORKLOADS = {
    "tbench:clients=2": 0.03,
    "fio": 0.3,
    "periodic:threads=3,run_us=3000": 0.3,
    "kernbench:jobs=4": 0.3,
}


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("workload", WORKLOADS)
def test_every_idle_decision_recomputes(kernel: str, workload: str) -> None:
    agree, total, differ = agreement("skylake-e3-1240v5", kernel, workload, WORKLOADS[workload])
    print(f"menu {kernel} {workload}: {agree} of {total} decisions recomputed")
    assert total > 50
    assert agree == total, differ.head()


def test_the_log_sees_iowait_retained_ticks_and_several_states() -> None:
    """The check above exercises the iowait multiplier, the retained-tick replay and more
    than a poll-or-deepest choice."""
    fio = dvfslab.simulate(
        "skylake-e3-1240v5", "schedutil:kernel=6.1", "fio", duration_s=0.3, seed=3, explain=True
    ).df_idle_decisions()
    assert (fio["nr_iowait"] > 0).any()
    assert fio["reconsider_at_ns"].notna().any()
    kernbench = dvfslab.simulate(
        "skylake-e3-1240v5",
        "schedutil:kernel=6.1",
        "kernbench:jobs=4",
        duration_s=0.3,
        seed=3,
        explain=True,
    ).df_idle_decisions()
    assert kernbench["state"].nunique() >= 4


def test_typical_interval_forms_differ_where_menu_c_changed() -> None:
    """This module's own get_typical_interval, on histories where the versions part."""
    spread = [10, 100, 1_000, 10_000, 20, 200, 2_000, 20_000]
    assert typical_interval(spread, (6, 14)) is None
    assert typical_interval(spread, (6, 15)) == 2_000
    assert typical_interval(spread, (6, 18)) is None
    # The stable updates that carried the largest-when-unsure rule in the largest-first form.
    assert typical_interval(spread, (6, 12, 31)) == 2_000
    assert typical_interval(spread, (6, 12, 56)) is None
    assert typical_interval(spread, (6, 1, 141)) == 2_000
    zeros = [0] * INTERVALS
    assert typical_interval(zeros, (6, 5)) == 0
    assert typical_interval(zeros, (6, 6)) is None
