"""The model discrepancy: how far the model's ratios miss published ones on cells it was not
fitted on, per benchmark class, and the interval it widens (docs/validation.md, "Model
discrepancy").

A ratio's interval over the model variants covers what the model's declared constants and
run-to-run variation can move. A mechanism the model lacks moves every variant alike, so the
interval cannot show it. The discrepancy term is an estimate of that miss, from the residuals
ln(simulated / published) of the published ratio cells, each simulated by a model not fitted on
it (leave one machine out where the publication's cells were fitted on, see
`dvfslab.validate.leave_one_out`). It is a split-conformal quantile: for each residual cell i,
with r_i its log error and h_i its model interval's log half-width,

    e_i = sqrt(max(0, r_i^2 - h_i^2))

is the extra half-width that, added in quadrature, would just have covered the published ratio.
A new cell of the same class gets d = the ceil((n + 1) * 0.9)-th smallest of the n scores of its
pool, and the interval

    G * exp(+- sqrt(h^2 + d^2))

which covers 90% of exchangeable cells whatever the residuals' distribution. Quadrature: the
variants' spread and the missing mechanisms are independent sources of error, and in log space
their variances add.

The classes (`BENCHMARK_CLASSES`, the one place a benchmark's class is decided) group
benchmarks by what bounds their score, since that decides which missing mechanisms can move
them.

The shipped residuals are in dvfslab/data/calibration/discrepancy.toml, written by
`dvfslab validate NAME --fit-discrepancy` (`write_residuals`).
"""

from __future__ import annotations

import datetime
import math
import subprocess
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from dvfslab._core import ConfigError
from dvfslab.report.stats import INTERVAL_LEVEL

DISCREPANCY_SCHEMA = "dvfslab-discrepancy/1"
SHIPPED_FILE = "discrepancy.toml"
"""The shipped residuals: dvfslab/data/calibration/discrepancy.toml."""

BENCHMARK_CLASSES: dict[str, str] = {
    # latency: each operation waits for another task's reply or a deadline, so the score
    # follows wake-up placement, idle exits and how fast a short burst raises the clock.
    "pgbench": "latency",
    "tbench": "latency",
    "netperf": "latency",
    "apache": "latency",
    "ycsb-redis": "latency",
    "hackbench": "latency",
    "pipe-test": "latency",
    "uibench": "latency",
    "speedometer": "latency",
    "periodic": "latency",
    "step-load": "latency",
    "freq-response": "latency",
    # throughput: busy CPUs streaming or computing; the score follows the sustained clock,
    # turbo and how the busy CPUs share a package's power.
    "cpu-bound": "throughput",
    "nas": "throughput",
    "ffmpeg": "throughput",
    "specpower": "throughput",
    # compile: chains and trees of short-lived processes (fork, exec, wait); the score follows
    # fork placement and the clock of new tasks.
    "kernbench": "compile",
    "gitsource": "compile",
    "spawn": "compile",
    # io: clients wait on a storage device or its journal; the score follows the device and
    # the iowait rules.
    "dbench4": "io",
    "fio": "io",
    "iozone": "io",
    "postmark": "io",
    "seq-read": "io",
    "random-read": "io",
}
"""Each workload model's benchmark class (docs/validation.md explains the grouping). A model's
knobs can move it to another class (`benchmark_class`); a workload not listed (an rt-app file,
a recording) has no class and is pooled with every class."""

CLASSES = ("latency", "throughput", "compile", "io")
ANY_CLASS = "any"
"""The pool of a benchmark without a class: the residuals of every class."""

_KNOB_CLASSES: dict[tuple[str, str, str], str] = {
    # pgbench's read-write test commits to the WAL on disk: its clients wait on the device.
    ("pgbench", "rw", "1"): "io",
    # netperf's STREAM tests keep the sender busy; the RR tests are request and reply.
    ("netperf", "test", "tcp-stream"): "throughput",
    ("netperf", "test", "udp-stream"): "throughput",
    ("netperf", "test", "2"): "throughput",
    ("netperf", "test", "3"): "throughput",
}
"""Knob values that move a workload model to another class than its own."""


