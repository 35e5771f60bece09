"""The campaign as data: platforms, configs, benchmarks, and the runs they expand into.

A run sits at coordinates (platform, benchmark, config, param, iteration). Its seed is hashed
from the campaign seed and those coordinates (`run_seed`), its key from everything that decides
its result (`run_key`). Unless the campaign is nominal, iteration i simulates the i-th model
variant (`dvfslab.campaign.variants`): its preset and workload are the ones the runs then carry.
`dvfslab.campaign` reads campaigns from files and runs them.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from typing import Any

from dvfslab import _core
from dvfslab.api import TRACE_PREFIX, duration_ns
from dvfslab.campaign import variants
from dvfslab.governors import (
    KERNEL_PREFIX,
    PYTHON_PREFIX,
    kernel_source_digest,
    source_digest,
    with_setting,
)

MANIFEST_SCHEMA = "dvfslab-campaign/1"
SEED_BITS = 63  # derived seeds fit a signed 64-bit column (Parquet, pandas, DuckDB)
RTAPP_PREFIX = "rt-app:"  # how a run result names an rt-app file's workload


@dataclass(frozen=True)
class Platform:
    name: str
    """The preset's id: the run coordinate."""
    ref: str
    """What the campaign names: a shipped preset id or a preset file's absolute path."""
    preset_json: str = field(repr=False)


@dataclass(frozen=True)
class Config:
    name: str
    governor: str
    """The governor spec, `name:key=value,...`."""
    platforms: tuple[str, ...] | None = None
    """The platforms it runs on; None for all of the campaign's."""

    def runs_on(self, platform: str) -> bool:
        return self.platforms is None or platform in self.platforms


@dataclass(frozen=True)
class SweepValues:
    """The values a knob is swept over: one list for every platform, or one per platform."""

    shared: tuple[str, ...] = ()
    by_platform: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def on(self, platform: str) -> tuple[str, ...]:
        for name, values in self.by_platform:
            if name == platform:
                return values
        return self.shared

    def to_manifest(self) -> list[str] | dict[str, list[str]]:
        if self.by_platform:
            return {name: list(values) for name, values in self.by_platform}
        return list(self.shared)


@dataclass(frozen=True)
class Benchmark:
    name: str
    workload: str
    """A workload spec, or an rt-app file's path as the campaign names it (then
    `workload_file_text` holds the file's text and `sweep` is empty)."""
    sweep: tuple[tuple[str, SweepValues], ...] = ()
    """(knob, values) pairs; the runs take every combination, the first knob varying slowest."""
    duration_s: float | None = None
    """Overrides the campaign's duration_s."""
    iterations: int | None = None
    """Overrides the campaign's iterations."""
    platforms: tuple[str, ...] | None = None
    kernel: str | None = None
    """The kernel version every config runs this benchmark at (its governor's `kernel=`
    replaced), for a publication that measured some benchmarks on another kernel."""
    workload_file_text: str | None = field(default=None, repr=False)
    trace_path: str | None = None
    """For a workload "trace:PATH": the recording's path, its tasks becoming an rt-app text per
    platform (dvfslab.traces.workload)."""

    @property
    def from_file(self) -> bool:
        """An rt-app file's or a recording's tasks, rather than a model with knobs."""
        return self.workload_file_text is not None or self.trace_path is not None

    def runs_on(self, platform: str) -> bool:
        return self.platforms is None or platform in self.platforms

    def governor(self, config: Config) -> str:
        """The governor spec `config` runs this benchmark with."""
        if self.kernel is None:
            return config.governor
        return with_setting(config.governor, "kernel", self.kernel)

    def params(self, platform: str) -> list[tuple[str, str]]:
        """(param, workload spec) for each point of the sweep on `platform`: ("clients=8",
        "tbench:clients=8").

        Without a sweep, one point: ("", the workload as written); an rt-app file's workload is
        "rt-app:PATH", as `dvfslab run -w PATH` names it.
        """
        if self.trace_path is not None:
            return [("", self.workload)]
        if self.workload_file_text is not None:
            return [("", f"{RTAPP_PREFIX}{self.workload}")]
        points: list[list[tuple[str, str]]] = [[]]
        for knob, values in self.sweep:
            points = [[*point, (knob, value)] for point in points for value in values.on(platform)]
        out = []
        for point in points:
            param = ",".join(f"{knob}={value}" for knob, value in point)
            if not param:
                out.append(("", self.workload))
            elif ":" in self.workload and not self.workload.endswith(":"):
                out.append((param, f"{self.workload},{param}"))
            else:
                out.append((param, f"{self.workload.rstrip(':')}:{param}"))
        return out


