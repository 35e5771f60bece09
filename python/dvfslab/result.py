"""SimResult: one simulation's numbers, and its timelines as DataFrames when they were recorded.

The summary is the run JSON (schema "dvfslab-run/1", documented in the CLI's `run --json`); the
attributes below are its fields. DataFrames follow one naming rule: `df_cpus_<what>()` for all
CPUs, with a `cpu` column, and `df_cpu_<what>(cpu)` for one CPU, without it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from dvfslab._core import ConfigError, DvfsError
from dvfslab._files import replace_atomically

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

    from dvfslab._core import ExplainColumns, Timeline

RESULT_SCHEMA = "dvfslab-run/1"
TIMELINE_SCHEMA = "dvfslab-timeline/1"
NS_PER_S = 1_000_000_000

TIMELINE_SUFFIXES = (".parquet", ".csv")

# Timeline signal -> its value column, as named by the native module and in the DataFrames.
SIGNAL_COLUMNS = {"frequency": "freq_khz", "util": "util_avg", "idle": "state"}


@dataclass(frozen=True)
class Metric:
    """The workload's own figure of merit, computed the way its benchmark computes it."""

    name: str
    value: float
    unit: str
    better: str
    """"higher" or "lower": which way is an improvement."""

    def __str__(self) -> str:
        return f"{self.name} {self.value:.6g} {self.unit} ({self.better} is better)"


