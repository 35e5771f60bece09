"""Replay a governor against a recorded trace (open loop): the recording's utilisation, RT and
idle events go to the simulator's own governor code (`dvfslab_sim::trace::replay`), and its
frequency decisions are set beside the recorded `cpu_frequency` changes."""

from __future__ import annotations

import json
import os
from typing import Any

from dvfslab import _core
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
) -> dict[str, Any]:
    """Feed a recorded trace's inputs to `governor` on `platform` and compare its decisions
    with the recorded changes. Keys: decisions, recorded_changes, model_changes, exact_match,
    within_one_opp, unexplained, explainable, unobservable, timing_ms, changes, divergences,
    warm_up, at_end (docs/traces.md)."""
    from dvfslab.traces.read import trace_text  # pandas, only when a trace is read

    text = trace_text(trace)
    output = _core.replay_governor(*load_platform(platform), governor, text, str(trace), window_ms)
    report: dict[str, Any] = json.loads(output)
    return report
