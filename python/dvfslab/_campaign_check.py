"""Checking a campaign document (a parsed TOML file, docs/campaign-format.md) into a Campaign.

Every error is a ConfigError naming the file, the key path and what was expected.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from dvfslab import _core
from dvfslab._campaign_model import Benchmark, Campaign, Config, Platform, SweepValues
from dvfslab._checks import Checker, child
from dvfslab._core import ConfigError
from dvfslab.api import SEED_MAX
from dvfslab.platforms import load_platform

ITERATIONS_MAX = 10_000

_TOP_REQUIRED = ("platforms", "configs", "benchmarks", "baseline")
_TOP_OPTIONAL = ("name", "description", "seed", "iterations", "duration_s")
_BENCHMARK_KEYS = ("workload", "sweep", "duration_s", "iterations", "platforms")
_CONFIG_KEYS = ("governor", "platforms")
_SPEC_RESERVED = ",:="  # characters that would break a `name:key=value,...` spec


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
    top = check.table(doc, "", required=_TOP_REQUIRED, optional=_TOP_OPTIONAL)

    name = top.get("name", default_name)
    if name is None:
        check.fail("", "missing key 'name'")
    name = _checked_name(check, name, "name")
    description = top.get("description", "")
    if not isinstance(description, str):
        check.expected("description", "a string", description)

    platforms = _checked_platforms(check, top["platforms"], base_dir)
    platform_names = [p.name for p in platforms]
    configs = _checked_configs(check, top["configs"], platform_names)
    benchmarks = _checked_benchmarks(check, top["benchmarks"], platform_names, base_dir)

    baseline = check.string(top["baseline"], "baseline", "the name of a config")
    by_name = {c.name: c for c in configs}
    if baseline not in by_name:
        check.fail("baseline", f"{baseline!r} is not a config (configs: {', '.join(by_name)})")
    missing = [p for p in platform_names if not by_name[baseline].runs_on(p)]
    if missing:
        check.fail(
            child(child("configs", baseline), "platforms"),
            f"the baseline must run on every platform; it leaves out {', '.join(missing)}",
        )

    campaign = Campaign(
        name=name,
        baseline=baseline,
        platforms=tuple(platforms),
        configs=tuple(configs),
        benchmarks=tuple(benchmarks),
        seed=check.integer(top.get("seed", 0), "seed", 0, SEED_MAX),
        iterations=check.integer(top.get("iterations", 1), "iterations", 1, ITERATIONS_MAX),
        duration_s=(
            check.seconds(top["duration_s"], "duration_s") if "duration_s" in top else None
        ),
        description=description,
        source=source,
    )
    if not campaign.runs():
        check.fail("", "no runs: no benchmark runs on any platform that a config runs on")
    return campaign


def _checked_name(check: Checker, value: object, path: str) -> str:
    text = check.string(value, path, "a name of letters, digits, '.', '_' or '-'")
    if not all(c.isalnum() or c in "._-" for c in text) or text.startswith("."):
        check.fail(path, f"expected a name of letters, digits, '.', '_' or '-', got {text!r}")
    return text


def _checked_platforms(check: Checker, value: object, base_dir: Path) -> list[Platform]:
    refs = check.strings(value, "platforms", "platform preset ids or files", "a preset id")
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
    check: Checker, table: dict[str, Any], path: str, platforms: list[str]
) -> tuple[str, ...] | None:
    if "platforms" not in table:
        return None
    path = child(path, "platforms")
    chosen = check.strings(table["platforms"], path, "platform ids", "a platform id")
    for i, name in enumerate(chosen):
        if name not in platforms:
            check.fail(
                child(path, i), f"{name!r} is not a campaign platform ({', '.join(platforms)})"
            )
    return tuple(chosen)


def _checked_configs(check: Checker, value: object, platforms: list[str]) -> list[Config]:
    table = check.table(value, "configs", what="a table of name = governor spec")
    if not table:
        check.fail("configs", "expected at least one config")
    governors = {g["name"] for g in json.loads(_core.governors())}
    configs = []
    for name, entry in table.items():
        path = child("configs", name)
        check.string(name, path, "a config name")
        if isinstance(entry, dict):
            entry = check.table(entry, path, required=("governor",), optional=_CONFIG_KEYS)
            spec, spec_path = entry["governor"], child(path, "governor")
            subset = _checked_subset(check, entry, path, platforms)
        else:
            spec, spec_path, subset = entry, path, None
        spec = check.string(spec, spec_path, "a governor spec such as 'schedutil:rate_limit_us=0'")
        governor = spec.split(":", 1)[0]
        if governor not in governors:
            check.fail(
                spec_path, f"unknown governor {governor!r} (known: {', '.join(sorted(governors))})"
            )
        configs.append(Config(name, spec, subset))
    return configs


def _checked_benchmarks(
    check: Checker, value: object, platforms: list[str], base_dir: Path
) -> list[Benchmark]:
    table = check.table(value, "benchmarks", what="a table of id = { workload = ..., sweep = ... }")
    if not table:
        check.fail("benchmarks", "expected at least one benchmark")
    workloads = {w["name"]: w for w in json.loads(_core.workloads())}
    benchmarks = []
    for name, entry in table.items():
        path = child("benchmarks", name)
        check.string(name, path, "a benchmark id")
        if not isinstance(entry, dict):
            entry = {"workload": entry}
            spec_path = path
        else:
            entry = check.table(entry, path, required=("workload",), optional=_BENCHMARK_KEYS)
            spec_path = child(path, "workload")
        spec = check.string(entry["workload"], spec_path, "a workload spec such as 'periodic'")
        is_file = spec.endswith(".json") or any(s in spec for s in (os.sep, os.altsep) if s)
        file_text = None
        if is_file:
            spec, file_text = _read_workload_file(check, spec_path, base_dir / spec)
            knobs: list[str] | None = None
        else:
            workload = spec.split(":", 1)[0]
            if workload not in workloads:
                known = ", ".join(sorted(workloads))
                check.fail(spec_path, f"unknown workload {workload!r} (known: {known})")
            knobs = [k["name"] for k in workloads[workload]["knobs"]]
        subset = _checked_subset(check, entry, path, platforms)
        benchmarks.append(
            Benchmark(
                name=name,
                workload=spec,
                sweep=_checked_sweep(
                    check, entry.get("sweep"), path, spec, knobs, subset or tuple(platforms)
                ),
                duration_s=(
                    check.seconds(entry["duration_s"], child(path, "duration_s"))
                    if "duration_s" in entry
                    else None
                ),
                iterations=(
                    check.integer(entry["iterations"], child(path, "iterations"), 1, ITERATIONS_MAX)
                    if "iterations" in entry
                    else None
                ),
                platforms=subset,
                workload_file_text=file_text,
            )
        )
    return benchmarks


def _read_workload_file(check: Checker, path: str, file: Path) -> tuple[str, str]:
    try:
        return str(file.resolve()), file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        check.fail(path, f"cannot read workload file {file}: {getattr(e, 'strerror', None) or e}")


def _checked_sweep(
    check: Checker,
    value: object,
    path: str,
    spec: str,
    knobs: list[str] | None,
    platforms: tuple[str, ...],
) -> tuple[tuple[str, SweepValues], ...]:
    if value is None:
        return ()
    path = child(path, "sweep")
    table = check.table(value, path, what="a table of knob = [values]")
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
                (name, _checked_values(check, values[name], child(knob_path, name)))
                for name in platforms
            )
            sweep.append((knob, SweepValues(by_platform=by_platform)))
        else:
            sweep.append((knob, SweepValues(shared=_checked_values(check, values, knob_path))))
    return tuple(sweep)


def _checked_values(check: Checker, values: object, path: str) -> tuple[str, ...]:
    what = "a non-empty list of numbers or strings, or a table of platform = [values]"
    if not isinstance(values, list) or not values:
        check.expected(path, what, values)
    texts: list[str] = []
    for i, v in enumerate(values):
        ok = isinstance(v, (int, float, str)) and not isinstance(v, bool)
        text = str(v)
        if not ok or not text or any(c in text for c in _SPEC_RESERVED):
            check.expected(child(path, i), "a number or a string without , : =", v)
        if text in texts:
            check.fail(child(path, i), f"{text} is listed twice")
        texts.append(text)
    return tuple(texts)
