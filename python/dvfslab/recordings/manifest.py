"""A recording and what is known about it: NAME.toml beside NAME.txt.xz (or NAME.txt), as
`scripts/record-benchmarks` writes them. The shipped ones are in `dvfslab/data/recordings/`.

    name = "tbench-2"
    command = "tbench -t 8 2 127.0.0.1"
    workload = "tbench:clients=2"        # the model to check against it
    platform = "kvm-guest-2cpu"          # the preset of the machine it was recorded on
    kernel = "6.18.44"
    machine = "Intel(R) Xeon(R) Processor, 2 CPUs"
    window_start_s = 1877.59             # the traced window, in the trace's clock
    window_s = 0.1
    operations = 15835.0                 # the benchmark's own operations in the window
    operations_unit = "loadfile operations"
    operation_size = 1                   # optional: how many of those units make one
                                         # operation of the per-op statistics (a stream's
                                         # send size in bytes: counts per message sent, not
                                         # per byte)
    round_trips = ["client", "server"]   # optional: the window's operations are its round
                                         # trips between these roles, counted in each trace
    round_trips_per_operation = 1        # optional, with round_trips: how many make one
                                         # operation (pgbench's read-write transaction: its
                                         # seven statements)
    model_warmup_s = 0.2                 # the model's run: warm-up, then a measured stretch
    model_duration_s = 0.3               # (inside the run: a benchmark of fixed work that
                                         # ends sooner is refused)
    repeats = ["repeats/tbench-2.2.toml"]  # optional: other runs of the same command on
                                         # the same machine, each a recording of its own

    [roles]                              # role -> a pattern on the comm of its tasks
    client = "^tbench$"
    server = "^tbench_srv$"
"""

from __future__ import annotations

import lzma
import math
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from dvfslab._core import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

SHIPPED = Path(__file__).resolve().parent.parent / "data" / "recordings"
DEFAULT_PLATFORM = "kvm-guest-2cpu"
AUTOGROUP = ("on", "off", "none")
"""A manifest's `autogroup` values: the sysctl on or off, or a kernel without autogroup."""


@dataclass(frozen=True)
class Recording:
    name: str
    trace_path: Path
    command: str
    workload: str
    platform: str
    kernel: str
    machine: str
    window_start_s: float
    window_s: float
    operations: float
    operations_unit: str
    """What `operations` counts: the benchmark's own report (its untraced rate over the
    window) or, for a benchmark counted in the trace, the recorder's count there."""
    roles: dict[str, str]
    model_warmup_s: float
    model_duration_s: float
    round_trips: tuple[str, str] | None = None
    """(requester role, responder role) of a benchmark whose operation is a fixed number of
    round trips between them (`round_trips_per_operation`): its operations per window are
    counted in the recording's trace and in the model's alike (`round_trips`), and
    `operations` is only reported beside them."""
    round_trips_per_operation: int = 1
    autogroup: str | None = None
    """Whether the recording machine grouped each session's tasks (kernel.sched_autogroup_enabled):
    "on", "off" or "none" (a kernel without autogroup); None when the manifest does not say.
    With "on" the workload is modelled with its sessions' task groups (`autogroup=1` in its
    `workload`; docs/recording.md)."""
    repeats: tuple[Path, ...] = ()
    """Manifests of other runs of the same command on the same machine: how far the real
    benchmark moves from run to run (`dvfslab model check` judges against all the runs)."""
    operation_size: float = 1.0
    """How many of `operations_unit` make one operation of the per-op statistics, on both
    sides: a stream's send size, so that its counts are per message sent, not per byte."""

    def operations_label(self) -> str:
        """What one operation is, for tables: "transactions", "16,384 bytes"."""
        if self.operation_size == 1:
            return self.operations_unit
        return f"{self.operation_size:,.0f} {self.operations_unit}"

    @property
    def manifest_path(self) -> Path:
        """NAME.toml, beside its trace NAME.txt.xz or NAME.txt."""
        stem = self.trace_path.name.removesuffix(".xz").removesuffix(".txt")
        return self.trace_path.with_name(f"{stem}.toml")

    def trace_text(self) -> str:
        """The recording's ftrace text (decompressed)."""
        data = self.trace_path.read_bytes()
        if self.trace_path.suffix == ".xz":
            data = lzma.decompress(data)
        return data.decode()


def shipped_recordings() -> list[str]:
    """The names of the recordings that come with dvfslab."""
    return sorted(p.stem for p in SHIPPED.glob("*.toml"))