class SimResult:
    """The outcome of one `dvfslab.simulate(...)` call.

    Energy and power cover all packages; `packages` splits them per package, `per_cpu` holds one
    dict per CPU (busy_pct, avg_freq_khz, util_avg_max, energy_j, time_in_freq,
    time_in_idle_state).
    """

    def __init__(
        self,
        result_json: str,
        timeline: Timeline | None = None,
        explain: ExplainColumns | None = None,
        idle_explain: dict[str, list[Any]] | None = None,
    ) -> None:
        self._json = result_json
        result = json.loads(result_json)
        if result.get("schema") != RESULT_SCHEMA:
            raise DvfsError(
                f"result schema is {result.get('schema')!r}, "
                f"expected {RESULT_SCHEMA!r}: dvfslab._core and dvfslab disagree"
            )
        # Indexed by signal name at run time, so seen as plain dicts from here on.
        self._timeline = cast("dict[str, dict[str, list[Any]]] | None", timeline)
        self._frames: dict[str, pd.DataFrame] = {}
        self._explain = explain
        self._idle_explain = idle_explain

        self.platform: str = result["platform"]
        self.governor: str = result["governor"]
        self.workload: str = result["workload"]
        self.seed: int = result["seed"]
        m = result["metric"]
        self.metric = Metric(name=m["name"], value=m["value"], unit=m["unit"], better=m["better"])
        self.energy_j: float = result["energy_j"]
        self.avg_package_w: float = result["avg_package_w"]
        self.packages: list[dict[str, Any]] = result["packages"]
        self.sim_time_s: float = result["sim_time_s"]
        self.wall_time_s: float = result["wall_time_s"]
        self.events: int = result["events"]
        self.per_cpu: list[dict[str, Any]] = result["per_cpu"]

    def __repr__(self) -> str:
        return (
            f"<SimResult {self.platform} {self.governor} {self.workload} seed={self.seed}: "
            f"{self.metric}, {self.energy_j:.6g} J, {self.avg_package_w:.4g} W>"
        )

    @property
    def has_timeline(self) -> bool:
        return self._timeline is not None

    def to_dict(self) -> dict[str, Any]:
        """The run summary as a fresh dict (schema "dvfslab-run/1")."""
        summary: dict[str, Any] = json.loads(self._json)
        return summary

    def to_json(self) -> str:
        """The run summary exactly as the simulator wrote it: one JSON object, one line."""
        return self._json

    # -- per-CPU summaries -------------------------------------------------------------------

    def df_cpus_summary(self) -> pd.DataFrame:
        """One row per CPU: cpu, busy_pct, avg_freq_khz, util_avg_max, energy_j.

        The residency dicts are in `df_cpus_time_in_freq()` and `df_cpus_time_in_idle_state()`.
        """
        import pandas as pd

        rows = [{k: v for k, v in row.items() if not isinstance(v, dict)} for row in self.per_cpu]
        return pd.DataFrame(rows)

    def df_cpus_time_in_freq(self) -> pd.DataFrame:
        """Seconds each CPU spent at each hardware frequency: cpu, freq_khz, time_s."""
        import pandas as pd

        rows = [
            (row["cpu"], int(khz), time_s)
            for row in self.per_cpu
            for khz, time_s in row["time_in_freq"].items()
        ]
        return pd.DataFrame(rows, columns=["cpu", "freq_khz", "time_s"])

    def df_cpus_time_in_idle_state(self) -> pd.DataFrame:
        """Seconds each CPU spent in each idle state: cpu, state, time_s."""
        import pandas as pd

        rows = [
            (row["cpu"], state, time_s)
            for row in self.per_cpu
            for state, time_s in row["time_in_idle_state"].items()
        ]
        return pd.DataFrame(rows, columns=["cpu", "state", "time_s"])

    # -- frequency decisions (recorded with explain=True) -----------------------------------

    def df_decisions(self) -> pd.DataFrame:
        """Every frequency request a governor made of the driver: why each policy asked for
        what it asked. Evaluations that asked for nothing (schedutil inside its rate limit or
        at the frequency it asked for last, ...) are not requests; docs/governors.md lists
        which evaluations each governor logs.

        Columns: time_s, policy, raw_khz (what the governor computed), resolved_khz (the table
        entry within [min_khz, max_khz]), min_khz, max_khz, hw_khz (what the hardware runs once
        the transition is done: turbo bins and power limit applied), then the governor's own
        inputs (schedutil: cpu, util_avg, util_est, runnable_avg, util, iowait_boost, perf,
        capacity, ref_khz, held_busy, rate_limit_us; other governors their own).
        """
        import pandas as pd

        if self._explain is None:
            raise DvfsError(
                "no decisions were recorded: run with explain=True (CLI: dvfslab run ... --explain)"
            )
        e = self._explain
        columns: dict[str, Any] = {"time_s": [t / NS_PER_S for t in e["time_ns"]]}
        for name in ("policy", "raw_khz", "resolved_khz", "min_khz", "max_khz", "hw_khz"):
            columns[name] = e[name]
        columns.update(e["inputs"])
        return pd.DataFrame(columns)

    def df_idle_decisions(self) -> pd.DataFrame:
        """Every idle-state choice of the idle governor (menu) with what it read: why each CPU
        went to the state it did.

        Columns: time_ns, time_s, cpu, next_timer_ns (the soonest timer due on the CPU,
        absolute; NaN when none), nr_iowait, interval_0 .. interval_7 (menu's recent idle
        periods in us, newest first, 0 until filled), avg_ns (the running average of the
        measured idle periods that stands for menu's correction factor; NaN before the first),
        state (index in the platform's idle-state table), reconsider_at_ns (the retained tick
        at which menu gives up on a short history; NaN when none). docs/model.md describes the
        governor.
        """
        import pandas as pd

        if self._idle_explain is None:
            raise DvfsError(
                "no idle decisions were recorded: run with explain=True "
                "(CLI: dvfslab run ... --explain)"
            )
        df = pd.DataFrame(self._idle_explain)
        df.insert(1, "time_s", df["time_ns"] / NS_PER_S)
        return df

    # -- timelines (recorded with timeline=True) --------------------------------------------

    def df_cpus_frequency(self) -> pd.DataFrame:
        """Every actual frequency change: time_s, cpu, freq_khz."""
        return self._df_signal("frequency").copy()

    def df_cpus_util(self) -> pd.DataFrame:
        """Each CPU's util_avg (0..1024) at every PELT refresh: time_s, cpu, util_avg."""
        return self._df_signal("util").copy()

    def df_cpus_idle(self) -> pd.DataFrame:
        """Every state entered: time_s, cpu, state ("C0" = busy, else an idle state's name)."""
        return self._df_signal("idle").copy()

    def df_cpu_frequency(self, cpu: int) -> pd.DataFrame:
        """One CPU's frequency changes: time_s, freq_khz."""
        return self._df_cpu_signal("frequency", cpu)

    def df_cpu_util(self, cpu: int) -> pd.DataFrame:
        """One CPU's util_avg at every PELT refresh: time_s, util_avg."""
        return self._df_cpu_signal("util", cpu)

    def df_cpu_idle(self, cpu: int) -> pd.DataFrame:
        """One CPU's states entered: time_s, state."""
        return self._df_cpu_signal("idle", cpu)

    def write_timeline(self, path: str | os.PathLike[str]) -> Path:
        """Write all timelines to one file, atomically, in the format its suffix names:
        `.parquet` or `.csv`; return its path.

        A long table, ordered by time then CPU: time_ns, time_s, cpu, signal ("frequency",
        "util" or "idle"), value (freq_khz or util_avg; null for idle) and state (the idle
        state entered; null for the others); docs/guide.md has the schema. A Parquet file
        also holds the run summary JSON in its metadata, under "dvfslab.result".

        Raises ConfigError for another suffix.
        """
        path = Path(path)
        suffix = timeline_format(path)
        table = self._timeline_table()
        if suffix == ".csv":
            import pyarrow.csv as csv

            replace_atomically(path, lambda tmp: csv.write_csv(table, tmp))
        else:
            import pyarrow.parquet as pq

            replace_atomically(path, lambda tmp: pq.write_table(table, tmp))
        return path

    # -- helpers ------------------------------------------------------------------------------

    def timeline_columns(self) -> dict[str, Any]:
        """The recorded timeline as the simulator gave it: columns per signal (frequency,
        util, idle, switch, wakeup) and the task names; for exporters."""
        if self._timeline is None:
            raise DvfsError(
                "no timeline was recorded: run with timeline=True "
                "(CLI: dvfslab run ... --timeline FILE.parquet or --trace FILE)"
            )
        return self._timeline

    def _columns(self, signal: str) -> dict[str, list[Any]]:
        if self._timeline is None:
            raise DvfsError(
                "no timeline was recorded: run with timeline=True "
                "(CLI: dvfslab run ... --timeline FILE.parquet)"
            )
        return self._timeline[signal]

    def _df_signal(self, signal: str) -> pd.DataFrame:
        if signal not in self._frames:
            import pandas as pd

            columns = self._columns(signal)
            value = SIGNAL_COLUMNS[signal]
            frame = pd.DataFrame(
                {
                    "time_s": pd.Series(columns["time_ns"], dtype="int64") / NS_PER_S,
                    "cpu": pd.Series(columns["cpu"], dtype="int64"),
                    value: pd.Series(
                        columns[value], dtype="category" if value == "state" else "int64"
                    ),
                }
            )
            self._frames[signal] = frame
        return self._frames[signal]

    def _df_cpu_signal(self, signal: str, cpu: int) -> pd.DataFrame:
        cpus = [row["cpu"] for row in self.per_cpu]
        if cpu not in cpus:
            raise ConfigError(
                f"cpu {cpu!r} is not a CPU of {self.platform} (CPUs {min(cpus)}..{max(cpus)})"
            )
        frame = self._df_signal(signal)
        return frame[frame["cpu"] == cpu].drop(columns="cpu").reset_index(drop=True)

    def _timeline_table(self) -> pa.Table:
        import pyarrow as pa
        import pyarrow.compute as pc

        parts = []
        for signal, value_column in SIGNAL_COLUMNS.items():
            columns = self._columns(signal)
            rows = len(columns["time_ns"])
            time_ns = pa.array(columns["time_ns"], pa.int64())
            is_idle = signal == "idle"
            parts.append(
                pa.table(
                    {
                        "time_ns": time_ns,
                        "time_s": pc.divide(pc.cast(time_ns, pa.float64()), float(NS_PER_S)),
                        "cpu": pa.array(columns["cpu"], pa.int64()),
                        "signal": pa.array([signal] * rows, pa.string()),
                        "value": (
                            pa.nulls(rows, pa.float64())
                            if is_idle
                            else pa.array(columns[value_column], pa.float64())
                        ),
                        "state": (
                            pa.array(columns["state"], pa.string())
                            if is_idle
                            else pa.nulls(rows, pa.string())
                        ),
                    }
                )
            )
        # sort_by is stable: at equal (time, cpu) the signals keep the order listed above.
        table = pa.concat_tables(parts).sort_by([("time_ns", "ascending"), ("cpu", "ascending")])
        return table.replace_schema_metadata(
            {
                "dvfslab.schema": TIMELINE_SCHEMA,
                "dvfslab.result": self._json,
            }
        )


def timeline_format(path: str | os.PathLike[str], name: str = "timeline") -> str:
    """The timeline format `path` names, ".parquet" or ".csv"; `name` is the setting in
    messages. Raises ConfigError for any other suffix."""
    suffix = Path(path).suffix.lower()
    if suffix not in TIMELINE_SUFFIXES:
        raise ConfigError(f"{name} {os.fspath(path)}: expected a .parquet or .csv file")
    return suffix
