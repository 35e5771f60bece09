"""Checking a campaign document (a parsed TOML file, docs/campaign-format.md) into a Campaign.

`dvfslab.campaign.schema` checks the document's shape (keys, types, ranges) with pydantic;
what needs more than the file is checked here: governors, workloads and their knobs, platform
presets, and names that must refer to each other. Every error is a ConfigError naming the file,
the key path and what was expected.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from dvfslab import _core
from dvfslab._core import ConfigError
from dvfslab.api import TRACE_PREFIX
from dvfslab.campaign.key_errors import Checker, child
from dvfslab.campaign.model import (
    Benchmark,
    Campaign,
    Config,
    FittedConstants,
    Platform,
    SweepValues,
)
from dvfslab.campaign.schema import (
    BenchmarkTable,
    CampaignFile,
    ConfigTable,
    CrossValidateTable,
    StructuralTable,
    first_error,
)
from dvfslab.campaign.variants import Structural, split_spec, with_knobs
from dvfslab.governors import KERNEL_PREFIX, PYTHON_PREFIX
from dvfslab.governors import resolve as resolve_governor
from dvfslab.platforms import load_platform, pointer_parent


def campaign_from_dict(
    doc: dict[str, Any],
    source: str,
    base_dir: Path | None = None,
    default_name: str | None = None,
) -> Campaign:
    """Check a campaign document (the TOML file's content) and build the Campaign.

    `source` names the document in errors; relative paths in it are relative to `base_dir`.
    """
    check = Checker(source)
    base_dir = base_dir or Path.cwd()
    if "name" not in doc and default_name is not None:
        doc = {**doc, "name": default_name}
    try:
        top = CampaignFile.model_validate(doc)
    except ValidationError as e:
        raise ConfigError(first_error(e, source)) from None
    if top.name is None:
        check.fail("", "missing key 'name'")

    platforms = _checked_platforms(check, top.platforms, base_dir)
    platform_names = [p.name for p in platforms]
    configs = _checked_configs(check, top.configs, doc["configs"], platform_names)
    benchmarks = _checked_benchmarks(
        check, top.benchmarks, doc["benchmarks"], platform_names, base_dir
    )

    by_name = {c.name: c for c in configs}
    if top.baseline not in by_name:
        check.fail("baseline", f"{top.baseline!r} is not a config (configs: {', '.join(by_name)})")
    missing = [p for p in platform_names if not by_name[top.baseline].runs_on(p)]
    if missing:
        check.fail(
            child(child("configs", top.baseline), "platforms"),
            f"the baseline must run on every platform; it leaves out {', '.join(missing)}",
        )

    fitted = _checked_fitted(check, top.cross_validate, platforms, benchmarks)
    campaign = Campaign(
        name=top.name,
        baseline=top.baseline,
        platforms=tuple(platforms),
        configs=tuple(configs),
        benchmarks=tuple(_with_own_fit(b, fitted) for b in benchmarks),
        seed=top.seed,
        iterations=top.iterations,
        duration_s=top.duration_s,
        description=top.description,
        source=source,
        nominal=top.nominal,
        fitted=fitted,
        structural=_checked_structural(check, top.structural, benchmarks, platform_names),
    )
    if not campaign.runs():
        check.fail("", "no runs: no benchmark runs on any platform that a config runs on")
    return campaign


def _checked_platforms(check: Checker, refs: list[str], base_dir: Path) -> list[Platform]:
    platforms: list[Platform] = []
    for i, ref in enumerate(refs):
        path = child("platforms", i)
        is_path = ref.endswith(".json") or any(s in ref for s in (os.sep, os.altsep) if s)
        resolved = str((base_dir / ref).resolve()) if is_path else ref
        try:
            preset_json, _ = load_platform(resolved)
        except ConfigError as e:
            check.fail(path, str(e))
        preset = json.loads(preset_json)
        preset_id = preset.get("id") if is_path and isinstance(preset, dict) else ref
        name = preset_id if isinstance(preset_id, str) and preset_id else Path(ref).stem
        if any(p.name == name for p in platforms):
            check.fail(path, f"platform {name!r} is listed twice")
        platforms.append(Platform(name, resolved, preset_json))
    return platforms


def _checked_subset(
    check: Checker, chosen: list[str] | None, path: str, platforms: list[str]
) -> tuple[str, ...] | None:
    """The platforms a config or benchmark is limited to: campaign platforms, each once."""
    if chosen is None:
        return None
    path = child(path, "platforms")
    for i, name in enumerate(chosen):
        if name not in platforms:
            check.fail(
                child(path, i), f"{name!r} is not a campaign platform ({', '.join(platforms)})"
            )
        if name in chosen[:i]:
            check.fail(child(path, i), f"{json.dumps(name)} is listed twice")
    return tuple(chosen)


def _checked_configs(
    check: Checker,
    table: dict[str, ConfigTable],
    written: dict[str, Any],
    platforms: list[str],
) -> list[Config]:
    governors = {g["name"] for g in json.loads(_core.governors())}
    configs = []
    for name, entry in table.items():
        path = child("configs", name)
        _check_key(check, name, path, "a config name")
        governor = entry.governor.split(":", 1)[0]
        if entry.governor.startswith(PYTHON_PREFIX):
            try:
                resolve_governor(entry.governor)
            except ConfigError as e:
                check.fail(_spec_path(path, written[name], "governor"), str(e))
        elif entry.governor.startswith(KERNEL_PREFIX):
            pass  # built and checked by the simulator with the rest of the setup (preflight)
        elif governor not in governors:
            check.fail(
                _spec_path(path, written[name], "governor"),
                f"unknown governor {governor!r} (known: {', '.join(sorted(governors))})",
            )
        subset = _checked_subset(check, entry.platforms, path, platforms)
        configs.append(Config(name, entry.governor, subset))
    return configs


def _checked_benchmarks(
    check: Checker,
    table: dict[str, BenchmarkTable],
    written: dict[str, Any],
    platforms: list[str],
    base_dir: Path,
) -> list[Benchmark]:
    workloads = {w["name"]: w for w in json.loads(_core.workloads())}
    benchmarks = []
    for name, entry in table.items():
        path = child("benchmarks", name)
        _check_key(check, name, path, "a benchmark id")
        spec_path = _spec_path(path, written[name], "workload")
        spec = entry.workload
        subset = _checked_subset(check, entry.platforms, path, platforms)
        if spec.startswith(TRACE_PREFIX):
            benchmarks.append(_trace_benchmark(check, name, entry, spec_path, base_dir, subset))
            continue
        is_file = spec.endswith(".json") or any(s in spec for s in (os.sep, os.altsep) if s)
        file_text = None
        if is_file:
            file_text = _read_workload_file(check, spec_path, base_dir / spec)
            # Named by its path as written ("playback.json"), as `dvfslab run -w` names it: run
            # keys then stay when the campaign's folder moves.
            spec = os.path.normpath(spec)
            knobs: list[str] | None = None
        else:
            workload = spec.split(":", 1)[0]
            if workload not in workloads:
                known = ", ".join(sorted(workloads))
                check.fail(spec_path, f"unknown workload {workload!r} (known: {known})")
            knobs = [k["name"] for k in workloads[workload]["knobs"]]
        benchmarks.append(
            Benchmark(
                name=name,
                workload=spec,
                sweep=_checked_sweep(
                    check, entry.sweep, path, spec, knobs, subset or tuple(platforms)
                ),
                duration_s=entry.duration_s,
                iterations=entry.iterations,
                platforms=subset,
                kernel=entry.kernel,
                workload_file_text=file_text,
            )
        )
    return benchmarks


def _trace_benchmark(
    check: Checker,
    name: str,
    entry: BenchmarkTable,
    spec_path: str,
    base_dir: Path,
    subset: tuple[str, ...] | None,
) -> Benchmark:
    """A benchmark of a recording's tasks (`trace:PATH`, the path relative to the campaign
    file): a file that exists, and no sweep (a recording has no knobs)."""
    written = entry.workload[len(TRACE_PREFIX) :]
    if not written:
        check.fail(spec_path, "expected trace:PATH, the path of a recorded trace")
    trace = base_dir / written
    if not trace.is_file():
        check.fail(spec_path, f"trace file {trace} does not exist")
    if entry.sweep:
        check.fail(child(child("benchmarks", name), "sweep"), "a recorded trace has no knobs")
    return Benchmark(
        name=name,
        workload=f"{TRACE_PREFIX}{os.path.normpath(written)}",
        duration_s=entry.duration_s,
        iterations=entry.iterations,
        platforms=subset,
        kernel=entry.kernel,
        trace_path=str(trace),
    )


def _check_key(check: Checker, key: str, path: str, what: str) -> None:
    if not key.strip():
        check.fail(path, f"expected {what}, got an empty key")


def _spec_path(path: str, written: object, key: str) -> str:
    """Where the spec was written: `configs.x` for `x = "spec"`, `configs.x.governor` in a
    table."""
    return child(path, key) if isinstance(written, dict) else path


def _read_workload_file(check: Checker, path: str, file: Path) -> str:
    try:
        return file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        check.fail(path, f"cannot read workload file {file}: {getattr(e, 'strerror', None) or e}")


def _checked_sweep(
    check: Checker,
    table: dict[str, list[Any] | dict[str, list[Any]]] | None,
    path: str,
    spec: str,
    knobs: list[str] | None,
    platforms: tuple[str, ...],
) -> tuple[tuple[str, SweepValues], ...]:
    if table is None:
        return ()
    path = child(path, "sweep")
    if table and knobs is None:
        check.fail(path, "a workload file has no knobs to sweep")
    written = {kv.split("=", 1)[0] for kv in spec.partition(":")[2].split(",") if kv}
    sweep = []
    for knob, values in table.items():
        knob_path = child(path, knob)
        if knobs is not None and knob not in knobs:
            workload = spec.split(":", 1)[0]
            check.fail(knob_path, f"{workload!r} has no knob {knob!r} (knobs: {', '.join(knobs)})")
        if knob in written:
            check.fail(knob_path, f"{knob!r} is both set in the workload spec and swept")
        if isinstance(values, dict):
            # One list per platform the benchmark runs on.
            for name in values:
                if name not in platforms:
                    check.fail(
                        child(knob_path, name),
                        f"not a platform this benchmark runs on (they are: {', '.join(platforms)})",
                    )
            missing = [p for p in platforms if p not in values]
            if missing:
                check.fail(knob_path, f"no values for platform(s) {', '.join(missing)}")
            by_platform = tuple(
                (name, _distinct(check, values[name], child(knob_path, name))) for name in platforms
            )
            sweep.append((knob, SweepValues(by_platform=by_platform)))
        else:
            sweep.append((knob, SweepValues(shared=_distinct(check, values, knob_path))))
    return tuple(sweep)


def _distinct(check: Checker, values: list[Any], path: str) -> tuple[str, ...]:
    """A sweep's values as they go into specs, each once."""
    texts: list[str] = []
    for i, value in enumerate(values):
        text = str(value)
        if text in texts:
            check.fail(child(path, i), f"{text} is listed twice")
        texts.append(text)
    return tuple(texts)