def load_recording(ref: str | os.PathLike[str]) -> Recording:
    """A shipped recording by name, or a recording's NAME.toml by path."""
    path = Path(ref)
    if path.suffix != ".toml":
        path = SHIPPED / f"{ref}.toml"
        if not path.exists():
            raise ConfigError(
                f"no recording {str(ref)!r}: the shipped ones are "
                f"{', '.join(shipped_recordings())}; or give a NAME.toml"
            )
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: not TOML: {e}") from None
    trace = next(
        (t for t in (path.with_suffix(".txt.xz"), path.with_suffix(".txt")) if t.exists()), None
    )
    if trace is None:
        raise ConfigError(f"{path}: its trace {path.with_suffix('.txt.xz').name} is missing")

    def text(key: str, default: str | None = None) -> str:
        value = data.get(key, default)
        if not isinstance(value, str):
            raise ConfigError(f"{path}: {key}: expected a string, got {value!r}")
        return value

    def number(key: str, default: float | None = None, zero_ok: bool = False) -> float:
        """A finite number above 0 (or 0 itself with `zero_ok`: a warm-up may be none)."""
        value = data.get(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{path}: {key}: expected a number, got {value!r}")
        if not math.isfinite(value) or value < 0 or (value == 0 and not zero_ok):
            least = "0 or more" if zero_ok else "above 0"
            raise ConfigError(f"{path}: {key}: expected a finite number {least}, got {value!r}")
        return float(value)

    roles = data.get("roles")
    if (
        not isinstance(roles, dict)
        or not roles
        or not all(isinstance(v, str) for v in roles.values())
    ):
        raise ConfigError(f'{path}: [roles]: expected role = "comm pattern" lines')
    for role, pattern in roles.items():
        try:
            re.compile(pattern)
        except re.error as e:
            raise ConfigError(f"{path}: roles.{role}: not a regular expression: {e}") from None
    window_s = number("window_s")
    trips = data.get("round_trips")
    if trips is not None and data.get("operation_size", 1) != 1:
        raise ConfigError(
            f"{path}: operation_size: an operation is counted in round trips "
            "(round_trips_per_operation); leave it out"
        )
    per_operation = data.get("round_trips_per_operation", 1)
    if per_operation != 1 and trips is None:
        raise ConfigError(f"{path}: round_trips_per_operation: needs round_trips beside it")
    if not isinstance(per_operation, int) or isinstance(per_operation, bool) or per_operation < 1:
        raise ConfigError(
            f"{path}: round_trips_per_operation: expected a whole number of round trips >= 1, "
            f"got {per_operation!r}"
        )
    if trips is not None and (
        not isinstance(trips, list) or len(trips) != 2 or not all(r in roles for r in trips)
    ):
        raise ConfigError(
            f"{path}: round_trips: expected [requester, responder], two of the roles "
            f"{', '.join(roles)}; got {trips!r}"
        )
    repeats = data.get("repeats", [])
    if not isinstance(repeats, list) or not all(isinstance(r, str) for r in repeats):
        raise ConfigError(
            f"{path}: repeats: expected a list of manifest paths (relative to this file), "
            f"got {repeats!r}"
        )
    autogroup = data.get("autogroup")
    if autogroup is not None and autogroup not in AUTOGROUP:
        raise ConfigError(
            f"{path}: autogroup: expected one of {', '.join(AUTOGROUP)}, got {autogroup!r}"
        )
    for r in repeats:
        if not (path.parent / r).is_file():
            raise ConfigError(f"{path}: repeats: {r}: no such file beside {path.name}")
    return Recording(
        name=text("name", path.stem),
        trace_path=trace,
        command=text("command", ""),
        workload=text("workload"),
        platform=text("platform", DEFAULT_PLATFORM),
        kernel=text("kernel", ""),
        machine=text("machine", ""),
        window_start_s=number("window_start_s", zero_ok=True),
        window_s=window_s,
        operations=number("operations"),
        operations_unit=text("operations_unit", "operations"),
        roles=dict(roles),
        model_warmup_s=number("model_warmup_s", 0.2, zero_ok=True),
        model_duration_s=number("model_duration_s", max(window_s, 0.2)),
        round_trips=None if trips is None else (trips[0], trips[1]),
        round_trips_per_operation=per_operation,
        autogroup=autogroup,
        repeats=tuple(path.parent / r for r in repeats),
        operation_size=number("operation_size", 1.0),
    )


def load_repeats(rec: Recording) -> list[Recording]:
    """The other runs `rec` names, each checked to be a run of the same model on the same
    preset with the same roles."""
    runs = []
    for path in rec.repeats:
        run = load_recording(path)
        for field in ("workload", "platform", "roles", "round_trips", "operation_size"):
            if getattr(run, field) != getattr(rec, field):
                raise ConfigError(
                    f"{path}: {field}: a repeat of {rec.name} must have its {field} "
                    f"({getattr(rec, field)!r}), got {getattr(run, field)!r}"
                )
        runs.append(run)
    return runs
