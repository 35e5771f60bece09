"""Recorded traces as tables: ftrace text (the output of `trace-cmd report`, the kernel's
`trace` / `trace_pipe` files, the `.txt` traces dvfslab writes), read by the simulator's native
reader (`dvfslab_sim::trace::read`), and a trace.dat through `trace-cmd report`.

The events a frequency study needs become tables: `sched_switch`, `sched_wakeup` /
`sched_wakeup_new`, `sched_waking` (with the context it was logged in), `sched_process_fork` /
`exec` / `exit`, `sched_migrate_task`, `cpu_frequency`, `cpu_idle`, the markers user space
writes (`print`, `tracing_mark_write`), the root run-queues' PELT signals (`sched_pelt_cfs`,
`sched_load_cfs_rq`, `sched_util_est_cfs`) and intel_pstate's `pstate_sample`. Every other event
is counted and skipped. A line that is not an event,
or a known event whose fields do not parse, is an error naming the file and line; so is a
timestamp that is not a time, a CPU past the kernel's limit or a CPU whose time goes back.
`[LOST N EVENTS]` lines are counted (`Trace.lost`). A trace is read whole, up to
`MAX_TRACE_BYTES`, from a regular file only.
"""

from __future__ import annotations

import math
import os
import shutil
import stat
import subprocess
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from dvfslab import _core
from dvfslab._core import TRACE_MAX_CPUS, ConfigError
from dvfslab.traces.idle import idle_exits
from dvfslab.traces.waits import longest_wait, waits

if TYPE_CHECKING:
    from dvfslab.platforms import PlatformRef

TRACE_DAT_MAGIC = b"\x17\x08\x44tracing"
"""The first bytes of a trace-cmd trace.dat file."""
MAX_TRACE_BYTES = 2 << 30
"""The largest trace text read (2 GiB; the file, or a trace.dat's `trace-cmd report`): it is
read whole, and reading takes about five times its size in memory."""


PRIO_NICE_0 = 120
"""The kernel's prio of a nice-0 fair task, as sched events print it: 120 + nice for a fair
task (100-139), 99 - its priority for an RT one."""


