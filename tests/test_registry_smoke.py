"""Every governor and every workload in the simulator's registries runs a short simulation on a
preset that accepts it, and the run keeps the basic invariants. The lists come from the
registries themselves, so a new governor or workload is covered without editing this file.
"""

from __future__ import annotations

import json
from functools import cache

import pytest

import dvfslab
from dvfslab import _core
from dvfslab.platforms import load_platform

GOVERNORS = [g["name"] for g in json.loads(_core.governors())]
METRICS = {w["name"]: w["metric"].split(" or ") for w in json.loads(_core.workloads())}
WORKLOADS = list(METRICS)
DURATION_S = 0.05
# Tried first: a small x86 desktop (every Intel driver, HWP), then a phone (cluster DVFS).
PREFERRED = ["skylake-e3-1240v5", "pixel6"]


@cache
def suitable_preset(governor: str, workload: str) -> str:
    """The first preset, preferred ones first, on which the simulator accepts the setup."""
    ids = PREFERRED + [p for p in dvfslab.platforms.preset_ids() if p not in PREFERRED]
    refusals = []
    for platform in ids:
        platform_json, source = load_platform(platform)
        try:
            _core.check(
                platform_json, source, governor, workload, duration_ns=int(DURATION_S * 1e9)
            )
        except _core.ConfigError as e:
            refusals.append(f"{platform}: {e}")
            continue
        return platform
    raise AssertionError(f"no preset accepts {governor} with {workload}: {refusals}")


def assert_basic_invariants(platform: str, result: dvfslab.SimResult, presets) -> None:
    # A fixed-work benchmark may finish before the time is up.
    assert 0 < result.sim_time_s <= DURATION_S
    assert result.energy_j > 0
    hardware = presets.hardware_freqs_khz(platform)
    for row in result.per_cpu:
        seen = {int(khz) for khz in row["time_in_freq"]}
        assert seen <= hardware, f"cpu {row['cpu']} ran at {sorted(seen - hardware)} kHz"
        assert sum(row["time_in_freq"].values()) == pytest.approx(result.sim_time_s, rel=1e-6)


def test_the_registries_are_not_empty():
    assert "schedutil" in GOVERNORS
    assert len(GOVERNORS) >= 7
    assert "cpu-bound" in WORKLOADS
    assert len(WORKLOADS) >= 20


@pytest.mark.parametrize("governor", GOVERNORS)
def test_every_governor_runs(governor, presets):
    workload = "periodic:threads=2,run_us=2000,period_us=8000"
    platform = suitable_preset(governor, workload)
    result = dvfslab.simulate(platform, governor, workload, duration_s=DURATION_S)
    assert_basic_invariants(platform, result, presets)
    assert result.governor == governor


@pytest.mark.parametrize("workload", WORKLOADS)
def test_every_workload_runs(workload, presets):
    platform = suitable_preset("schedutil", workload)
    result = dvfslab.simulate(platform, "schedutil", workload, duration_s=DURATION_S)
    assert_basic_invariants(platform, result, presets)
    assert result.workload == workload
    assert result.metric.name in METRICS[workload]
