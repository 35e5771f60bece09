"""Record a command's scheduling and frequency events on this Linux machine, as ftrace text that
`dvfslab trace`, `replay` and `model check` read (docs/recording.md).

The recorder writes tracefs directly, so it needs nothing but root: it makes a tracing instance
of its own (`instances/dvfslab-PID`), so that it neither disturbs nor is disturbed by other
tracing on the machine; enables the events below that this kernel has; turns tracing on; runs the
command; reads the instance's `trace` once tracing is off; and, on success, failure or Ctrl-C,
turns tracing off, disables its events and removes its instance. Nothing reads the buffer while
the command runs, so the recorder takes no CPU from what it records; the buffer must hold the
whole recording instead (`--window` records a slice of a long run). When it fills, the newest
events are dropped and counted, so what is kept is one unbroken stretch. The output is written
beside its final name and renamed into place once complete.

Events, by what they answer:
- who runs where, and why they stopped: sched_switch (prev_state: R preempted, S sleeping,
  D uninterruptible), sched_migrate_task;
- who woke whom and from which context: sched_waking, logged on the waker's CPU in the waker's
  context (the flags column says softirq or hardirq), sched_wakeup and sched_wakeup_new, logged
  where the task was enqueued;
- process life: sched_process_fork, sched_process_exec, sched_process_exit;
- frequency and idle: cpu_frequency, cpu_idle (where the machine has cpufreq and cpuidle);
- interrupts' bottom halves: softirq_entry and softirq_exit (which softirq ran when).

With `--window`, the header also holds the context switches the kernel counts for each command
on the machine (`dvfslab.switch_counts`), over the window and over as long a stretch just before
it, untraced: what tracing itself changed in how often the benchmark's tasks were preempted.
"""

from __future__ import annotations

import contextlib
import os
import platform
import shlex
import signal
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from dvfslab import switch_counts
from dvfslab._core import ConfigError

DEFAULT_EVENTS = (
    "sched/sched_switch",
    "sched/sched_waking",
    "sched/sched_wakeup",
    "sched/sched_wakeup_new",
    "sched/sched_migrate_task",
    "sched/sched_process_fork",
    "sched/sched_process_exec",
    "sched/sched_process_exit",
    "power/cpu_frequency",
    "power/cpu_idle",
    "irq/softirq_entry",
    "irq/softirq_exit",
)
"""What `dvfslab record` enables by default: the events `dvfslab model check` reads."""

CLOCK_PREFERENCE = ("mono", "global", "local")
"""The trace clocks tried in order. `mono` and `global` are nanoseconds that agree across CPUs,
so a wake-up logged on one CPU and the switch it causes on another are in order; `local` (the
kernel's default) is per-CPU and may drift between CPUs."""

TRACEFS_PLACES = ("/sys/kernel/tracing", "/sys/kernel/debug/tracing")

DEFAULT_BUFFER_KB = 131072
"""Per-CPU ring buffer of the instance (KiB), before `buffer_kb` caps the total: about two
million scheduler events per CPU, some seconds of a network benchmark."""

MAX_TOTAL_BUFFER_KB = 2 * 1024 * 1024
"""The default buffer's cap over all CPUs, so that a large machine does not give gigabytes."""

INSTANCE_PREFIX = "dvfslab-"


class RecordError(ConfigError):
    """Recording cannot start or did not complete (no root, no tracefs, a bad event)."""


@dataclass
class Recording:
    """What `record` wrote."""

    path: Path
    command: list[str]
    exit_status: int
    """The command's exit status (negative: killed by that signal)."""
    duration_s: float
    bytes_written: int
    clock: str
    events: list[str]
    """The events enabled."""
    missing_events: list[str]
    """Asked for, but this kernel has no such event."""
    lost_events: int
    """Events dropped because the ring buffer was full (the instance's per-CPU stats)."""
    window: tuple[float, float] | None = None
    """(start, length) in seconds after the command started, when only that was traced."""
    stopped_by: str | None = None
    """'duration' when --duration ended the command."""
    switches: dict[str, tuple[float, switch_counts.Counts]] | None = None
    """With a window: the machine's context switches by comm, "untraced" over the stretch just
    before the window (as long as the window, or from the command's start) and "traced" over
    the window, each with its length in seconds (`dvfslab.switch_counts`)."""


