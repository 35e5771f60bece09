"""dvfslab: simulate how Linux picks CPU frequencies, and what those choices cost and buy.

    >>> import dvfslab
    >>> result = dvfslab.simulate("pixel6", "performance", "periodic:threads=4", duration_s=1)
    >>> result.metric, result.energy_j, result.df_cpus_summary()

`simulate` returns a `SimResult`; every error it raises is a `DvfsError`, bad input a
`ConfigError` (also a ValueError). A `Governor` subclass is a governor written in Python; its
`update` sees a `Policy` (with a `Task` per run-queue task). `list_platforms()` lists the
shipped platform presets; `read_trace(path)` reads a recorded ftrace text trace (or a
trace.dat) into tables;
`replay_governor(path, platform, governor)` sets a governor's decisions beside a recording's.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from dvfslab._core import ConfigError, DvfsError, Policy, SimulationError, Task
from dvfslab._core import version as _native_version
from dvfslab.api import simulate
from dvfslab.governors import Governor
from dvfslab.platforms import list_platforms
from dvfslab.result import Metric, SimResult

if TYPE_CHECKING:
    from dvfslab.platforms import PlatformRef
    from dvfslab.traces.read import Trace

# The package version; `_core.version()` adds a digest of the simulator's sources after a "+",
# which results stores use so that runs of another simulator build are never reused.
__version__: str = _native_version().split("+", 1)[0]

__all__ = [
    "ConfigError",
    "DvfsError",
    "Governor",
    "Metric",
    "Policy",
    "SimResult",
    "SimulationError",
    "Task",
    "__version__",
    "list_platforms",
    "read_trace",
    "replay_governor",
    "simulate",
]


def read_trace(path: str | os.PathLike[str], tsc_khz: float | None = None) -> Trace:
    """A recorded trace as tables (`dvfslab.traces.read.Trace`): switches, wake-ups, frequency,
    idle states and markers. `tsc_khz`: the clock's rate when the timestamps are raw TSC counts
    (trace_clock x86-tsc). pandas is imported only when a trace is read."""
    from dvfslab.traces.read import read_trace as read

    return read(path, tsc_khz=tsc_khz)


def replay_governor(
    path: str | os.PathLike[str], platform: PlatformRef, governor: str, **options: Any
) -> dict[str, Any]:
    """A governor replayed against a recorded trace: its decisions beside the recorded
    frequency changes (`dvfslab.traces.replay.replay_governor`, which takes `window_ms` and
    `tsc_khz`)."""
    from dvfslab.traces.replay import replay_governor as replay

    return replay(path, platform, governor, **options)