def benchmark_class(workload: str) -> str:
    """The class of a workload spec ("pgbench:rw=1,clients=8" is io); `ANY_CLASS` for one the
    classes do not list (an rt-app file, a recording, an unknown model)."""
    name, _, rest = workload.partition(":")
    name = name.strip()
    if name not in BENCHMARK_CLASSES:
        return ANY_CLASS
    for item in rest.split(","):
        knob, _, value = item.partition("=")
        moved = _KNOB_CLASSES.get((name, knob.strip(), value.strip()))
        if moved is not None:
            return moved
    return BENCHMARK_CLASSES[name]


def workload_model(workload: str) -> str:
    """The workload model a spec runs ("pgbench" of "pgbench:rw=1")."""
    return workload.partition(":")[0].strip()


@dataclass(frozen=True)
class Residual:
    """One published ratio and the model's out-of-sample answer to it."""

    publication: str
    machine: str
    benchmark: str
    config: str
    workload: str
    """The campaign's workload spec for the benchmark (its class follows from it)."""
    ln_error: float
    """ln(simulated / published)."""
    halfwidth_ln: float
    """The model's interval's log half-width, ln(high / simulated); 0 without one."""

    @property
    def benchmark_class(self) -> str:
        return benchmark_class(self.workload)

    @property
    def score(self) -> float:
        """The extra log half-width that, added in quadrature, just covers the published ratio."""
        return math.sqrt(max(0.0, self.ln_error**2 - self.halfwidth_ln**2))


@dataclass(frozen=True)
class Term:
    """The discrepancy a ratio is widened by: its class, the log half-width and what it rests on."""

    benchmark_class: str
    halfwidth_ln: float
    """d: inf when the pool is too small for the level (the interval is then unbounded)."""
    cells: int
    """Residual cells in the pool."""
    publications: tuple[str, ...]
    held_out: str
    """What the pool leaves out: "" for nothing, else e.g. "intel-invariance on skylake"."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "class": self.benchmark_class,
            "halfwidth_ln": self.halfwidth_ln if math.isfinite(self.halfwidth_ln) else None,
            "cells": self.cells,
            "publications": list(self.publications),
            "held_out": self.held_out,
        }


@dataclass(frozen=True)
class Residuals:
    """The residual cells of the discrepancy file, and its header."""

    rows: tuple[Residual, ...]
    level: float = INTERVAL_LEVEL
    publications: Mapping[str, Mapping[str, Any]] | None = None
    """Per publication: how its rows were produced (command, date, commit, sim_version)."""
    source: str = ""
    """The file it was read from."""

    def term(
        self, workload: str, keep: Callable[[Residual], bool] | None = None, held_out: str = ""
    ) -> Term:
        """The discrepancy for a benchmark running `workload`: the conformal quantile of the
        scores of its class's residuals that `keep` keeps (all when None)."""
        cls = benchmark_class(workload)
        pool = [
            r
            for r in self.rows
            if (cls == ANY_CLASS or r.benchmark_class == cls) and (keep is None or keep(r))
        ]
        return Term(
            cls,
            conformal_quantile([r.score for r in pool], self.level),
            len(pool),
            tuple(sorted({r.publication for r in pool})),
            held_out,
        )

    def held_out_term(
        self, workload: str, publication: str, machine: str, benchmark: str | None = None
    ) -> Term:
        """The discrepancy for scoring `publication`'s cell on `machine`: without that
        publication's cells on that machine (leave one machine out; for a publication of one
        machine, leave the publication out), and with `benchmark` also without every residual
        of the same workload model (leave one benchmark out)."""
        model = workload_model(workload)

        def keep(r: Residual) -> bool:
            if r.publication == publication and r.machine == machine:
                return False
            return benchmark is None or workload_model(r.workload) != model

        what = f"{publication} on {machine}"
        if benchmark is not None:
            what += f" and every {model} benchmark"
        return self.term(workload, keep, what)

    def class_summary(self) -> dict[str, dict[str, Any]]:
        """Per class: the discrepancy over all its residuals and how many there are."""
        out = {}
        for cls in CLASSES:
            pool = [r for r in self.rows if r.benchmark_class == cls]
            out[cls] = {
                "halfwidth_ln": _finite(conformal_quantile([r.score for r in pool], self.level)),
                "cells": len(pool),
                "publications": sorted({r.publication for r in pool}),
                "median_abs_ln_error": _finite(_median([abs(r.ln_error) for r in pool])),
            }
        return out


