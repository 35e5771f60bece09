"""Type stub for `dvfslab._core`, the native simulator module (crates/dvfslab-py).

Private: use the `dvfslab` package, which wraps these calls. Everything structured crosses the
boundary as JSON text, except the timelines, which come as columns of Python lists.
"""

from collections.abc import Callable
from typing import Any, TypedDict

class DvfsError(Exception):
    """Root of every error the simulator raises."""

class ConfigError(DvfsError, ValueError):
    """Bad input: the message names the file or field and what was expected."""

MAX_TASKS: int
"""The most tasks a run may create (its workload's, kernel threads and forks together)."""
TRACE_MAX_CPUS: int
"""The most CPUs a trace may number (the kernel's limit)."""

class SimulationError(DvfsError):
    """The simulation itself could not go on."""

class FrequencyColumns(TypedDict):
    """One row per actual frequency change of a CPU."""

    time_ns: list[int]
    cpu: list[int]
    freq_khz: list[int]

class UtilColumns(TypedDict):
    """A CPU's util_avg (0..1024), sampled at each PELT refresh."""

    time_ns: list[int]
    cpu: list[int]
    util_avg: list[int]

class IdleColumns(TypedDict):
    """The state a CPU entered: "C0" when it starts running, or an idle state's name."""

    time_ns: list[int]
    cpu: list[int]
    state: list[str]

class SwitchColumns(TypedDict):
    """Context switches: on `cpu`, task `prev` (-1 = idle) stops in `prev_state` ("R"
    preempted, "S" sleeping, "X" exited, "I" idle) and task `next` (-1 = idle) runs."""

    time_ns: list[int]
    cpu: list[int]
    prev: list[int]
    prev_state: list[str]
    next: list[int]

class WakeupColumns(TypedDict):
    """A task made runnable on a CPU."""

    time_ns: list[int]
    task: list[int]
    cpu: list[int]

class Timeline(TypedDict):
    frequency: FrequencyColumns
    util: UtilColumns
    idle: IdleColumns
    switch: SwitchColumns
    wakeup: WakeupColumns
    task_names: list[str]
    """Task names by task id."""
    task_prios: list[int]
    """The kernel's prio of each task by id: 120 + nice for a fair task, 99 - priority for an
    RT one."""

class ExplainColumns(TypedDict):
    """One row per frequency decision; `inputs` holds one column per governor input name
    (NaN where a decision did not have that input)."""

    time_ns: list[int]
    policy: list[int]
    raw_khz: list[int]
    resolved_khz: list[int]
    min_khz: list[int]
    max_khz: list[int]
    hw_khz: list[int]
    inputs: dict[str, list[float]]

class SimulateOutput(TypedDict):
    result_json: str
    """The run's summary, schema "dvfslab-run/1"."""
    timeline: Timeline | None
    """Present only when asked for with `timeline=True`."""
    explain: ExplainColumns | None
    """Present only when asked for with `explain=True`."""
    idle_explain: dict[str, list[Any]] | None
    """Every idle-state choice, one list per column; present only with `explain=True`."""

def version() -> str:
    """The package version and a digest of the simulator's sources, "0.1.0+<digest>": two
    builds with the same string simulate the same way."""

class Policy:
    """What a Python governor sees of its policy at one call (dvfslab.governors)."""

    index: int
    cpus: list[int]
    now_s: float
    now_ns: int
    cpu: int | None
    iowait: bool
    remote: bool
    can_update: bool
    cur_khz: int
    min_khz: int
    max_khz: int
    table_khz: list[int]
    cpuinfo_max_khz: int
    kernel: str
    driver: str
    invariant: bool
    tick_ns: int
    transition_delay_us: int
    util_avg: list[int]
    util_est: list[int]
    runnable_avg: list[int]
    capacity: list[int]
    nr_running: list[int]
    uclamp: list[tuple[int, int] | None]
    rt_runnable: list[bool]
    idle_calls: list[int]
    tasks: list[list[Task]]
    busy_s: list[float]
    idle_s: list[float]
    iowait_s: list[float]
    busy_ns: list[int]
    iowait_ns: list[int]
    energy_j: float
    time_in_state_s: dict[int, float]
    policies_cpus: tuple[tuple[int, ...], ...]
    policies_cur_khz: list[int]

    def resolve_khz(self, khz: int) -> int:
        """cpufreq_driver_resolve_freq: `khz` within the limits, then the lowest table entry at
        or above it (a driver without a table, intel_cpufreq, keeps the clamped kHz)."""

    def arm_timer(self, delay_ms: float) -> None:
        """Arm the policy's timer `delay_ms` from now: `update` then runs with `cpu` None. One
        timer per policy: arming again replaces it. Below 1e-06 ms (1 ns): ValueError."""

class Task:
    """A task on a CPU's run-queue, as `Policy.tasks` lists it."""

    id: int
    util_avg: int
    util_est: int
    uclamp_min: int
    uclamp_max: int
    running: bool
    rt: bool