@dataclass(frozen=True)
class Trace:
    """A recorded trace as tables (times in seconds, as the trace prints them)."""

    path: str
    switches: pd.DataFrame
    """time_s, cpu, prev_comm, prev_pid, prev_prio, prev_state, next_comm, next_pid, next_prio
    (prio as the kernel counts it: below 100 an RT task)"""
    wakeups: pd.DataFrame
    """time_s, cpu (where the event was logged), comm, pid, prio, target_cpu, waker_pid (the
    task it was logged from: 0 for an interrupt or the idle task), new (a fork's first)"""
    frequency: pd.DataFrame
    """time_s, logged_cpu (where the event was logged), cpu, freq_khz"""
    idle: pd.DataFrame
    """time_s, logged_cpu, cpu, state (an idle state's index, -1 when the CPU leaves idle)"""
    markers: pd.DataFrame
    """time_s, cpu, pid, text: what user space wrote to trace_marker"""
    wakings: pd.DataFrame
    """time_s, cpu (the waker's), comm, pid, target_cpu, waker_comm, waker_pid, context
    (sched_waking: 'task', 'softirq', 'hardirq', 'nmi' from the flags column, else 'unknown')"""
    processes: pd.DataFrame
    """time_s, cpu, event ('fork', 'exec', 'exit'), pid, parent_pid, comm (a fork's child's
    comm, an exec's program file name)"""
    migrations: pd.DataFrame
    """time_s, cpu (where the move was logged: the waker's CPU for a wake-up's placement, the
    balancing CPU for a pull), comm, pid, orig_cpu, dest_cpu (sched_migrate_task)"""
    pelt: pd.DataFrame
    """time_s, logged_cpu, cpu, util, load, runnable (-1 when not recorded): each CPU's root
    cfs_rq"""
    util_est: pd.DataFrame
    """time_s, cpu, enqueued: each CPU's root cfs_rq util_est"""
    pstate: pd.DataFrame
    """time_s, cpu, core_busy, scaled_busy, from, to, mperf, aperf, tsc, freq, io_boost
    (intel_pstate's pstate_sample)"""
    lost: pd.DataFrame = field(
        default_factory=lambda: pd.DataFrame(columns=["line", "cpu", "events"])
    )
    """line, cpu, events: each `[LOST N EVENTS]` line, where a ring buffer overflowed (-1 where
    the line does not say the CPU or the count)"""
    tsc_khz: float | None = None
    """The rate raw-count timestamps (trace_clock x86-tsc) were read with; None for seconds."""
    counts: dict[str, int] = field(default_factory=dict)
    """Events by name, the skipped ones included."""
    cpus: int = 0
    """CPUs: the trace's `cpus=N` header, else one more than the highest CPU seen."""
    table_events: frozenset[str] = frozenset()
    """The events the tables hold; the others are counted and skipped."""

    @property
    def skipped(self) -> dict[str, int]:
        """The events read but not turned into tables, with their counts."""
        return {k: v for k, v in self.counts.items() if k not in self.table_events}

    def summary(self, cpu_types: dict[int, str] | None = None) -> dict[str, Any]:
        """What the trace holds: span, events, per CPU its busy share and frequencies (with
        `cpu_types`, CPU -> cluster name from `cpu_map` or `preset_cpu_map`, each CPU's type),
        how long wake-ups from each idle state took (`dvfslab.traces.idle`), and the longest a
        woken task waited for a CPU (`dvfslab.traces.waits`)."""
        times = [df["time_s"] for df in self._tables() if not df.empty]
        start = min(float(t.min()) for t in times) if times else 0.0
        end = max(float(t.max()) for t in times) if times else 0.0
        switches = dict(tuple(self.switches.groupby("cpu")))
        frequency = dict(tuple(self.frequency.groupby("cpu")))
        empty_sw, empty_freq = self.switches.head(0), self.frequency.head(0)
        per_cpu = []
        for cpu in range(self.cpus):
            freq = frequency.get(cpu, empty_freq)
            per_cpu.append(
                {
                    "cpu": cpu,
                    "type": (cpu_types or {}).get(cpu),
                    "busy_pct": _busy_pct(switches.get(cpu, empty_sw), start, end),
                    "frequency_changes": len(freq),
                    "freq_residency_khz_pct": _residency(freq, end),
                }
            )
        if cpu_types is not None:
            unmapped = sorted(set(range(self.cpus)) - set(cpu_types))
            if unmapped:
                raise ConfigError(
                    f"{self.path}: the CPU map leaves out CPU {', '.join(map(str, unmapped))} of "
                    f"the trace's {self.cpus}"
                )
        return {
            "path": self.path,
            "cpus": self.cpus,
            "start_s": start,
            "end_s": end,
            "events": dict(sorted(self.counts.items(), key=lambda kv: -kv[1])),
            "skipped": self.skipped,
            "tasks": int(pd.concat([self.switches["next_pid"], self.wakeups["pid"]]).nunique()),
            "markers": len(self.markers),
            "per_cpu": per_cpu,
            "idle_exits": idle_exits(self.idle, self.wakeups, self.pelt),
            "lost": self.lost_summary(),
            "longest_wait": longest_wait(waits(self, start, end)),
            "tsc_khz": self.tsc_khz,
        }

    def lost_summary(self) -> dict[str, Any]:
        """The `[LOST N EVENTS]` lines: how many, the events they count (`unknown`: lines that
        do not say how many), and per CPU (-1: not said) the events lost."""
        lost = self.lost
        known = lost[lost["events"] >= 0]
        return {
            "reports": len(lost),
            "events": int(known["events"].sum()),
            "unknown": int((lost["events"] < 0).sum()),
            "per_cpu": {int(c): int(n) for c, n in known.groupby("cpu")["events"].sum().items()},
        }

    def _tables(self) -> list[pd.DataFrame]:
        return [getattr(self, name) for name in TABLES]