def _checked_fitted(
    check: Checker,
    table: CrossValidateTable | None,
    platforms: list[Platform],
    benchmarks: list[Benchmark],
) -> FittedConstants:
    """`[cross_validate]`: platforms of the campaign, constants that exist where they say."""
    if table is None:
        return FittedConstants()
    presets = {p.name: json.loads(p.preset_json) for p in platforms}
    workloads = {b.workload.split(":", 1)[0] for b in benchmarks if not b.from_file}
    knobs = {w["name"]: {k["name"] for k in w["knobs"]} for w in json.loads(_core.workloads())}
    on_one = table.fitted_on_one or {}
    for platform, constants in on_one.items():
        path = child(child("cross_validate", "fitted_on_one"), platform)
        if platform not in presets:
            check.fail(path, f"{platform!r} is not a campaign platform ({', '.join(presets)})")
        for constant in constants:
            where = child(path, constant)
            if constant.startswith("/"):
                if not _is_number_at(presets[platform], constant):
                    check.fail(where, f"the preset has no number at {constant}")
            else:
                _check_knob(check, where, constant, workloads, knobs)
    on_all = table.fitted_on_all or {}
    for knob in on_all:
        _check_knob(
            check, child(child("cross_validate", "fitted_on_all"), knob), knob, workloads, knobs
        )
    return FittedConstants(
        on_one={p: dict(c) for p, c in on_one.items()},
        on_all={k: tuple(v) for k, v in on_all.items()},
    )


