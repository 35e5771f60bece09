"""Reading ftrace text: the output of `trace-cmd report`, the kernel's `trace` / `trace_pipe`
files, and the `.txt` traces dvfslab writes. A trace.dat is read through `trace-cmd report`.

Each event line is

    COMM-PID [CPU] [FLAGS] TIMESTAMP: EVENT: FIELDS

(`FLAGS`, such as `d..2`, appear in the kernel's own files, not in `trace-cmd report` by
default; a `(TGID)` column may follow PID.) The events a frequency study needs become tables:
`sched_switch`, `sched_wakeup` / `sched_wakeup_new`, `cpu_frequency`, `cpu_idle`, and the markers
user space writes (`print`, `tracing_mark_write`). Every other event is counted and skipped. A
line that is not an event, or a known event whose fields do not parse, is an error naming the
file and line.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from dvfslab._core import ConfigError

TRACE_DAT_MAGIC = b"\x17\x08\x44tracing"
"""The first bytes of a trace-cmd trace.dat file."""
CPU_IDLE_EXIT = 4294967295
"""cpu_idle's state when a CPU leaves idle (PWR_EVENT_EXIT, (u32)-1)."""

_LINE = re.compile(
    r"^\s*(?P<comm>.*?)-(?P<pid>\d+)\s+(?:\(\s*[\d-]+\)\s+)?\[(?P<cpu>\d+)\]\s+"
    r"(?:[\w.]{4,5}\s+)?(?P<ts>\d+\.\d+):\s+(?P<event>\w+):\s?(?P<body>.*)$"
)
_FIELD = re.compile(r"(\w+)=(\S*)")
_HEADER = re.compile(r"^\s*(#|version\s*=|cpus\s*=|CPU \d+ is empty|$)")