def read_trace(path: str | os.PathLike[str], tsc_khz: float | None = None) -> Trace:
    """Read an ftrace text file, or a trace.dat through `trace-cmd report`. `tsc_khz`: the
    clock's rate when the timestamps are raw counts (trace_clock x86-tsc)."""
    return parse_text(trace_text(path), str(path), tsc_khz=tsc_khz)


def trace_text(path: str | os.PathLike[str]) -> str:
    """The ftrace text of a trace file: the file itself, or a trace.dat's `trace-cmd report`;
    a regular file of at most `MAX_TRACE_BYTES`."""
    source = Path(path)
    try:
        info = source.stat()
        if not stat.S_ISREG(info.st_mode):
            raise ConfigError(
                f"trace file {source}: not a regular file (a directory, device or pipe); save "
                "the trace to a file first"
            )
        with source.open("rb") as f:
            data = f.read(len(TRACE_DAT_MAGIC))
            if data == TRACE_DAT_MAGIC:
                return _trace_cmd_report(source)
            _check_size(source, info.st_size)
            # Read up to the cap whatever the size said (a file may grow while it is read).
            data += f.read(MAX_TRACE_BYTES + 1 - len(data))
    except FileNotFoundError:
        raise ConfigError(f"trace file {source} does not exist") from None
    except OSError as e:
        raise ConfigError(f"cannot read trace file {source}: {e.strerror or e}") from None
    _check_size(source, len(data))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(f"{source}: not ftrace text (byte {e.start} is not UTF-8)") from None


def _check_size(source: Path, size: int, what: str = "is") -> None:
    if size > MAX_TRACE_BYTES:
        raise ConfigError(
            f"trace file {source}: {what} {size / 2**30:.1f} GiB or more; at most "
            f"{MAX_TRACE_BYTES / 2**30:.0f} GiB of trace text is read (it is read whole): cut "
            "the recording into shorter time windows"
        )


def cpu_map(text: str) -> dict[int, str]:
    """CPU -> type from `big=1-2,little=0,3-5` (a type's CPUs as numbers and ranges, below
    the kernel's limit of `TRACE_MAX_CPUS`)."""
    out: dict[int, str] = {}
    name = None
    for item in (i.strip() for i in text.split(",")):
        if "=" in item:
            name, _, item = item.partition("=")
            name = name.strip()
        if not name or not item:
            raise ConfigError(
                f"--cpus {text!r}: expected TYPE=CPUS[,CPUS...][,TYPE=...] such as "
                "big=1-2,little=0,3-5"
            )
        low, _, high = item.partition("-")
        try:
            first, last = int(low), int(high or low)
        except ValueError:
            raise ConfigError(f"--cpus {text!r}: {item!r} is not a CPU number or range") from None
        if not 0 <= first <= last < TRACE_MAX_CPUS:
            raise ConfigError(
                f"--cpus {text!r}: {item!r}: expected CPUS as N or FIRST-LAST with "
                f"0 <= FIRST <= LAST < {TRACE_MAX_CPUS}"
            )
        cpus = range(first, last + 1)
        for cpu in cpus:
            if cpu in out:
                raise ConfigError(f"--cpus {text!r}: CPU {cpu} is given twice")
            out[cpu] = name
    return out


def preset_cpu_map(platform: PlatformRef) -> dict[int, str]:
    """CPU -> cluster name of a platform preset, its CPUs numbered as the preset numbers them."""
    from dvfslab.platforms import describe_platform

    return {cpu: p["cluster"] for p in describe_platform(platform)["policies"] for cpu in p["cpus"]}


