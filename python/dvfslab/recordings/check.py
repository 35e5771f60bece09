"""A benchmark model against a recording of the real benchmark: the model runs on the recording
machine's preset, its own trace is rendered as ftrace text and read back by the same reader, and
both traces go through the same statistics (`behaviour`). Each statistic then gets a verdict
against its tolerance, or is only reported where the recording machine's noise rules it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from dvfslab import switch_counts
from dvfslab._core import ConfigError
from dvfslab.recordings.behaviour import ALL, CONTEXTS, behaviour, pid_roles, role_of_comm
from dvfslab.recordings.manifest import Recording, load_repeats
from dvfslab.recordings.round_trips import round_trips
from dvfslab.traces.read import Trace


@dataclass(frozen=True)
class Tolerance:
    """How far the model may be from the recording: a relative one (`rel`, with `step` the
    resolution of the values: a difference of one step is always within), or `points` for
    shares in percent. Neither: reported, not judged."""

    rel: float | None = None
    step: float = 0.0
    points: float | None = None

    def judge(self, recorded: float | None, modelled: float | None) -> str:
        if self.rel is None and self.points is None:
            return "reported"
        if recorded is None or modelled is None:
            return "n/a"
        if self.points is not None:
            return "ok" if abs(modelled - recorded) <= self.points else "off"
        assert self.rel is not None
        allowed = max(self.rel * abs(recorded), self.step)
        return "ok" if abs(modelled - recorded) <= allowed + 1e-3 * self.step else "off"

    def judge_runs(self, runs: list[float | None], modelled: float | None) -> str:
        """The verdict against several recorded runs of the benchmark: within tolerance of
        their median, or inside the range the runs themselves span (a value the real
        benchmark gave cannot be called wrong)."""
        known = sorted(v for v in runs if v is not None)
        verdict = self.judge(_median(known) if known else None, modelled)
        if verdict == "off" and modelled is not None and known[0] <= modelled <= known[-1]:
            return "ok"
        return verdict

    def text(self) -> str:
        if self.points is not None:
            return f"±{self.points:g} pt"
        if self.rel is not None:
            step = f" or ±{self.step:g}" if self.step else ""
            return f"±{self.rel * 100:g}%{step}"
        return "-"


MIN_SAMPLES = 68
"""Events a share or a median must be over, on the recording and on the model, to be judged:
at 68 an even split's 90% sampling spread, 1.645 * 50 / sqrt(68) = 10.0 points, is the share's
tolerance. Over fewer (pgbench-select's backends sleep some 24 times in the recording's 0.1 s)
one event moves a share by several points, and the statistic is reported, not judged; a run or
sleep median over so few is as loose, and takes the same bound."""

PER_OP_CPU = Tolerance(rel=0.20)
PER_OP_COUNT = Tolerance(rel=0.25)
"""Small counts have no floor below which both sides count as equal: what tells a rare event's
count from its noise is how many events were counted, not their rate per operation, whose unit
is each benchmark's own (a floor of 0.02 an operation would pass a model never preempted against
a benchmark preempted once every 60 operations). `count_interval` judges them by their events."""
SHARE = Tolerance(points=10.0)
# ftrace's text prints microseconds, so a run or sleep median is known to 1 us on either side:
# a 3 us median against a 4 us one cannot be told apart however short both are.
MEDIAN = Tolerance(rel=0.30, step=1.0)
REPORTED = Tolerance()

STATISTICS: list[tuple[str, str, Tolerance]] = [
    ("cpu_cycles_per_op", "CPU cycles per op", PER_OP_CPU),
    ("switch_outs_per_op", "switch-outs per op", PER_OP_COUNT),
    ("preempted_per_op", "  preempted per op", PER_OP_COUNT),
    # Who preempted: a task outside the benchmark (ksoftirqd at a tick, a kworker) is the
    # machine's, not the benchmark's model's.
    ("preempted_outside_pct", "    by a task outside the benchmark %", REPORTED),
    # The same share as the kernel counted it over as long a stretch just before the window,
    # untraced (`dvfslab.switch_counts`): what the recorder's own cost changed. The model is
    # never traced: its share is its preemptions over its switch-outs.
    ("preempted_pct_untraced", "    preempted % of switch-outs, untraced", REPORTED),
    ("sleeps_s_per_op", "  sleeps in S per op", PER_OP_COUNT),
    ("sleeps_d_per_op", "  sleeps in D per op", PER_OP_COUNT),
    ("wakeups_per_op", "wake-ups per op", PER_OP_COUNT),
    ("sleep_d_pct", "sleeps in D %", SHARE),
    ("run_us.p10", "run p10 us", REPORTED),
    ("run_us.p50", "run p50 us", MEDIAN),
    ("run_us.p90", "run p90 us", REPORTED),
    ("sleep_us.p10", "sleep p10 us", REPORTED),
    ("sleep_us.p50", "sleep p50 us", MEDIAN),
    ("sleep_us.p90", "sleep p90 us", REPORTED),
    # The wait from a wake-up to the CPU: reported, to show where the model's scheduling
    # latency differs; a starved task's shows in the longest wait below.
    ("wait_us.p50", "wait for a CPU p50 us", REPORTED),
    ("wait_us.p90", "wait for a CPU p90 us", REPORTED),
    *[(f"wakeup_context_pct.{c}", f"woken from {c} %", SHARE) for c in CONTEXTS],
    # Placement on a shared VM varies from run to run (the host moves vCPUs): reported only.
    ("same_cpu_wakeup_pct", "wake-ups on the waker's CPU %", REPORTED),
    # How long the tasks slept before each kind of wake-up: a waker on the other CPU ends a
    # sleep as soon as it gets to it, one on the same CPU only once the sleeper's CPU ran it.
    ("sleep_same_cpu_us.p50", "  sleep before those, p50 us", REPORTED),
    ("sleep_other_cpu_us.p50", "  sleep before the others, p50 us", REPORTED),
    # A guest kernel's vCPU packing keeps a task whose CPU is busy there (`vcpu_pack`).
    ("kept_on_busy_cpu_pct", "woken while its CPU runs another, kept there %", REPORTED),
    # Of those, an interrupt's on that CPU itself (mainline sends them to an idle CPU).
    ("kept_irq_there_pct", "  of them by an interrupt there, kept %", REPORTED),
    # A wake-up from another CPU that preempts the task running where it lands: its
    # reschedule's IPI and whether the running task blocks before it.
    ("remote_preempt_pct", "woken from another CPU onto a busy one, preempts %", REPORTED),
    # A wake-up logged on the CPU it lands on while another task runs there (the waker's own,
    # or an interrupt's over it): preempted at the return to user mode, or not.
    ("local_preempt_pct", "woken on its busy CPU from there, preempts %", REPORTED),
    # ... and how long after sched_waking the switch comes: at the waker's return to user mode.
    ("local_preempt_delay_us", "  preempting: wake-up to the switch, mean us", REPORTED),
    # Moves to another CPU (wake-up placement and the balancers): as placement, reported.
    ("migrations_per_op", "moved to another CPU per op", REPORTED),
    # Runs counted at the role's mean run, their start unlogged (docs/recording.md).
    ("unlogged_run_pct", "runs begun unlogged, at the mean run %", REPORTED),
]
"""(key in a role's statistics, label, tolerance), in the order tables show them."""

RENDER_MARGIN_S = 0.5
"""How much of the model's warm-up its trace keeps before the measured window: wake-ups and
their wakings, idle periods and switches from idle that a window's first events pair with."""

SAMPLED_OVER = {
    "sleep_d_pct": "blocks",
    "run_us.p50": "runs",
    "sleep_us.p50": "sleeps",
    **{f"wakeup_context_pct.{c}": "wakeups" for c in CONTEXTS},
}
"""The judged shares and medians, each with the count (a role's `samples`) it is taken over."""

MEDIAN_INTERVALS = {"run_us.p50": "run_us.p50_interval", "sleep_us.p50": "sleep_us.p50_interval"}
"""The judged medians, each with its 90% sampling interval (`behaviour.median_interval`)."""

WHOLE_RUN_SAMPLED_OVER = {"idle_pull_pct": "idle_pull_chances"}
"""The same for the whole run's shares (the count a key of the whole run's statistics)."""

WHOLE_RUN: list[tuple[str, str, Tolerance]] = [
    # The benchmark's rate: per-op statistics can all agree while the model runs at another
    # rate (its CPUs busier or idler than the machine's); on a shared VM rates are noisy.
    ("operations_per_s", "operations per s", REPORTED),
    ("forks_per_s", "forks per s", REPORTED),
    ("execs_per_s", "execs per s", REPORTED),
    # Any task's, the benchmark's or not: hundreds of ms mark the starved state of the kernel's
    # task groups that docs/recording.md describes.
    ("longest_wait_ms", "longest wait for a CPU ms", REPORTED),
    # New-idle balancing's decision, the kernel version's rule (`dvfslab.traces.idle_pulls`).
    ("idle_pull_pct", "going idle, takes a waiting task %", SHARE),
]


def _median_index(values: list[float | None]) -> int | None:
    """Which of `values` (one per run, None where a run has none) is their median as `_median`
    takes it, the lower middle one for an even count; None when no run has one."""
    known = sorted((v, i) for i, v in enumerate(values) if v is not None)
    return known[(len(known) - 1) // 2][1] if known else None


def _median(values: list[float]) -> float:
    """The median of sorted `values`, the lower of the middle two for an even count (a value
    one of the runs had)."""
    return values[(len(values) - 1) // 2]


def recorded_runs(rec: Recording) -> list[dict[str, Any]]:
    """The statistics of the recording and of each of its repeats (`Recording.repeats`), the
    recording's first."""
    return [recorded_behaviour(rec), *(recorded_behaviour(r) for r in load_repeats(rec))]


def recorded_behaviour(rec: Recording) -> dict[str, Any]:
    """The recording's statistics, over its traced window."""
    from dvfslab.platforms import describe_platform
    from dvfslab.traces.read import parse_text

    text = rec.trace_text()
    trace = parse_text(text, str(rec.trace_path))
    window = (rec.window_start_s, rec.window_start_s + rec.window_s)
    ops = _operations(rec, trace, rec.operations, window)
    stats = behaviour(trace, rec.roles, ops, _fixed_khz(describe_platform(rec.platform)), window)
    untraced = switch_counts.read_header(text).get("untraced")
    shares = untraced_preempted_pct(untraced[1], rec.roles) if untraced else {}
    for role, role_stats in stats["roles"].items():
        role_stats["preempted_pct_untraced"] = shares.get(role)
    stats["operations_reported"] = rec.operations / rec.operation_size
    lost = idle_events_lost_on(trace)
    stats["idle_events_lost_on_cpus"] = lost
    mix = role_mix_by_cpu(trace, rec.roles, window)
    stats["idle_events_lost_role_mix"] = {str(c): mix.get(c, {}) for c in lost}
    return stats


def idle_events_lost_on(trace: Trace) -> list[int]:
    """The CPUs whose idle task's events outside interrupts are missing from `trace`: it logs
    switches to the idle task there (at least 2, so that the trace's end cannot explain it) and
    never one from it. A KVM guest's vCPU can lose them all (docs/recording.md)."""
    sw = trace.switches
    to_idle = sw[sw["next_pid"] == 0]["cpu"].value_counts()
    from_idle = set(sw[sw["prev_pid"] == 0]["cpu"].astype(int))
    return sorted(int(c) for c, n in to_idle.items() if n >= 2 and int(c) not in from_idle)


_IDLE_LINE = re.compile(r"^\s*<idle>-0\s+\[(\d+)\]\s+(\S+)\s+\S+:\s+(\w+):")
LOST_IDLE_EVENTS = frozenset({"sched_switch", "cpu_idle"})
"""What a CPU that loses its idle task's events misses of the model's rendered trace: the
switches from idle and the `cpu_idle` entries and exits. Not the wake-ups: the rendered
sched_wakeup lines do not say whether an interrupt logged them, and the model's
process-context wakings under the idle task are an exiting task's wake of its parent, logged
after its last switch (the kernel's exit_notify wakes it before), not the idle task's."""


def drop_idle_events(text: str, cpus: list[int]) -> str:
    """ftrace `text` without the events LOST_IDLE_EVENTS names that the idle task logs outside
    interrupts (a `.` in the flags' context place) on `cpus`."""
    if not cpus:
        return text
    lost = set(cpus)

    def kept(line: str) -> bool:
        m = _IDLE_LINE.match(line)
        if m is None or int(m.group(1)) not in lost or m.group(3) not in LOST_IDLE_EVENTS:
            return True
        flags = m.group(2)
        return len(flags) > 2 and flags[2] != "."

    return "".join(line for line in text.splitlines(keepends=True) if kept(line))


def role_mix_by_cpu(
    trace: Trace, roles: dict[str, str], window: tuple[float, float]
) -> dict[int, dict[str, float]]:
    """Each CPU's switch-outs of the roles' tasks within `window`, as shares by role: which of
    the benchmark's tasks a CPU ran (a switch-out ends every run, logged even where the
    switch-in was lost)."""
    patterns = {role: re.compile(p) for role, p in roles.items()}
    pid_role = pid_roles(trace, patterns)
    sw = trace.switches
    inside = sw[(sw["time_s"] >= window[0]) & (sw["time_s"] <= window[1])]
    counts: dict[int, dict[str, int]] = {}
    for cpu, prev in zip(inside["cpu"], inside["prev_pid"]):
        role = pid_role.get(int(prev))
        if role is not None:
            by_role = counts.setdefault(int(cpu), {})
            by_role[role] = by_role.get(role, 0) + 1
    return {
        cpu: {role: n / sum(by_role.values()) for role, n in by_role.items()}
        for cpu, by_role in counts.items()
    }


MIX_DISTANCE_TO_MOVE = 0.5
"""How much nearer (L1 distance of role shares, 0 to 2) another of the model's CPUs must be to
a recorded CPU's mix of tasks than the model's CPU of the same number for its idle events to
be the ones the model's trace loses: the CPUs' numbers are the scheduler's accident, the tasks
they ran are the benchmark's, and only a clear split (netperf's two tasks, one a CPU) moves."""


def model_cpus_losing_idle_events(
    lost: list[int],
    recorded_mix: dict[str, dict[str, float]],
    model_mix: dict[int, dict[str, float]],
) -> list[int]:
    """The model's CPUs whose idle events its trace should lose, for the recording's `lost`
    CPUs: each the model's CPU that ran the same mix of the benchmark's tasks (`role_mix_by_cpu`)
    as the recorded one, the same number unless another is clearly nearer."""

    def distance(a: dict[str, float], b: dict[str, float]) -> float:
        return sum(abs(a.get(r, 0.0) - b.get(r, 0.0)) for r in set(a) | set(b))

    chosen: list[int] = []
    for cpu in lost:
        mix = recorded_mix.get(str(cpu), {})
        free = [c for c in model_mix if c not in chosen]
        if not mix or not free:
            chosen.append(cpu)
            continue
        nearest = min(free, key=lambda c: (distance(mix, model_mix[c]), c != cpu))
        same = distance(mix, model_mix.get(cpu, {})) if cpu not in chosen else float("inf")
        moves = distance(mix, model_mix[nearest]) + MIX_DISTANCE_TO_MOVE <= same
        chosen.append(nearest if moves else cpu)
    return chosen


def modelled_behaviour(
    rec: Recording,
    seed: int = 0,
    idle_events_lost_on_cpus: list[int] | None = None,
    lost_role_mix: dict[str, dict[str, float]] | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The model's statistics over its measured stretch, on the recording machine's preset
    under `performance` at the recording's kernel version; and the run's result summary.
    `idle_events_lost_on_cpus`: CPUs whose idle task's events outside interrupts the recording
    lost (`idle_events_lost_on`); the model's trace loses the same before it is read, on the
    model's CPUs that ran the same tasks when `lost_role_mix` gives the recorded CPUs' mix
    (`model_cpus_losing_idle_events`)."""
    import dvfslab
    from dvfslab.platforms import describe_platform
    from dvfslab.traces.ftrace import render
    from dvfslab.traces.read import parse_text

    warmup_ms = round(rec.model_warmup_s * 1000)
    sep = "," if ":" in rec.workload else ":"
    workload = f"{rec.workload}{sep}warmup_ms={warmup_ms}"
    end_s = rec.model_warmup_s + rec.model_duration_s
    result = dvfslab.simulate(
        rec.platform, model_governor(rec), workload, duration_s=end_s, seed=seed, timeline=True
    )
    summary = result.to_dict()
    _check_run_outlasts_stretch(rec, summary["sim_time_s"])
    ops = summary.get("operations")
    if ops is None:
        raise ValueError(f"{rec.workload}: the model counts no operations to compare per op")
    # The warm-up's text would only be read past: rendered from a little before the window, with
    # what the statistics need of earlier (`render`'s `since_s`).
    since_s = max(0.0, rec.model_warmup_s - RENDER_MARGIN_S)
    text = render(result, since_s, runtime=False)
    window = (rec.model_warmup_s, end_s)
    lost = idle_events_lost_on_cpus or []
    if lost and lost_role_mix is not None:
        full = parse_text(text, f"model of {rec.name}")
        lost = model_cpus_losing_idle_events(
            lost, lost_role_mix, role_mix_by_cpu(full, rec.roles, window)
        )
    trace = parse_text(drop_idle_events(text, lost), f"model of {rec.name}")
    counted = _operations(rec, trace, float(ops["count"]), window)
    stats = behaviour(
        trace, rec.roles, counted, _fixed_khz(describe_platform(rec.platform)), window
    )
    stats["operations_reported"] = float(ops["count"]) / rec.operation_size
    for role_stats in stats["roles"].values():
        switch_outs = role_stats["switch_outs_per_op"]
        role_stats["preempted_pct_untraced"] = (
            100.0 * role_stats["preempted_per_op"] / switch_outs if switch_outs else None
        )
    return stats, summary


def untraced_preempted_pct(counts: switch_counts.Counts, roles: dict[str, str]) -> dict[str, Any]:
    """The share of each role's switch-outs that were preemptions, from the kernel's own counts
    by comm (a role's comms are those its pattern matches, as in the trace), and of all the
    roles' together; None for a role with no switch counted."""
    patterns = {role: re.compile(p) for role, p in roles.items()}
    totals = {role: [0, 0] for role in [*roles, ALL]}
    for comm, (voluntary, involuntary) in counts.items():
        role = role_of_comm(patterns, comm)
        if role is not None:
            for r in (role, ALL):
                totals[r][0] += voluntary
                totals[r][1] += involuntary
    return {r: (100.0 * i / (v + i) if v + i else None) for r, (v, i) in totals.items()}


def _check_run_outlasts_stretch(rec: Recording, measured_s: float) -> None:
    """A run of fixed work (hackbench's messages) ends when its tasks have exited: a measured
    stretch that outlasts it counts the benchmark's last senders and its exits, a phase of
    its own, against a recording made in the middle of the run, and divides by a shorter
    stretch than it says."""
    if measured_s < rec.model_duration_s * (1 - 1e-9):
        end_s = rec.model_warmup_s + measured_s
        raise ConfigError(
            f"{rec.manifest_path}: model_duration_s: "
            f"the model's run of {rec.workload} ends {end_s:.3g} s in, inside its measured "
            f"stretch ({rec.model_warmup_s:g} to "
            f"{rec.model_warmup_s + rec.model_duration_s:g} s); expected a stretch inside "
            f"the run, at most {measured_s:.2g} s after model_warmup_s"
        )


def _operations(
    rec: Recording, trace: Trace, reported: float, window: tuple[float, float]
) -> float:
    """The operations in `window` that per-op statistics divide by: for a request/response
    benchmark the round trips counted in the trace, by its round trips per operation (the
    recording's and the model's alike), else the benchmark's own count (`reported`), in
    operations of `operation_size` units."""
    if rec.round_trips is None:
        return reported / rec.operation_size
    requester, responder = rec.round_trips
    trips = round_trips(trace, rec.roles, requester, responder, window)
    return trips / rec.round_trips_per_operation


def model_governor(rec: Recording) -> str:
    """`performance` at the recording's kernel version (its major.minor and stable update, as
    in 6.18.44), so that the scheduler's version-dependent rules are the recorded kernel's;
    the simulator refuses a version it does not model."""
    m = re.match(r"\d+\.\d+(\.\d+)?", rec.kernel)
    return f"performance:kernel={m.group(0)}" if m else "performance"


def _fixed_khz(platform: dict[str, Any]) -> int | None:
    """The frequency of a preset with one P-state (a machine without cpufreq), else None."""
    khz = {f for p in platform["policies"] for f in p.get("frequencies_khz", [])}
    return khz.pop() if len(khz) == 1 else None


def compare(
    recorded: dict[str, Any], modelled: dict[str, Any], repeats: list[dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """One row per statistic and role: both values, the tolerance and the verdict. With the
    statistics of other runs (`repeats`), the recorded value is the runs' median, each run's
    value is kept (`recorded_runs`, the recording's first) and the verdict is
    `Tolerance.judge_runs`'."""
    runs = [recorded, *(repeats or [])]
    rows = []
    for role in recorded["roles"]:
        m = modelled["roles"][role]
        for key, label, tol in STATISTICS:
            values = [statistic(run["roles"][role], key) for run in runs]
            row = _row(role, key, label, values, statistic(m, key), tol)
            if key in SAMPLED_OVER:
                sides = [m, *(r["roles"][role] for r in runs)]
                row = _too_few_samples(row, sides, f"samples.{SAMPLED_OVER[key]}")
            # Sampling intervals: the recorded side's is the run whose value is the runs' median
            # (`_median`'s), not every run's: another run within tolerance of the model is not
            # what `Tolerance.judge_runs` accepts.
            middle = _median_index(values)
            if key in MEDIAN_INTERVALS and middle is not None:
                interval = _interval(runs[middle]["roles"][role], MEDIAN_INTERVALS[key])
                row = _within_sampling(row, tol, interval, _interval(m, MEDIAN_INTERVALS[key]))
            if tol is PER_OP_COUNT and middle is not None:
                interval = count_interval(runs[middle]["roles"][role], key, runs[middle])
                row = _within_sampling(row, tol, interval, count_interval(m, key, modelled))
            rows.append(row)
    for key, label, tol in WHOLE_RUN:
        values = [statistic(run, key) for run in runs]
        row = _row(ALL, key, label, values, statistic(modelled, key), tol)
        if key in WHOLE_RUN_SAMPLED_OVER:
            row = _too_few_samples(row, [modelled, *runs], WHOLE_RUN_SAMPLED_OVER[key])
        rows.append(row)
    return rows


def _too_few_samples(
    row: dict[str, Any], sides: list[dict[str, Any]], count: str
) -> dict[str, Any]:
    """`row` reported instead of judged when a side's statistic is over fewer than
    MIN_SAMPLES events (`count`, a dotted key of each side's statistics): too few to tell a
    share or a median apart from its noise."""
    fewest = min(statistic(side, count) or 0 for side in sides)
    if fewest < MIN_SAMPLES and row["verdict"] in ("ok", "off"):
        return {**row, "verdict": "reported", "too_few_samples": int(fewest)}
    return row


def count_interval(
    role_stats: dict[str, Any], key: str, side: dict[str, Any]
) -> tuple[float, float] | None:
    """The 90% sampling interval of a per-operation count (`key` of a role's statistics), the
    exact Poisson interval of the events counted over the side's window divided by its
    operations: a role preempted 18 times in a window is preempted 11.6 to 26.7 times in a
    window like it (a count's relative spread, 1.645 / sqrt(n), is the ±25% tolerance itself at
    43 events). A count of 0 keeps 0 as its lower end."""
    from scipy.stats import chi2

    value, ops = statistic(role_stats, key), statistic(side, "operations")
    if value is None or not ops:
        return None
    events = round(value * ops)
    lo = chi2.ppf(0.05, 2 * events) / 2 if events else 0.0
    hi = chi2.ppf(0.95, 2 * events + 2) / 2
    return float(lo) / ops, float(hi) / ops


def _interval(stats: dict[str, Any], key: str) -> tuple[float, float] | None:
    value = _at(stats, key)
    return None if value is None else (float(value[0]), float(value[1]))


def _within_sampling(
    row: dict[str, Any],
    tol: Tolerance,
    recorded: tuple[float, float] | None,
    modelled: tuple[float, float] | None,
) -> dict[str, Any]:
    """A median or count `row` that is off, turned ok when the model's value and the recorded one
    cannot be told apart from their samples: some value in the model's 90% sampling interval is
    within tolerance of some value in the recorded one's (a count's: `count_interval`; a
    median's: `behaviour.median_interval`). Where a median falls between two
    modes (a shell's short D sleeps and long waits for its children, in nearly equal
    numbers) a few events more on one side carry it across the gap, on the machine as in
    the model, and its point value says nothing; where values crowd around the median the
    intervals are narrow and the rule is the tolerance's own. Flagged in the row."""
    if row["verdict"] != "off" or modelled is None or recorded is None:
        return row
    (m_lo, m_hi), (r_lo, r_hi) = modelled, recorded
    # The two intervals' nearest values: the recorded one closest to the model's interval, and
    # the model's closest to that (equal where the intervals overlap).
    recorded_near = min(max(r_lo, m_lo), r_hi)
    model_near = min(max(recorded_near, m_lo), m_hi)
    if tol.judge(recorded_near, model_near) == "ok":
        return {**row, "verdict": "ok", "in_sampling_interval_only": True}
    return row


def _row(
    role: str, key: str, label: str, runs: list[Any], modelled: Any, tol: Tolerance
) -> dict[str, Any]:
    row = {"role": role, "statistic": key, "label": label, "tolerance": tol.text()}
    if len(runs) == 1:
        return {
            **row,
            "recorded": runs[0],
            "model": modelled,
            "verdict": tol.judge(runs[0], modelled),
        }
    known = sorted(v for v in runs if v is not None)
    median = _median(known) if known else None
    verdict = tol.judge_runs(runs, modelled)
    return {
        **row,
        "recorded": median,
        "recorded_runs": runs,
        "model": modelled,
        "verdict": verdict,
        # Within tolerance only because a run went as far as the model: say so.
        "in_runs_range_only": verdict == "ok" and tol.judge(median, modelled) == "off",
    }


def statistic(stats: dict[str, Any], key: str) -> float | None:
    """A statistic by its dotted key (`wakeup_context_pct.softirq`), None where it has none."""
    value = _at(stats, key)
    return None if value is None else float(value)


def _at(stats: dict[str, Any], key: str) -> Any:
    """The value at a dotted key of nested dicts, None where there is none."""
    value: Any = stats
    for part in key.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def check(
    rec: Recording, seed: int = 0, runs: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """The recording against its model: both sides' statistics and the verdicts. `runs` is
    the recorded side when it was read already (`recorded_runs`)."""
    if runs is None:
        runs = recorded_runs(rec)
    recorded = runs[0]
    modelled, summary = modelled_behaviour(
        rec, seed, recorded["idle_events_lost_on_cpus"], recorded["idle_events_lost_role_mix"]
    )
    rows = compare(recorded, modelled, runs[1:])
    judged = [row for row in rows if row["verdict"] in ("ok", "off")]
    return {
        "recording": rec.name,
        "workload": rec.workload,
        "platform": rec.platform,
        "operations_unit": rec.operations_label(),
        "operations_counted": (
            "the benchmark's own count"
            if rec.round_trips is None
            else "round trips {} -> {} in each trace".format(*rec.round_trips)
            + (
                ""
                if rec.round_trips_per_operation == 1
                else f", {rec.round_trips_per_operation} an operation"
            )
        ),
        "autogroup": rec.autogroup,
        "recorded": recorded,
        "repeats": len(runs) - 1,
        "model": modelled,
        "model_metric": summary["metric"],
        "rows": rows,
        "within": sum(row["verdict"] == "ok" for row in judged),
        "judged": len(judged),
    }


def check_seeds(rec: Recording, seeds: list[int], progress: Any = None) -> dict[str, Any]:
    """`check` with the model run at each of `seeds`: one seed is one draw of the run's
    chances (when the guest's background tasks bring two tasks onto one CPU, how start phases
    fall), so a statistic's verdict, and the total within tolerance, are worth comparing
    between models only over several. Per statistic: the model's median over the seeds (the
    lower of the middle two for an even number), in how many of them it was within tolerance,
    and as its verdict whether that was most of them; each seed's own report besides.
    `progress` is advanced once a seed."""
    runs = recorded_runs(rec)
    reports = []
    for seed in seeds:
        reports.append(check(rec, seed, runs))
        if progress is not None:
            progress.advance()
    rows = []
    for i, row in enumerate(reports[0]["rows"]):
        values = [r["rows"][i]["model"] for r in reports]
        known = sorted(v for v in values if v is not None)
        verdicts = [r["rows"][i]["verdict"] for r in reports]
        within = sum(v == "ok" for v in verdicts)
        judged = sum(v in ("ok", "off") for v in verdicts)
        rows.append(
            {
                **row,
                "model": known[(len(known) - 1) // 2] if known else None,
                "model_by_seed": values,
                # Judged: within tolerance in most seeds, or not.
                "verdict": ("ok" if 2 * within > judged else "off") if judged else row["verdict"],
                "within_seeds": within,
                "judged_seeds": judged,
                "in_runs_range_only_seeds": sum(
                    bool(r["rows"][i].get("in_runs_range_only")) for r in reports
                ),
                "in_sampling_interval_only_seeds": sum(
                    bool(r["rows"][i].get("in_sampling_interval_only")) for r in reports
                ),
            }
        )
    first = reports[0]
    return {
        **{
            k: first[k]
            for k in (
                "recording",
                "workload",
                "platform",
                "operations_unit",
                "operations_counted",
                "autogroup",
                "repeats",
            )
        },
        "recorded": first["recorded"],
        "seeds": seeds,
        "rows": rows,
        "within_by_seed": [r["within"] for r in reports],
        "judged": first["judged"],
        "by_seed": reports,
    }