class SteppedSim:
    """A simulation stepped one decision interval at a time (dvfslab.gym)."""

    tables_khz: list[list[int]]
    policy_cpus: list[list[int]]
    result_json: str | None

    def __init__(
        self,
        platform_json: str,
        platform_source: str,
        governor: str,
        workload: str,
        decision_ns: int,
        *,
        duration_ns: int | None = None,
        seed: int = 0,
        controlled: list[int] | None = None,
        start_opp: list[int] | None = None,
    ) -> None:
        """`controlled`: the policies `step` drives (default: all), the others under the
        built-in `governor`, as is every policy until the first decision unless `start_opp`
        gives each controlled policy's first table index."""
    def step(self, opp: list[int]) -> bool:
        """Ask each controlled policy for its table entry `opp[i]`, run to the next decision;
        True once the run ended."""
    def observe(self) -> dict[str, Any]:
        """time_s, util, idle, busy_s (per CPU), opp, cur_khz (per policy), energy_j and
        policy_energy_j since the start, responses_s (the workload's responses that ended in
        the last interval), truncated (the run reached its duration)."""

def simulate(
    platform_json: str,
    platform_source: str,
    governor: str,
    workload: str,
    *,
    duration_ns: int | None = None,
    seed: int = 0,
    timeline: bool = False,
    explain: bool = False,
    workload_source: str | None = None,
    progress: Callable[[float, float], object] | None = None,
    python_governor: tuple[str, object] | None = None,
) -> SimulateOutput:
    """Run one simulation.

    `platform_source` names the preset in error messages (a file path or a preset id);
    `governor` and `workload` are spec strings (`name:key=value,...`); `duration_ns=None` runs
    the workload's default duration. With `workload_source` (an rt-app file's name, used in
    errors and as the result's workload), `workload` is that file's text. Every 2^16 events
    the run checks for signals (Ctrl-C raises KeyboardInterrupt) and calls
    `progress(now_s, end_s)`; an exception from either stops the run and is raised.
    """

def check(
    platform_json: str,
    platform_source: str,
    governor: str,
    workload: str,
    *,
    duration_ns: int | None = None,
    workload_source: str | None = None,
) -> None:
    """Check a configuration as `simulate` with the same arguments would before running, without
    running it: the platform, the governor spec and its fit to the platform, the workload spec
    (or, with `workload_source`, the rt-app file text in `workload`) and the run's limits (a
    warm-up that ends before `duration_ns`; None = the workload's default duration). Raises
    the ConfigError the run would raise."""

def governors() -> str:
    """JSON list: [{"name", "description", "tunables": [{"name", "unit", "default",
    "description"}]}]."""

def system_tunables() -> str:
    """JSON list of the settings every governor spec accepts besides its own tunables
    (invariance, PELT multiplier, HZ, driver, ...): [{"name", "unit", "default",
    "description"}]."""

def kernel_versions() -> str:
    """JSON: {"default": "6.18", "modelled": "4.7-4.20, 5.0-5.19, 6.0-6.18"}, the kernel versions
    a governor spec's `kernel=` may name."""

def workloads() -> str:
    """JSON list: [{"name", "description", "metric", "unit", "better", "knobs": [{"name",
    "unit", "default", "min", "max", "choices", "integer", "description", "range",
    "source"}]}].

    "range" is [lo, hi] for a knob standing for a constant known only to lie in that range
    (an estimated or calibrated cost, its default inside it), and "source" says where the
    range comes from; both are null for other knobs.
    """

def common_workload_knobs() -> str:
    """JSON list of the knobs every workload spec accepts besides its own (warm-up, background
    kernel threads, start phases, work jitter), each as in `workloads()`: [{"name", "unit",
    "default", "min", "max", "choices", "integer", "description", "range", "source"}]."""

def describe_platform(platform_json: str, platform_source: str) -> str:
    """JSON: {"id", "name", "description", "vendor", "packages", "cores", "cpus",
    "policies": [{"cpus", "min_khz", "max_khz", "base_khz"}], ...}."""

def bench(scenario: str, platform_json: str, seconds_simulated: float) -> str:
    """Run the fixed speed scenario `scenario` on `platform_json` (the scenario's preset).

    JSON: {"scenario", "setup", "events", "sim_time_s", "wall_time_s", "events_per_s",
    "sim_cpu_s_per_wall_s", "busy_cpu_s_per_wall_s"}.
    """

def bench_scenarios() -> str:
    """JSON: [{"name", "platform", "governor", "workload", "default_seconds"}], the fixed speed
    scenarios."""

def replay_governor(
    platform_json: str,
    platform_source: str,
    governor: str,
    trace_text: str,
    trace_source: str,
    window_ms: float,
    tsc_khz: float | None = None,
) -> str:
    """The governor replayed against recorded ftrace text, as JSON (dvfslab.traces.replay)."""

def read_ftrace(text: str, source: str, tsc_khz: float | None = None) -> dict[str, Any]:
    """ftrace text (`source` names it in errors, with the line) as columns: {"cpus_header": int,
    "tsc_khz": the raw-count clock's rate or None, "counts": {event: n}, "table_events":
    [event], and "switches", "wakeups", "frequency", "idle", "markers", "pelt", "util_est",
    "pstate", "lost": {column: list}} (dvfslab.traces.read gives them as DataFrames)."""