def _trace_cmd_report(path: Path) -> str:
    tool = shutil.which("trace-cmd")
    if tool is None:
        raise ConfigError(
            f"{path} is a trace.dat: reading it needs trace-cmd (the Debian/Ubuntu package "
            "`trace-cmd`), or give the text of `trace-cmd report` instead"
        )
    # -R: every event's fields as the kernel prints them (key=value), not as trace-cmd's
    # plugins reformat some of them. Its output is read up to MAX_TRACE_BYTES.
    with tempfile.TemporaryFile() as errors:
        with subprocess.Popen(
            [tool, "report", "-R", str(path)], stdout=subprocess.PIPE, stderr=errors
        ) as proc:
            assert proc.stdout is not None
            out = proc.stdout.read(MAX_TRACE_BYTES + 1)
            if len(out) > MAX_TRACE_BYTES:
                proc.kill()
                _check_size(path, len(out), what="gives a report of")
            code = proc.wait()
        errors.seek(0)
        stderr = errors.read().decode("utf-8", "replace")
    if code != 0:
        raise ConfigError(f"{path}: trace-cmd report failed: {stderr.strip()[-500:]}")
    try:
        return out.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(f"{path}: trace-cmd report: byte {e.start} is not UTF-8") from None


def parse_text(text: str, source: str, tsc_khz: float | None = None) -> Trace:
    """ftrace `text` as tables, each in time order (per CPU it is the trace's own order;
    between CPUs trace_pipe may hand lines out a little out of order); `source` names it in
    errors. `tsc_khz`: the clock's rate when the timestamps are raw counts."""
    if tsc_khz is not None and not (math.isfinite(tsc_khz) and tsc_khz > 0):
        raise ConfigError(
            f"tsc_khz: expected the clock's rate in kHz, a positive number, got {tsc_khz}"
        )
    columns = _core.read_ftrace(text, source, tsc_khz)
    frames = {name: _in_time_order(pd.DataFrame(columns[name])) for name in TABLES}
    lost = pd.DataFrame(columns["lost"])
    # Every CPU a table names: the ones events were logged on, those they are about, and those
    # that lost events.
    cpu_columns = [frame["cpu"] for frame in [*frames.values(), lost]]
    highest = max((int(c.max()) for c in cpu_columns if not c.empty), default=-1)
    return Trace(
        source,
        **frames,
        counts=dict(columns["counts"]),
        cpus=max(int(columns["cpus_header"]), highest + 1),
        table_events=frozenset(columns["table_events"]),
        lost=lost,
        tsc_khz=columns["tsc_khz"],
    )


def _in_time_order(frame: pd.DataFrame) -> pd.DataFrame:
    times = frame["time_s"]
    if times.is_monotonic_increasing:
        return frame
    return frame.sort_values("time_s", kind="stable", ignore_index=True)


TABLES = (
    "switches",
    "wakeups",
    "wakings",
    "processes",
    "migrations",
    "frequency",
    "idle",
    "markers",
    "pelt",
    "util_est",
    "pstate",
)
"""The trace's tables; their columns are the native reader's (listed on `Trace`)."""


def _busy_pct(mine: pd.DataFrame, start: float, end: float) -> float | None:
    """Share of [first switch on the CPU, end] that a task other than the idle one ran (`mine`:
    the CPU's switches)."""
    if mine.empty or end <= start:
        return None
    times = [*mine["time_s"].astype(float), end]
    busy = sum(t1 - t0 for t0, t1, pid in zip(times, times[1:], mine["next_pid"]) if int(pid) != 0)
    span = end - times[0]
    return 100.0 * busy / span if span > 0 else None


def _residency(mine: pd.DataFrame, end: float) -> dict[int, float]:
    """Percent of time from the CPU's first cpu_frequency event (`mine`: the CPU's) to the end
    at each frequency."""
    if mine.empty:
        return {}
    times = [*mine["time_s"].astype(float), end]
    spent: Counter[int] = Counter()
    for t0, t1, khz in zip(times, times[1:], mine["freq_khz"]):
        spent[int(khz)] += t1 - t0
    total = sum(spent.values())
    return {khz: 100.0 * s / total for khz, s in sorted(spent.items())} if total > 0 else {}