def find_tracefs() -> Path:
    """Where tracefs is mounted, mounting it at /sys/kernel/tracing if it is not."""
    for place in TRACEFS_PLACES:
        if (Path(place) / "instances").is_dir():
            return Path(place)
    if os.geteuid() != 0:
        raise RecordError(
            "dvfslab record needs root to use tracefs (the kernel's tracing files): run it "
            "with sudo, or as root"
        )
    mount_point = Path(TRACEFS_PLACES[0])
    done = subprocess.run(
        ["mount", "-t", "tracefs", "nodev", str(mount_point)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0 or not (mount_point / "instances").is_dir():
        raise RecordError(
            f"tracefs is not mounted and mounting it at {mount_point} failed "
            f"({done.stderr.strip() or 'no instances folder'}): this kernel may lack "
            "CONFIG_FTRACE, or this container may not allow it"
        )
    return mount_point


class Instance:
    """A tracefs instance of our own: created on entry, switched off and removed on exit."""

    def __init__(self, tracefs: Path, name: str):
        self.path = tracefs / "instances" / name
        self.enabled: list[str] = []

    def __enter__(self) -> Instance:
        try:
            self.path.mkdir()
        except PermissionError:
            raise RecordError(
                f"cannot create a tracing instance at {self.path}: dvfslab record needs root"
            ) from None
        except FileExistsError:
            raise RecordError(
                f"{self.path} exists: another recording is under way, or one was killed "
                f"(remove it with: rmdir {self.path})"
            ) from None
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def write(self, name: str, value: str) -> None:
        (self.path / name).write_text(value)

    def read(self, name: str) -> str:
        return (self.path / name).read_text()

    def set_clock(self) -> str:
        """The first of CLOCK_PREFERENCE this kernel offers; the one in force otherwise."""
        offered = self.read("trace_clock").replace("[", "").replace("]", "").split()
        for clock in CLOCK_PREFERENCE:
            if clock in offered:
                self.write("trace_clock", clock)
                return clock
        current = self.read("trace_clock")
        return current[current.index("[") + 1 : current.index("]")] if "[" in current else "?"

    def enable(self, events: Sequence[str]) -> list[str]:
        """Enable each event this kernel has; return those it lacks."""
        missing = []
        for event in events:
            control = self.path / "events" / event / "enable"
            if not control.exists():
                missing.append(event)
                continue
            control.write_text("1")
            self.enabled.append(event)
        return missing

    def lost_events(self) -> int:
        """Events the full ring buffer dropped (and any it overwrote), summed over CPUs."""
        total = 0
        for stats in sorted((self.path / "per_cpu").glob("cpu*/stats")):
            for line in stats.read_text().splitlines():
                key, _, value = line.partition(":")
                if key.strip() in ("overrun", "dropped events"):
                    total += int(value.split()[0])
        return total

    def close(self) -> None:
        """Tracing off, events off, instance removed; each step tried even if one fails."""
        if not self.path.exists():
            return
        with contextlib.suppress(OSError):
            self.write("tracing_on", "0")
        with contextlib.suppress(OSError):
            self._disable_all()
        with contextlib.suppress(OSError):
            self.path.rmdir()

    def _disable_all(self) -> None:
        for event in self.enabled:
            (self.path / "events" / event / "enable").write_text("0")
        self.enabled.clear()


def default_buffer_kb(ncpus: int) -> int:
    return max(1024, min(DEFAULT_BUFFER_KB, MAX_TOTAL_BUFFER_KB // max(ncpus, 1)))


def record(
    command: Sequence[str],
    out: str | os.PathLike[str],
    *,
    duration_s: float | None = None,
    window: tuple[float, float] | None = None,
    events: Sequence[str] = DEFAULT_EVENTS,
    buffer_kb: int | None = None,
    tracefs: str | os.PathLike[str] | None = None,
) -> Recording:
    """Run `command` under tracing and write its events to `out` as ftrace text.

    The command runs in a session of its own: with autogroup on, its processes form a task
    group without the recorder (which would otherwise share theirs and compete inside it), as a
    benchmark started from a shell of its own would. `duration_s` ends the command's process
    group (SIGINT, then SIGTERM, then SIGKILL) once that much time has passed, as Ctrl-C does;
    without it, the command runs to its end. `window` = (start, length) traces only
    that slice of the run, in seconds after the command started (the command runs on). `events`
    are `group/name` tracepoints. The file starts with a comment header (command, pid, kernel,
    clock, and with a window the context switches untraced and traced) and `cpus=N`.
    """
    if not command:
        raise RecordError("dvfslab record needs a command to run, after `--`")
    if duration_s is not None and not (duration_s > 0 and duration_s < float("inf")):
        raise RecordError(f"--duration {duration_s}: expected a positive number of seconds")
    ncpus = os.cpu_count() or 1
    buffer_kb = default_buffer_kb(ncpus) if buffer_kb is None else buffer_kb
    if buffer_kb < 4:
        raise RecordError(f"--buffer-kb {buffer_kb}: expected at least 4 (KiB per CPU)")
    if window is not None and not (0 <= window[0] < float("inf") and 0 < window[1] < float("inf")):
        raise RecordError(
            f"--window {window[0]}:{window[1]}: expected START:LENGTH in seconds, START ≥ 0 "
            "and LENGTH > 0"
        )
    bad = [e for e in events if e.count("/") != 1 or not all(e.split("/"))]
    if bad:
        raise RecordError(
            f"--events: {', '.join(bad)}: expected GROUP/NAME as in tracefs's events folder, "
            "e.g. sched/sched_switch"
        )
    final = Path(out)
    if not final.parent.is_dir():
        raise RecordError(f"{final}: its folder {final.parent} does not exist")
    root = Path(tracefs) if tracefs is not None else find_tracefs()
    partial = final.with_name(f".{final.name}.partial")
    # `kill` (SIGTERM) cleans up as Ctrl-C does: tracing off, instance removed, nothing written.
    in_main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _interrupt) if in_main_thread else None
    try:
        with Instance(root, f"{INSTANCE_PREFIX}{os.getpid()}") as inst:
            inst.write("tracing_on", "0")
            inst.write("buffer_size_kb", str(buffer_kb))
            clock = inst.set_clock()
            for option in ("irq-info", "record-cmd"):
                if (inst.path / "options" / option).exists():
                    inst.write(f"options/{option}", "1")
            # A full buffer drops the newest events rather than overwriting the oldest.
            inst.write("options/overwrite", "0")
            missing = inst.enable(events)
            if not inst.enabled:
                raise RecordError(
                    f"none of the events asked for exists in {inst.path / 'events'}: "
                    f"{', '.join(events)}"
                )
            start = time.monotonic()
            try:
                pid, status, stopped_by, switches = _run(command, duration_s, window, inst)
            finally:
                inst.write("tracing_on", "0")
            elapsed = time.monotonic() - start
            lost = inst.lost_events()
            with partial.open("w") as f:
                f.write(_header(command, pid, clock, ncpus, status, elapsed, window, switches))
                with (inst.path / "trace").open() as trace:
                    for line in trace:
                        if not line.startswith("#"):
                            f.write(line)
        partial.replace(final)
        return Recording(
            path=final,
            command=list(command),
            exit_status=status,
            duration_s=elapsed,
            bytes_written=final.stat().st_size,
            clock=clock,
            events=[e for e in events if e not in missing],
            missing_events=missing,
            lost_events=lost,
            stopped_by=stopped_by,
            window=window,
            switches=switches or None,
        )
    finally:
        partial.unlink(missing_ok=True)
        if in_main_thread:
            signal.signal(signal.SIGTERM, previous)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _run(
    command: Sequence[str],
    duration_s: float | None,
    window: tuple[float, float] | None,
    inst: Instance,
) -> tuple[int, int, str | None, dict[str, tuple[float, switch_counts.Counts]]]:
    """Run the command to its end, or to `duration_s`, with tracing on for the whole run or
    for `window`; Ctrl-C stops it and is re-raised. Returns its pid, exit status, what stopped
    it early, and, with a window, its context switches over the window and just before it (those
    of the stretches it ran through)."""
    start = time.monotonic()
    deadline = None if duration_s is None else start + duration_s
    if window is None:
        inst.write("tracing_on", "1")
    try:
        child = subprocess.Popen(list(command), start_new_session=True)
    except FileNotFoundError:
        raise RecordError(f"{command[0]}: no such command") from None
    except PermissionError:
        raise RecordError(f"{command[0]}: not executable") from None
    switches: dict[str, tuple[float, switch_counts.Counts]] = {}
    try:
        if window is not None:
            switches = _trace_window(child, start, window, deadline, inst)
        if _wait(child, None, deadline):
            return child.pid, child.returncode, None, switches
        _stop(child)
        return child.pid, child.returncode, "duration", switches
    except KeyboardInterrupt:
        _stop(child)
        raise


def _trace_window(
    child: subprocess.Popen[bytes],
    start: float,
    window: tuple[float, float],
    deadline: float | None,
    inst: Instance,
) -> dict[str, tuple[float, switch_counts.Counts]]:
    """Tracing on and off at the window's edges (monotonic seconds from `start`), unless the
    command ends first; the machine's context switches are read at each edge and at the start
    of the untraced stretch before the window (as long as the window, or from the command's
    start). Returns the switches of each stretch the command ran through, by label."""
    begin, length = window
    lead = min(length, begin)
    edges = ([(begin - lead, None)] if lead > 0 else []) + [(begin, "1"), (begin + length, "0")]
    readings: list[tuple[float, dict[int, tuple[str, int, int]]]] = []
    for at, on in edges:
        if _wait(child, start + at, deadline) or _past(deadline):
            break
        if on == "0":
            inst.write("tracing_on", on)
        readings.append((time.monotonic(), switch_counts.machine_tasks()))
        if on == "1":
            inst.write("tracing_on", on)
    labels = (["untraced"] if lead > 0 else []) + ["traced"]
    return {
        label: (t1 - t0, switch_counts.between(before, after))
        for label, (t0, before), (t1, after) in zip(labels, readings, readings[1:])
    }


def _past(deadline: float | None) -> bool:
    return deadline is not None and time.monotonic() >= deadline


def _wait(child: subprocess.Popen[bytes], until: float | None, deadline: float | None) -> bool:
    """Wait for the command to end, up to `until` and `deadline` (monotonic seconds, None: no
    limit). True when it ended."""
    ends = [t for t in (until, deadline) if t is not None]
    try:
        child.wait(timeout=None if not ends else max(0.0, min(ends) - time.monotonic()))
        return True
    except subprocess.TimeoutExpired:
        return False


def _stop(child: subprocess.Popen[bytes]) -> None:
    """Ask the command's process group to stop as Ctrl-C would (the command runs in a session
    of its own, out of the terminal's reach), then insist."""
    for sig, grace_s in ((signal.SIGINT, 2.0), (signal.SIGTERM, 2.0), (signal.SIGKILL, None)):
        if child.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, sig)
        try:
            child.wait(timeout=grace_s)
            return
        except subprocess.TimeoutExpired:
            continue


AUTOGROUP = Path("/proc/sys/kernel/sched_autogroup_enabled")


def autogroup_state(path: Path = AUTOGROUP) -> str:
    """Whether each session's tasks share a task group (kernel.sched_autogroup_enabled): the
    model groups a workload's tasks only when asked (`autogroup=1`), and groups change how
    often tasks preempt one another (docs/recording.md). "autogroup on", "autogroup off" or
    "no autogroup"."""
    try:
        enabled = path.read_text().strip()
    except OSError:
        return "no autogroup"
    return "autogroup on" if enabled == "1" else "autogroup off"


def _header(
    command: Sequence[str],
    pid: int,
    clock: str,
    ncpus: int,
    status: int,
    elapsed: float,
    window: tuple[float, float] | None,
    switches: dict[str, tuple[float, switch_counts.Counts]] | None = None,
) -> str:
    """The comment lines that say what was recorded (the command, the kernel, the trace clock,
    and the switch counts `dvfslab model check` reads), then the header trace-cmd report
    prints."""
    # One comment line whatever the command: a newline in an argument (`python -c` code) is
    # written as \n.
    one_line = shlex.join(command).replace("\n", "\\n")
    counts = "".join(
        switch_counts.header_line(label, seconds, by_comm)
        for label, (seconds, by_comm) in (switches or {}).items()
    )
    return (
        f"# dvfslab record: {one_line}\n"
        f"# pid {pid}, kernel {platform.release()}, {autogroup_state()}, clock {clock}, "
        f"exit status {status}, "
        f"{elapsed:.3f} s"
        + (f", traced from {window[0]:g} s for {window[1]:g} s" if window else "")
        + f"\n{counts}cpus={ncpus}\n"
        "# tracer: nop\n"
        "#\n"
    )