def _with_own_fit(bench: Benchmark, fitted: FittedConstants) -> Benchmark:
    """The benchmark with each knob chosen on every machine's cells (`fitted_on_all`) at the
    campaign's own value, the first listed, where its spec neither sets nor sweeps the knob.

    Without this the in-sample runs would take the knob's default, which the workload model
    may declare from other evidence (pgbench's `client_us`, 14 us, is measured on guests; the
    intel-invariance campaign's bare-metal cells chose 8), and a change of that default would
    move cells the campaign fitted. Its cross-validation folds set the knob to each fold's own
    choice."""
    if bench.from_file:
        return bench
    name, written = split_spec(bench.workload)
    written |= {knob for knob, _ in bench.sweep}
    own = {
        knob.split(":", 1)[1]: values[0]
        for knob, values in fitted.on_all.items()
        if knob.split(":", 1)[0] == name and knob.split(":", 1)[1] not in written
    }
    if not own:
        return bench
    return dataclasses.replace(bench, workload=with_knobs(bench.workload, own))


def _checked_structural(
    check: Checker,
    table: dict[str, StructuralTable] | None,
    benchmarks: list[Benchmark],
    platforms: list[str],
) -> tuple[Structural, ...]:
    """`[structural]`: each switch a knob of the workloads of its benchmarks, which neither set
    nor sweep it, with choices for every platform they run on."""
    if not table:
        return ()
    by_name = {b.name: b for b in benchmarks}
    knobs = {w["name"]: w["knobs"] for w in json.loads(_core.workloads())}
    out = []
    for knob, entry in table.items():
        path = child("structural", knob)
        for i, name in enumerate(entry.benchmarks):
            where = child(child(path, "benchmarks"), i)
            bench = by_name.get(name)
            if bench is None:
                check.fail(where, f"{name!r} is not a benchmark ({', '.join(by_name)})")
            if bench.from_file:
                check.fail(where, f"{name!r} runs a file, which has no knobs")
            workload, _, rest = bench.workload.partition(":")
            if knob not in {k["name"] for k in knobs[workload]}:
                check.fail(path, f"{workload!r} ({name}) has no knob {knob!r}")
            written = {kv.split("=", 1)[0].strip() for kv in rest.split(",") if kv}
            if knob in written or knob in {k for k, _ in bench.sweep}:
                check.fail(where, f"{name} sets or sweeps {knob!r}: a switch draws it")
        if (entry.choices is None) == (entry.by_platform is None):
            check.fail(path, "expected one of 'choices' (every platform) or 'by_platform'")
        by_platform: tuple[tuple[str, tuple[tuple[str, float], ...]], ...] = ()
        if entry.by_platform is not None:
            runs_on = {
                p for name in entry.benchmarks for p in platforms if by_name[name].runs_on(p)
            }
            for name in entry.by_platform:
                if name not in platforms:
                    check.fail(
                        child(child(path, "by_platform"), name),
                        f"not a campaign platform ({', '.join(platforms)})",
                    )
            missing = [p for p in platforms if p in runs_on and p not in entry.by_platform]
            if missing:
                check.fail(child(path, "by_platform"), f"no choices for {', '.join(missing)}")
            by_platform = tuple(
                (name, tuple(choices.items())) for name, choices in entry.by_platform.items()
            )
        out.append(
            Structural(
                knob,
                entry.source,
                tuple(entry.benchmarks),
                tuple((entry.choices or {}).items()),
                by_platform,
            )
        )
    return tuple(out)


def _check_knob(
    check: Checker, path: str, text: str, workloads: set[str], knobs: dict[str, set[str]]
) -> None:
    """`text` is 'workload:knob' for a workload the campaign runs and one of its knobs."""
    workload, _, knob = text.partition(":")
    if not knob or workload not in workloads:
        known = ", ".join(sorted(workloads))
        check.fail(path, f"expected 'workload:knob' for a workload of the campaign ({known})")
    if knob not in knobs.get(workload, set()):
        check.fail(path, f"{workload} has no knob {knob!r}")


def _is_number_at(doc: Any, pointer: str) -> bool:
    """Does the JSON Pointer name a number, or a declared constant, in `doc`?"""
    try:
        parent, key = pointer_parent(doc, pointer)
        node = parent[key]
    except (KeyError, IndexError, ValueError, TypeError):
        return False
    if isinstance(node, dict):
        node = node.get("value")
    return isinstance(node, (int, float)) and not isinstance(node, bool)