@dataclass(frozen=True)
class Run:
    """One simulation of a campaign, with its coordinates and inputs."""

    platform: str
    benchmark: str
    config: str
    param: str
    iteration: int
    """1..iterations."""
    governor: str
    workload: str
    duration_s: float | None
    seed: int
    run_key: str
    workload_file_text: str | None = field(default=None, repr=False, compare=False)
    """The rt-app text when `workload` is "rt-app:PATH" (the file's) or "trace:PATH" (made from
    the recording for the run's platform)."""
    preset_json: str = field(default="", repr=False, compare=False)
    """The preset the run simulates: the platform's, or this iteration's variant of it."""

    def simulated_workload(self) -> tuple[str, str | None]:
        """(workload, workload_source) as `_core.simulate` takes them: the spec and None, or
        an rt-app file's text and its path (which the result then names as "rt-app:PATH")."""
        if self.workload_file_text is None:
            return self.workload, None
        if self.workload.startswith(TRACE_PREFIX):
            return self.workload_file_text, self.workload
        return self.workload_file_text, self.workload[len(RTAPP_PREFIX) :]

    def describe(self) -> str:
        param = f" {self.param}" if self.param else ""
        return (
            f"platform {self.platform}, config {self.config}, "
            f"benchmark {self.benchmark}{param}, iteration {self.iteration}"
        )


@dataclass(frozen=True)
class FittedConstants:
    """The constants fitted on the campaign's published cells (its `[cross_validate]` table),
    which a cross-validation refits without the machine it scores.

    A constant is a preset's JSON Pointer ("/clusters/0/power/c_eff_nf") or a workload knob
    ("pgbench:client_us")."""

    on_one: dict[str, dict[str, float]] = field(default_factory=dict)
    """Per platform, the constants fitted on its cells alone, each with its value before the
    fit: the fold that scores the platform has only that value."""
    on_all: dict[str, tuple[float, ...]] = field(default_factory=dict)
    """Workload knobs chosen on every platform's cells, each with the values to choose among:
    each fold chooses again on the other platforms."""


