"""Replay a governor against a recorded trace (open loop): the recording's utilisation, RT and
idle events go to the simulator's own governor code (`dvfslab_sim::trace::replay`), and its
frequency decisions are set beside the recorded `cpu_frequency` changes."""

from __future__ import annotations

import json
import os
from typing import Any

from dvfslab import _core
from dvfslab._core import ConfigError
from dvfslab.platforms import PlatformRef, load_platform

DEFAULT_WINDOW_MS = 5.0
"""A model change and a recorded one pair within this time: the kernel's slow path (a kthread
for drivers that do not switch from the scheduler) logs a change some ms after the decision."""


def replay_governor(
    trace: str | os.PathLike[str],
    platform: PlatformRef,
    governor: str,
    *,
    window_ms: float = DEFAULT_WINDOW_MS,
    tsc_khz: float | None = None,
) -> dict[str, Any]:
    """Feed a recorded trace's inputs to `governor` on `platform` and compare its decisions
    with the recorded changes. Keys: decisions, recorded_changes, model_changes, exact_match,
    within_one_opp (None when no decision was judged), unexplained, explainable, unobservable,
    timing_ms, changes, divergences, warm_up, at_end (docs/traces.md). `tsc_khz`: the clock's
    rate when the trace's timestamps are raw counts."""
    from dvfslab.traces.read import trace_text  # pandas, only when a trace is read

    text = trace_text(trace)
    output = _core.replay_governor(
        *load_platform(platform), governor, text, str(trace), window_ms, tsc_khz
    )
    report: dict[str, Any] = json.loads(output)
    return report


def scan_tunable(
    trace: str | os.PathLike[str],
    platform: PlatformRef,
    governor: str,
    key: str,
    values: list[float],
    *,
    window_ms: float = DEFAULT_WINDOW_MS,
    tsc_khz: float | None = None,
) -> dict[str, Any]:
    """Replay `governor` with its tunable `key` at each of `values`, and find per policy the
    values under which the model reproduces the recording there: every judged recorded change
    of the policy to the exact OPP, and no change the recording does not have. A trace does
    not record how its governor was tuned; these are the settings it allows.

    Keys: key, values, and per policy (by index) its first CPU, judged recorded changes and
    the values that fit (`fits`), each value's `exact` and `extra` counts beside."""
    from dvfslab.governors import with_settings
    from dvfslab.platforms import describe_platform
    from dvfslab.traces.read import trace_text

    params = governor.partition(":")[2]
    if any(p.split("=", 1)[0].strip() == key for p in params.split(",") if p.strip()):
        raise ConfigError(f"governor {governor!r}: {key} is what the scan sets; leave it out")
    if not values:
        raise ConfigError(f"scan of {key}: no values")
    text = trace_text(trace)
    platform_json, source = load_platform(platform)
    first_cpus = [min(p["cpus"]) for p in describe_platform(platform)["policies"]]
    policies: list[dict[str, Any]] = [
        {"policy": i, "first_cpu": cpu, "judged": 0, "fits": [], "per_value": []}
        for i, cpu in enumerate(first_cpus)
    ]
    # Whole values as integers, as a user writes them (the spec and the report show them).
    numbers = [int(v) if float(v).is_integer() else v for v in values]
    for number in numbers:
        spec = with_settings(governor, f"{key}={number}")
        report = json.loads(
            _core.replay_governor(platform_json, source, spec, text, str(trace), window_ms, tsc_khz)
        )
        for entry in policies:
            mine = [c for c in report["changes"] if c["policy"] == entry["policy"]]
            judged = [c for c in mine if c["recorded_khz"] is not None]
            exact = sum(c["status"] == "exact" for c in judged)
            extra = sum(c["status"] == "extra" for c in mine)
            entry["judged"] = len(judged)
            entry["per_value"].append({"value": number, "exact": exact, "extra": extra})
            if judged and exact == len(judged) and extra == 0:
                entry["fits"].append(number)
    return {
        "key": key,
        "values": numbers,
        "policies": policies,
    }