def conformal_quantile(scores: Iterable[float], level: float = INTERVAL_LEVEL) -> float:
    """The split-conformal quantile of `scores` at `level`: the ceil((n + 1) * level)-th
    smallest of the n scores, inf when that rank exceeds n (too few to promise the level)."""
    ordered = sorted(s for s in scores if math.isfinite(s))
    rank = math.ceil((len(ordered) + 1) * level - 1e-9)
    if rank > len(ordered) or rank < 1:
        return math.inf
    return ordered[rank - 1]


def widened(ratio: float, low: float, high: float, extra_ln: float) -> tuple[float, float]:
    """The interval ratio * exp(+- sqrt(h^2 + extra_ln^2)), h the log half-width of the model's
    [low, high] around `ratio` (the larger side). Unknown (NaN) when the model's interval is:
    with fewer than two iterations nothing says how far the model's own uncertainty reaches."""
    known = all(x > 0 and math.isfinite(x) for x in (ratio, low, high))
    if not known:
        return (math.nan, math.nan)
    h = max(math.log(high / ratio), math.log(ratio / low), 0.0)
    if math.isinf(extra_ln):
        return (0.0, math.inf)
    half = math.hypot(h, extra_ln)
    return (ratio * math.exp(-half), ratio * math.exp(half))


def report_terms(
    workloads: Mapping[str, str], path: str | Path | None = None
) -> tuple[dict[str, Term], str] | None:
    """Per benchmark (name -> workload spec), the discrepancy over all residuals of its class,
    as `dvfslab compare` and `dvfslab campaign report` widen with, and the file's path; None
    when the file has no residuals."""
    residuals = load_residuals(path)
    if not residuals.rows:
        return None
    return {name: residuals.term(w) for name, w in workloads.items()}, residuals.source


# -- the file ------------------------------------------------------------------------------------


def shipped_path() -> Path:
    return Path(str(resources.files("dvfslab") / "data" / "calibration" / SHIPPED_FILE))


def load_residuals(path: str | Path | None = None) -> Residuals:
    """The residuals of the discrepancy file at `path` (the shipped one by default). A missing
    shipped file gives no residuals; a missing or malformed given file is a ConfigError."""
    import tomllib

    file = Path(path) if path is not None else shipped_path()
    if not file.is_file():
        if path is None:
            return Residuals((), source=str(file))
        raise ConfigError(f"{file}: no such discrepancy file")
    try:
        doc = tomllib.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise ConfigError(f"{file}: not a discrepancy file: {e}") from None
    if doc.get("schema") != DISCREPANCY_SCHEMA:
        raise ConfigError(
            f"{file}: schema: expected {DISCREPANCY_SCHEMA!r}, got {doc.get('schema')!r}"
        )
    level = doc.get("level", INTERVAL_LEVEL)
    if not isinstance(level, float) or not 0 < level < 1:
        raise ConfigError(f"{file}: level: expected a number in (0, 1), got {level!r}")
    rows = []
    for i, row in enumerate(doc.get("residuals", [])):
        rows.append(_residual(row, f"{file}: residuals[{i}]"))
    return Residuals(tuple(rows), level, doc.get("publications", {}), str(file))