@dataclass(frozen=True)
class Trace:
    """A recorded trace as tables (times in seconds, as the trace prints them)."""

    path: str
    switches: pd.DataFrame
    """time_s, cpu, prev_comm, prev_pid, prev_state, next_comm, next_pid"""
    wakeups: pd.DataFrame
    """time_s, cpu (where the event was logged), comm, pid, target_cpu, new (a fork's first)"""
    frequency: pd.DataFrame
    """time_s, logged_cpu (where the event was logged), cpu, freq_khz"""
    idle: pd.DataFrame
    """time_s, logged_cpu, cpu, state (an idle state's index, -1 when the CPU leaves idle)"""
    markers: pd.DataFrame
    """time_s, cpu, pid, text: what user space wrote to trace_marker"""
    counts: dict[str, int] = field(default_factory=dict)
    """Events by name, the skipped ones included."""
    cpus: int = 0
    """CPUs: the trace's `cpus=N` header, else one more than the highest CPU seen."""

    @property
    def skipped(self) -> dict[str, int]:
        """The events read but not turned into tables, with their counts."""
        return {k: v for k, v in self.counts.items() if k not in _PARSERS}

    def summary(self, cpu_types: dict[int, str] | None = None) -> dict[str, Any]:
        """What the trace holds: span, events, and per CPU its busy share and frequencies;
        with `cpu_types` (CPU -> cluster name: `cpu_map`, `preset_cpu_map`), each CPU's type."""
        times = [df["time_s"] for df in self._tables() if not df.empty]
        start = min(float(t.min()) for t in times) if times else 0.0
        end = max(float(t.max()) for t in times) if times else 0.0
        per_cpu = []
        for cpu in range(self.cpus):
            per_cpu.append(
                {
                    "cpu": cpu,
                    "type": (cpu_types or {}).get(cpu),
                    "busy_pct": _busy_pct(self.switches, cpu, start, end),
                    "frequency_changes": int((self.frequency["cpu"] == cpu).sum()),
                    "freq_residency_khz_pct": _residency(self.frequency, cpu, end),
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
        }

    def _tables(self) -> list[pd.DataFrame]:
        return [self.switches, self.wakeups, self.frequency, self.idle, self.markers]


def read_trace(path: str | os.PathLike[str]) -> Trace:
    """Read an ftrace text file, or a trace.dat through `trace-cmd report`."""
    source = Path(path)
    try:
        with source.open("rb") as f:
            head = f.read(len(TRACE_DAT_MAGIC))
    except FileNotFoundError:
        raise ConfigError(f"trace file {source} does not exist") from None
    except OSError as e:
        raise ConfigError(f"cannot read trace file {source}: {e.strerror or e}") from None
    if head == TRACE_DAT_MAGIC:
        return _parse(_trace_cmd_report(source).splitlines(), str(source))
    try:
        with source.open(encoding="utf-8", errors="strict") as f:
            return _parse(f, str(source))
    except UnicodeDecodeError as e:
        raise ConfigError(f"{source}: not ftrace text (byte {e.start} is not UTF-8)") from None


def cpu_map(text: str) -> dict[int, str]:
    """CPU -> type from `big=1-2,little=0,3-5` (a type's CPUs as numbers and ranges)."""
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
            cpus = range(int(low), int(high or low) + 1)
        except ValueError:
            raise ConfigError(f"--cpus {text!r}: {item!r} is not a CPU number or range") from None
        for cpu in cpus:
            if cpu in out:
                raise ConfigError(f"--cpus {text!r}: CPU {cpu} is given twice")
            out[cpu] = name
    return out


def preset_cpu_map(platform: str) -> dict[int, str]:
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
    done = subprocess.run([tool, "report", str(path)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise ConfigError(f"{path}: trace-cmd report failed: {done.stderr.strip()[-500:]}")
    return done.stdout


def _parse(lines: Any, source: str) -> Trace:
    rows: dict[str, list[tuple[Any, ...]]] = {name: [] for name in _TABLES}
    counts: Counter[str] = Counter()
    cpus = 0
    max_cpu = -1
    for number, line in enumerate(lines, 1):
        m = _LINE.match(line)
        if m is None:
            if _HEADER.match(line):
                header = re.match(r"^\s*cpus\s*=\s*(\d+)", line)
                if header:
                    cpus = int(header.group(1))
                continue
            raise ConfigError(
                f"{source}:{number}: not an ftrace event line "
                f"(expected 'COMM-PID [CPU] TIMESTAMP: EVENT: FIELDS'): {line.strip()[:120]!r}"
            )
        event = m.group("event")
        counts[event] += 1
        cpu = int(m.group("cpu"))
        max_cpu = max(max_cpu, cpu)
        parser = _PARSERS.get(event)
        if parser is None:
            continue
        table, parse = parser
        try:
            row = parse(m)
        except (KeyError, ValueError) as e:
            raise ConfigError(
                f"{source}:{number}: {event}: cannot read its fields ({e}): "
                f"{m.group('body').strip()[:120]!r}"
            ) from None
        rows[table].append((float(m.group("ts")), cpu, *row))
    frames = {name: pd.DataFrame(rows[name], columns=list(cols)) for name, cols in _TABLES.items()}
    return Trace(source, **frames, counts=dict(counts), cpus=max(cpus, max_cpu + 1))


def _fields(body: str) -> dict[str, str]:
    return dict(_FIELD.findall(body))


def _switch(m: re.Match[str]) -> tuple[Any, ...]:
    f = _fields(m.group("body"))
    state = f["prev_state"]
    return (f["prev_comm"], int(f["prev_pid"]), state, f["next_comm"], int(f["next_pid"]))


def _wakeup(m: re.Match[str]) -> tuple[Any, ...]:
    f = _fields(m.group("body"))
    target = int(f.get("target_cpu", f.get("cpu", "-1")))
    return (f["comm"], int(f["pid"]), target, m.group("event") == "sched_wakeup_new")


def _frequency(m: re.Match[str]) -> tuple[Any, ...]:
    f = _fields(m.group("body"))
    return (int(f["cpu_id"]), int(f["state"]))


def _idle(m: re.Match[str]) -> tuple[Any, ...]:
    f = _fields(m.group("body"))
    state = int(f["state"])
    return (int(f["cpu_id"]), -1 if state == CPU_IDLE_EXIT else state)


def _marker(m: re.Match[str]) -> tuple[Any, ...]:
    # trace-cmd prints `print: <ip>s: text`; the kernel's file `tracing_mark_write: text`.
    text = re.sub(r"^\s*(0x[0-9a-f]+s?:\s*|tracing_mark_write:\s*)", "", m.group("body"))
    return (int(m.group("pid")), text.strip())


_TABLES: dict[str, tuple[str, ...]] = {
    "switches": ("time_s", "cpu", "prev_comm", "prev_pid", "prev_state", "next_comm", "next_pid"),
    "wakeups": ("time_s", "cpu", "comm", "pid", "target_cpu", "new"),
    "frequency": ("time_s", "logged_cpu", "cpu", "freq_khz"),
    "idle": ("time_s", "logged_cpu", "cpu", "state"),
    "markers": ("time_s", "cpu", "pid", "text"),
}
_PARSERS = {
    "sched_switch": ("switches", _switch),
    "sched_wakeup": ("wakeups", _wakeup),
    "sched_wakeup_new": ("wakeups", _wakeup),
    "cpu_frequency": ("frequency", _frequency),
    "cpu_idle": ("idle", _idle),
    "print": ("markers", _marker),
    "tracing_mark_write": ("markers", _marker),
}


def _busy_pct(switches: pd.DataFrame, cpu: int, start: float, end: float) -> float | None:
    """Share of [first switch on the CPU, end] that a task other than the idle one ran."""
    mine = switches[switches["cpu"] == cpu]
    if mine.empty or end <= start:
        return None
    times = [*mine["time_s"].astype(float), end]
    busy = sum(t1 - t0 for t0, t1, pid in zip(times, times[1:], mine["next_pid"]) if int(pid) != 0)
    span = end - times[0]
    return 100.0 * busy / span if span > 0 else None


def _residency(frequency: pd.DataFrame, cpu: int, end: float) -> dict[int, float]:
    """Percent of time from the CPU's first cpu_frequency event to the end at each frequency."""
    mine = frequency[frequency["cpu"] == cpu]
    if mine.empty:
        return {}
    times = [*mine["time_s"].astype(float), end]
    spent: Counter[int] = Counter()
    for t0, t1, khz in zip(times, times[1:], mine["freq_khz"]):
        spent[int(khz)] += t1 - t0
    total = sum(spent.values())
    return {khz: 100.0 * s / total for khz, s in sorted(spent.items())} if total > 0 else {}