@dataclass(frozen=True)
class Campaign:
    name: str
    baseline: str
    """The config every other is compared with."""
    platforms: tuple[Platform, ...]
    configs: tuple[Config, ...]
    benchmarks: tuple[Benchmark, ...]
    seed: int = 0
    iterations: int = 1
    duration_s: float | None = None
    """Simulated seconds per run; None runs each workload's own default duration."""
    description: str = ""
    source: str | None = None
    """The campaign file, if it came from one."""
    nominal: bool = False
    """Every iteration simulates the fixed model (the declared constants at their values, no
    seed-driven variation), instead of one model variant each."""
    fitted: FittedConstants = field(default_factory=FittedConstants)
    """What `dvfslab validate --cross-validate` refits (dvfslab.validate.leave_one_out)."""
    structural: tuple[variants.Structural, ...] = ()
    """Workload switches with alternative mechanisms, drawn per iteration unless nominal (the
    `[structural]` table)."""

    def runs(self) -> list[Run]:
        """Every run, ordered platform, benchmark, param, config, iteration, as written."""
        version = _core.version()
        presets: dict[tuple[str, int, int], str] = {}
        return [
            self._run(platform, bench, param, workload, config, iteration, version, presets)
            for platform in self.platforms
            for bench in self.benchmarks
            if bench.runs_on(platform.name)
            for param, workload in bench.params(platform.name)
            for config in self.configs
            if config.runs_on(platform.name)
            for iteration in range(1, (bench.iterations or self.iterations) + 1)
        ]

    def _run(
        self,
        platform: Platform,
        bench: Benchmark,
        param: str,
        workload: str,
        config: Config,
        iteration: int,
        sim_version: str,
        presets: dict[tuple[str, int, int], str],
    ) -> Run:
        duration_s = bench.duration_s if bench.duration_s is not None else self.duration_s
        file_text = bench.workload_file_text
        if bench.trace_path is not None:
            from dvfslab.traces.workload import rtapp_for

            file_text = rtapp_for(bench.trace_path, platform.ref)
        seed = run_seed(self.seed, platform.name, config.name, bench.name, param, iteration)
        preset_json = platform.preset_json
        iterations = bench.iterations or self.iterations
        if self.structural and not bench.from_file:
            draw = None if self.nominal else (self.seed, iteration, iterations)
            workload = variants.with_structural(
                workload, self.structural, bench.name, platform.name, draw
            )
        if not self.nominal:
            where = (platform.name, iteration, iterations)
            if where not in presets:
                presets[where] = variants.variant_preset(
                    platform.preset_json, platform.ref, self.seed, iteration, iterations
                )
            preset_json = presets[where]
            if not bench.from_file:
                workload = variants.variant_workload(workload, self.seed, iteration, iterations)
        governor = bench.governor(config)
        key = run_key(preset_json, governor, workload, duration_s, seed, sim_version, file_text)
        return Run(
            platform.name,
            bench.name,
            config.name,
            param,
            iteration,
            governor,
            workload,
            duration_s,
            seed,
            key,
            file_text,
            preset_json,
        )

    def restricted(
        self, benchmarks: list[str] | None = None, platforms: list[str] | None = None
    ) -> Campaign:
        """The campaign with only the named benchmarks and platforms (None keeps all), in the
        campaign's order; an unknown name is a ConfigError that lists the campaign's."""

        def keep(kind: str, names: list[str] | None, have: list[str]) -> set[str]:
            if names is None:
                return set(have)
            unknown = [n for n in names if n not in have]
            if unknown:
                raise _core.ConfigError(
                    f"campaign {self.name}: no {kind} {', '.join(unknown)} "
                    f"(expected one of: {', '.join(have)})"
                )
            return set(names)

        bench_names = keep("benchmark", benchmarks, [b.name for b in self.benchmarks])
        plat_names = keep("platform", platforms, [p.name for p in self.platforms])
        return replace(
            self,
            benchmarks=tuple(b for b in self.benchmarks if b.name in bench_names),
            platforms=tuple(p for p in self.platforms if p.name in plat_names),
        )

    def manifest(self, runs: list[Run] | None = None) -> dict[str, Any]:
        """The campaign as the store's campaign.json records it, with every run's coordinates."""
        return {
            "schema": MANIFEST_SCHEMA,
            "name": self.name,
            "description": self.description,
            "source": self.source,
            "baseline": self.baseline,
            "seed": self.seed,
            "iterations": self.iterations,
            "duration_s": self.duration_s,
            "nominal": self.nominal,
            **(
                {"structural": {s.knob: s.to_manifest() for s in self.structural}}
                if self.structural
                else {}
            ),
            "sim_version": _core.version(),
            "platforms": [{"name": p.name, "ref": p.ref} for p in self.platforms],
            "configs": [
                {"name": c.name, "governor": c.governor, "platforms": _list_or_none(c.platforms)}
                for c in self.configs
            ],
            "benchmarks": [
                {
                    "name": b.name,
                    "workload": b.workload,
                    "sweep": {knob: values.to_manifest() for knob, values in b.sweep},
                    "duration_s": b.duration_s,
                    "iterations": b.iterations,
                    "platforms": _list_or_none(b.platforms),
                    **({"kernel": b.kernel} if b.kernel is not None else {}),
                }
                for b in self.benchmarks
            ],
            "runs": [
                {
                    "run_key": r.run_key,
                    "platform": r.platform,
                    "benchmark": r.benchmark,
                    "config": r.config,
                    "param": r.param,
                    "iteration": r.iteration,
                    "seed": r.seed,
                    "governor": r.governor,
                    "workload": r.workload,
                    "duration_s": r.duration_s,
                }
                for r in (self.runs() if runs is None else runs)
            ],
        }

    def platform(self, name: str) -> Platform:
        return next(p for p in self.platforms if p.name == name)


# -- seeds and keys --------------------------------------------------------------------------


def run_seed(
    campaign_seed: int, platform: str, config: str, benchmark: str, param: str, iteration: int
) -> int:
    """The seed of the run at these coordinates: 63 bits of SHA-256 of the coordinates.

    Depends on nothing else, so adding a platform, config, parameter or iteration to a
    campaign leaves every other run's seed (and stored result) as it was.
    """
    coordinates = [campaign_seed, platform, config, benchmark, param, iteration]
    digest = _sha256("dvfslab-seed/1", coordinates)
    return int.from_bytes(digest[:8], "big") >> (64 - SEED_BITS)


def run_key(
    preset_json: str,
    governor: str,
    workload: str,
    duration_s: float | None,
    seed: int,
    sim_version: str,
    workload_file_text: str | None = None,
) -> str:
    """32 hex digits of SHA-256 over everything that decides a run's result."""
    inputs = {
        "sim_version": sim_version,
        "preset_json": preset_json,
        "governor": governor,
        "workload": workload,
        "workload_file": workload_file_text,
        "duration_ns": duration_ns(duration_s),
        "seed": seed,
    }
    if governor.startswith(PYTHON_PREFIX):
        # A Python governor's result follows its code: a changed module is a new run.
        inputs["governor_source"] = source_digest(governor)
    elif governor.startswith(KERNEL_PREFIX):
        # So does a kernel governor's: a patched file is a new run.
        inputs["governor_source"] = kernel_source_digest(governor)
    return _sha256("dvfslab-run-key/1", inputs).hex()[:32]


def _sha256(tag: str, value: object) -> bytes:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(f"{tag}\n{text}".encode()).digest()


def _list_or_none(values: tuple[str, ...] | None) -> list[str] | None:
    return None if values is None else list(values)
