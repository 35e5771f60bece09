"""`dvfslab.simulate`: one platform, one governor configuration, one workload, one seed."""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Callable
from pathlib import Path
from typing import Union

from dvfslab import _core
from dvfslab._core import ConfigError
from dvfslab._files import read_text
from dvfslab.governors import Governor
from dvfslab.governors import resolve as resolve_governor
from dvfslab.platforms import PlatformRef, load_platform
from dvfslab.result import NS_PER_S, SimResult

SEED_MAX = 2**64 - 1
DURATION_NS_MAX = 2**64 - 1

WorkloadRef = Union[str, "os.PathLike[str]"]
"""A workload spec ("periodic:threads=4,run_us=2000"), the path of an rt-app JSON file, or
"trace:FILE", a recorded trace's tasks."""

TRACE_PREFIX = "trace:"
"""A workload `trace:FILE` runs the tasks of a recorded trace (dvfslab.traces.workload)."""


def simulate(
    platform: PlatformRef,
    governor: str | Governor,
    workload: WorkloadRef,
    duration_s: float | None = None,
    seed: int = 0,
    timeline: bool = False,
    explain: bool = False,
    progress: Callable[[float, float], None] | None = None,
) -> SimResult:
    """Simulate `workload` on `platform` under `governor` and return what it cost and achieved.

    platform:   a shipped preset id (see `dvfslab.list_platforms()`) or a preset file's path
    governor:   a spec, "name:key=value,...", keys being the governor's sysfs tunables,
                e.g. "userspace:scaling_setspeed=1800000" or "performance:hz=1000"; a
                `dvfslab.Governor` instance, or "python:MODULE:CLASS,..." naming one
    workload:   a spec, e.g. "cpu-bound:threads=8", an rt-app JSON file's path, or
                "trace:FILE", the tasks of a recorded trace replayed
    duration_s: simulated seconds; None runs the workload's own default duration
    seed:       the run's only source of randomness: same inputs and seed, same result
    timeline:   also record per-CPU frequency, util_avg and idle-state timelines
    explain:    also record every frequency decision with its inputs (`df_decisions()`)
    progress:   called as progress(now_s, end_s) with the simulated time reached, every 65536
                events (some tens of ms); an exception it raises stops the run

    Ctrl-C stops a run with KeyboardInterrupt. Raises ConfigError (a ValueError) for bad
    input and SimulationError if the run fails.
    """
    workload_text, workload_source = _workload(workload, platform)
    return simulate_text(
        platform,
        governor,
        workload_text,
        workload_source,
        duration_s=duration_s,
        seed=seed,
        timeline=timeline,
        explain=explain,
        progress=progress,
    )


def simulate_text(
    platform: PlatformRef,
    governor: str | Governor,
    workload_text: str,
    workload_source: str | None,
    *,
    duration_s: float | None = None,
    seed: int = 0,
    timeline: bool = False,
    explain: bool = False,
    progress: Callable[[float, float], None] | None = None,
) -> SimResult:
    """`simulate` of a workload given as text: a spec (`workload_source` None) or an rt-app
    document (`workload_source` names it in messages)."""
    platform_json, source = load_platform(platform)
    governor_spec, python_governor = resolve_governor(
        governor if isinstance(governor, Governor) else _spec("governor", governor)
    )
    output = _core.simulate(
        platform_json,
        source,
        governor_spec,
        workload_text,
        duration_ns=duration_ns(duration_s),
        seed=checked_seed(seed),
        timeline=bool(timeline),
        explain=bool(explain),
        workload_source=workload_source,
        progress=progress,
        python_governor=python_governor,
    )
    return SimResult(
        output["result_json"], output["timeline"], output["explain"], output["idle_explain"]
    )


def duration_ns(duration_s: float | None, name: str = "duration_s") -> int | None:
    """Seconds to whole nanoseconds (None stays None); `name` is the setting in messages."""
    if duration_s is None:
        return None
    if isinstance(duration_s, bool) or not isinstance(duration_s, numbers.Real):
        raise ConfigError(f"{name} must be a number of seconds (got {duration_s!r})")
    seconds = float(duration_s)
    shown = int(seconds) if seconds.is_integer() and abs(seconds) < 1e15 else seconds
    if not math.isfinite(seconds):
        raise ConfigError(f"{name} must be a finite number of seconds (got {seconds})")
    if seconds <= 0:
        raise ConfigError(f"{name} must be > 0 (got {shown})")
    # Compared in seconds first: a huge float times 1e9 is infinite, and infinity has no int.
    too_long = seconds > DURATION_NS_MAX / NS_PER_S
    ns = 0 if too_long else round(seconds * NS_PER_S)
    if not too_long and ns < 1:
        raise ConfigError(f"{name} must be at least 1 ns (got {shown})")
    if too_long or ns > DURATION_NS_MAX:
        raise ConfigError(
            f"{name} must be at most {DURATION_NS_MAX / NS_PER_S:.0f} s (got {shown})"
        )
    return ns


def checked_seed(seed: int, name: str = "seed") -> int:
    """The seed as an int in 0..2^64-1; `name` is the setting in messages."""
    if (
        isinstance(seed, bool)
        or not isinstance(seed, numbers.Integral)
        or not 0 <= seed <= SEED_MAX
    ):
        raise ConfigError(f"{name} must be an integer in 0..{SEED_MAX} (got {seed!r})")
    return int(seed)


def _workload(workload: WorkloadRef, platform: PlatformRef) -> tuple[str, str | None]:
    """(text, None) for a spec; (the file's text, its name) for an rt-app .json file; (the
    rt-app text that replays it, "trace:FILE") for a recorded trace."""
    if isinstance(workload, str) and workload.startswith(TRACE_PREFIX):
        from dvfslab.traces.workload import rtapp_for

        return rtapp_for(workload[len(TRACE_PREFIX) :], platform), workload
    if not isinstance(workload, os.PathLike) and not (
        isinstance(workload, str) and workload.lower().endswith(".json")
    ):
        return _spec("workload", workload), None
    path = Path(os.fspath(workload))
    return read_text(path, "rt-app file"), str(path)


def _spec(what: str, spec: object) -> str:
    if isinstance(spec, os.PathLike):
        return str(os.fspath(spec))
    if not isinstance(spec, str):
        raise TypeError(
            f"{what} must be a spec string 'name:key=value,...' (got {type(spec).__name__})"
        )
    return spec