_TEXT_FIELDS = ("publication", "machine", "benchmark", "config", "workload")
_NUMBER_FIELDS = ("ln_error", "halfwidth_ln")


def _residual(row: Any, where: str) -> Residual:
    if not isinstance(row, dict):
        raise ConfigError(f"{where}: expected a table")
    for key in _TEXT_FIELDS:
        if not isinstance(row.get(key), str):
            raise ConfigError(f"{where}: {key}: expected a string, got {row.get(key)!r}")
    for key in _NUMBER_FIELDS:
        value = row.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{where}: {key}: expected a number, got {value!r}")
        if not math.isfinite(value) or (key == "halfwidth_ln" and value < 0):
            raise ConfigError(f"{where}: {key}: expected a finite number >= 0, got {value!r}")
    return Residual(*(row[k] for k in _TEXT_FIELDS), *(float(row[k]) for k in _NUMBER_FIELDS))


def write_residuals(
    path: str | Path, publication: str, rows: list[Residual], produced: Mapping[str, str]
) -> Residuals:
    """Replace `publication`'s rows (and its header) in the discrepancy file at `path`, keeping
    every other publication's; creates the file when missing. Returns what was written."""
    file = Path(path)
    old = load_residuals(file) if file.is_file() else Residuals(())
    headers = {k: dict(v) for k, v in (old.publications or {}).items()}
    headers[publication] = dict(produced)
    kept = [r for r in old.rows if r.publication != publication]
    new = Residuals(tuple(kept + rows), old.level, headers, str(file))
    file.write_text(_toml(new), encoding="utf-8")
    return new


def provenance(command: str) -> dict[str, str]:
    """How a publication's residuals were produced: the command, today's date, the commit of the
    models (the git HEAD of the package's checkout, with "+changes" when it has uncommitted
    ones) and the simulator's version."""
    from dvfslab import _core

    return {
        "command": command,
        "date": datetime.date.today().isoformat(),
        "commit": _git_commit(),
        "sim_version": _core.version(),
    }


def _git_commit() -> str:
    where = Path(str(resources.files("dvfslab")))
    try:
        head = subprocess.run(
            ["git", "-C", str(where), "rev-parse", "--short=12", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(where), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+changes" if dirty else "")


def _toml(residuals: Residuals) -> str:
    lines = [
        "# The model discrepancy's residuals: each published ratio cell with the model's",
        '# out-of-sample answer (docs/validation.md, "Model discrepancy"). Written by',
        "#   dvfslab validate NAME --fit-discrepancy",
        "# (with --cross-validate where NAME fits constants on its cells), which replaces NAME's",
        "# rows and header; ln_error = ln(simulated / published), halfwidth_ln = the model",
        "# interval's log half-width. The classes: dvfslab.report.discrepancy.",
        f'schema = "{DISCREPANCY_SCHEMA}"',
        f"level = {residuals.level!r}",
        "",
    ]
    # The array before the tables: a key after a [table] header would belong to it.
    lines.append("residuals = [")
    for r in sorted(residuals.rows, key=lambda r: (r.publication, r.machine, r.benchmark)):
        fields = [f"{k} = {_string(getattr(r, k))}" for k in _TEXT_FIELDS]
        fields += [f"{k} = {round(getattr(r, k), 6)!r}" for k in _NUMBER_FIELDS]
        lines.append("  { " + ", ".join(fields) + " },")
    lines.append("]")
    for name, header in sorted((residuals.publications or {}).items()):
        lines += ["", f"[publications.{_key(name)}]"]
        lines += [f"{_key(k)} = {_string(str(v))}" for k, v in header.items()]
    return "\n".join(lines) + "\n"


def _string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _key(text: str) -> str:
    bare = all(ch.isalnum() or ch in "-_" for ch in text) and text
    return text if bare else _string(text)


def _median(xs: list[float]) -> float:
    import statistics

    return statistics.median(xs) if xs else math.nan


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None
