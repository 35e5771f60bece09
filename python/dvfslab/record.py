"""Record a command's scheduling and frequency events on this Linux machine, as ftrace text that
`dvfslab trace`, `replay` and `model check` read (docs/recording.md).

The recorder writes tracefs directly, so it needs nothing but root: it makes a tracing instance
of its own (`instances/dvfslab-PID`), so that it neither disturbs nor is disturbed by other
tracing on the machine; enables the events below that this kernel has; turns tracing on; runs the
command; streams the instance's `trace_pipe` into the output file while the command runs (so a
long run needs no huge buffer); and, on success, failure or Ctrl-C, turns tracing off, disables
its events and removes its instance. The output is written beside its final name and renamed
into place once complete.

Events, by what they answer:
- who runs where, and why they stopped: sched_switch (prev_state: R preempted, S sleeping,
  D uninterruptible), sched_migrate_task;
- who woke whom and from which context: sched_waking, logged on the waker's CPU in the waker's
  context (the flags column says softirq or hardirq), sched_wakeup and sched_wakeup_new, logged
  where the task was enqueued;
- process life: sched_process_fork, sched_process_exec, sched_process_exit;
- frequency and idle: cpu_frequency, cpu_idle (where the machine has cpufreq and cpuidle);
- interrupts' bottom halves: softirq_entry and softirq_exit (which softirq ran when).
"""

from __future__ import annotations

import contextlib
import errno
import os
import platform
import select
import shlex
import signal
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

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

DEFAULT_BUFFER_KB = 16384
"""Per-CPU ring buffer of the instance. trace_pipe is drained while the command runs, so the
buffer only needs to hold what arrives between two reads."""

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
    """Events the ring buffer overwrote before they were read (the instance's overrun count)."""
    stopped_by: str | None = None
    """'duration' when --duration ended the command, 'interrupt' on Ctrl-C."""
    notes: list[str] = field(default_factory=list)


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
        """Overruns summed over CPUs: events overwritten before anyone read them."""
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
        # rmdir fails with EBUSY while a reader still holds trace_pipe open: retry briefly.
        for _ in range(50):
            try:
                self.path.rmdir()
                return
            except OSError as e:
                if e.errno != errno.EBUSY:
                    return
                time.sleep(0.02)

    def _disable_all(self) -> None:
        for event in self.enabled:
            (self.path / "events" / event / "enable").write_text("0")
        self.enabled.clear()


class PipeDrain(threading.Thread):
    """Copies the instance's trace_pipe into a file until told to stop, then reads what is
    left. trace_pipe consumes what it returns, so the ring buffer empties as we go."""

    def __init__(self, pipe: Path, out: Path):
        super().__init__(daemon=True)
        self.fd = os.open(pipe, os.O_RDONLY | os.O_NONBLOCK)
        self.out = out.open("wb")
        self.stopping = threading.Event()
        self.bytes_written = 0
        self.error: OSError | None = None

    def run(self) -> None:
        try:
            poller = select.poll()
            poller.register(self.fd, select.POLLIN)
            while not self.stopping.is_set():
                poller.poll(100)
                self._read_available()
            self._read_available()
        except OSError as e:
            self.error = e
        finally:
            os.close(self.fd)
            self.out.close()

    def _read_available(self) -> None:
        while True:
            try:
                chunk = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                return
            if not chunk:
                return
            self.out.write(chunk)
            self.bytes_written += len(chunk)

    def finish(self) -> None:
        self.stopping.set()
        self.join()
        if self.error is not None:
            raise self.error


def record(
    command: Sequence[str],
    out: str | os.PathLike[str],
    *,
    duration_s: float | None = None,
    events: Sequence[str] = DEFAULT_EVENTS,
    buffer_kb: int = DEFAULT_BUFFER_KB,
    tracefs: str | os.PathLike[str] | None = None,
) -> Recording:
    """Run `command` under tracing and write its events to `out` as ftrace text.

    `duration_s` ends the command (SIGINT, then SIGTERM, then SIGKILL) once that much time has
    passed; without it, recording lasts as long as the command. `events` are `group/name`
    tracepoints. The file starts with a comment header (command, kernel, clock) and `cpus=N`.
    """
    if not command:
        raise RecordError("dvfslab record needs a command to run, after `--`")
    if duration_s is not None and not (duration_s > 0 and duration_s < float("inf")):
        raise RecordError(f"--duration {duration_s}: expected a positive number of seconds")
    if buffer_kb < 4:
        raise RecordError(f"--buffer-kb {buffer_kb}: expected at least 4 (KiB per CPU)")
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
    body = final.with_name(f".{final.name}.events")
    ncpus = os.cpu_count() or 1
    try:
        with Instance(root, f"{INSTANCE_PREFIX}{os.getpid()}") as inst:
            inst.write("tracing_on", "0")
            inst.write("buffer_size_kb", str(buffer_kb))
            clock = inst.set_clock()
            for option in ("irq-info", "record-cmd"):
                if (inst.path / "options" / option).exists():
                    inst.write(f"options/{option}", "1")
            missing = inst.enable(events)
            if not inst.enabled:
                raise RecordError(
                    f"none of the events asked for exists in {inst.path / 'events'}: "
                    f"{', '.join(events)}"
                )
            drain = PipeDrain(inst.path / "trace_pipe", body)
            drain.start()
            start = time.monotonic()
            inst.write("tracing_on", "1")
            try:
                pid, status, stopped_by = _run(command, duration_s)
            finally:
                inst.write("tracing_on", "0")
                elapsed = time.monotonic() - start
                drain.finish()
            lost = inst.lost_events()
        header = _header(command, pid, clock, ncpus, status, elapsed)
        with partial.open("wb") as f:
            f.write(header.encode())
            with body.open("rb") as events_file:
                while chunk := events_file.read(1 << 20):
                    f.write(chunk)
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
        )
    finally:
        for leftover in (partial, body):
            leftover.unlink(missing_ok=True)


def _run(command: Sequence[str], duration_s: float | None) -> tuple[int, int, str | None]:
    """Run the command to its end, or to `duration_s`; Ctrl-C stops it and is re-raised.
    Returns its pid, exit status and what stopped it early."""
    try:
        child = subprocess.Popen(list(command))
    except FileNotFoundError:
        raise RecordError(f"{command[0]}: no such command") from None
    except PermissionError:
        raise RecordError(f"{command[0]}: not executable") from None
    try:
        child.wait(timeout=duration_s)
        return child.pid, child.returncode, None
    except subprocess.TimeoutExpired:
        _stop(child)
        return child.pid, child.returncode, "duration"
    except KeyboardInterrupt:
        _stop(child)
        raise


def _stop(child: subprocess.Popen[bytes]) -> None:
    """Ask the command to stop as Ctrl-C would, then insist."""
    for sig, grace_s in ((signal.SIGINT, 2.0), (signal.SIGTERM, 2.0), (signal.SIGKILL, None)):
        if child.poll() is not None:
            return
        child.send_signal(sig)
        try:
            child.wait(timeout=grace_s)
            return
        except subprocess.TimeoutExpired:
            continue


def _header(
    command: Sequence[str], pid: int, clock: str, ncpus: int, status: int, elapsed: float
) -> str:
    """The comment lines `dvfslab model check` reads (`recorded_command`), then the header
    trace-cmd report prints."""
    return (
        f"# dvfslab record: {shlex.join(command)}\n"
        f"# pid {pid}, kernel {platform.release()}, clock {clock}, exit status {status}, "
        f"{elapsed:.3f} s\n"
        f"cpus={ncpus}\n"
        "# tracer: nop\n"
        "#\n"
    )
