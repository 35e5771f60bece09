"""What must hold on every shipped platform: counts, utilisation range, frequencies, energy.

Tests taking `platform_id` run once per shipped preset (see conftest.py).
"""

from __future__ import annotations

import math
from functools import cache

import pytest

import dvfslab

LIGHT_LOAD = "cpu-bound:threads=2"
each_governor = pytest.mark.parametrize(
    "governor", ["performance", "powersave", "schedutil", "schedutil:invariant=0,kernel=5.9"]
)


@cache
def light_run(platform_id: str, governor: str) -> dvfslab.SimResult:
    """A short light run, shared by the checks below."""
    return dvfslab.simulate(platform_id, governor, LIGHT_LOAD, duration_s=0.2)


@cache
def describe(platform_id: str) -> dict:
    return next(p for p in dvfslab.list_platforms() if p["id"] == platform_id)


@each_governor
def test_one_row_per_cpu_and_per_package(platform_id, governor):
    result = light_run(platform_id, governor)
    assert [row["cpu"] for row in result.per_cpu] == list(range(describe(platform_id)["cpus"]))
    packages = [p["package"] for p in result.packages]
    assert packages == list(range(describe(platform_id)["packages"]))


@each_governor
def test_util_avg_stays_within_capacity_scale(platform_id, governor):
    result = light_run(platform_id, governor)
    for row in result.per_cpu:
        assert 0 <= row["util_avg_max"] <= 1024, row
    assert max(row["util_avg_max"] for row in result.per_cpu) > 0


@each_governor
def test_cpus_run_only_hardware_frequencies(platform_id, governor, presets):
    hardware = presets.hardware_freqs_khz(platform_id)
    for row in light_run(platform_id, governor).per_cpu:
        seen = {int(khz) for khz in row["time_in_freq"]}
        assert seen <= hardware, f"cpu {row['cpu']} ran at {sorted(seen - hardware)} kHz"


@each_governor
def test_residencies_cover_the_run(platform_id, governor, presets):
    # time_in_freq counts all time, busy or idle, like cpufreq's time_in_state;
    # time_in_idle_state counts the time spent in each idle state.
    result = light_run(platform_id, governor)
    idle_states = presets.idle_state_names(platform_id)
    for row in result.per_cpu:
        assert sum(row["time_in_freq"].values()) == pytest.approx(result.sim_time_s, rel=1e-6)
        idle = {state: s for state, s in row["time_in_idle_state"].items() if state != "C0"}
        assert set(idle) <= idle_states, row["cpu"]
        busy_s = row["busy_pct"] / 100 * result.sim_time_s
        assert sum(idle.values()) <= result.sim_time_s - busy_s + 1e-6, row["cpu"]


@each_governor
def test_energy_adds_up(platform_id, governor, presets):
    result = light_run(platform_id, governor)
    cpus_j = sum(row["energy_j"] for row in result.per_cpu)
    uncore_j = sum(p["uncore_energy_j"] for p in result.packages)
    assert cpus_j + uncore_j == pytest.approx(result.energy_j, rel=1e-9)
    assert sum(p["energy_j"] for p in result.packages) == pytest.approx(result.energy_j, rel=1e-9)
    assert result.avg_package_w == pytest.approx(result.energy_j / result.sim_time_s, rel=1e-9)
    for package in result.packages:
        assert package["avg_w"] == pytest.approx(package["energy_j"] / result.sim_time_s, rel=1e-9)

    # The uncore draws its static power while the package is active, plus its clock-following
    # share, and the package-idle power otherwise.
    power = presets.doc(platform_id)["package_power"]
    for package in result.packages:
        active_s = result.sim_time_s - package["idle_s"]
        assert 0 <= package["uncore_clock_s"] <= active_s + 1e-9
        expected_j = (
            power["p_uncore_active_w"] * active_s
            + power.get("p_uncore_dyn_w", 0.0) * package["uncore_clock_s"]
            + power["p_pkg_idle_w"] * package["idle_s"]
        )
        assert package["uncore_energy_j"] == pytest.approx(expected_j, rel=1e-6, abs=1e-9)

    # RAPL is read in energy units once a second: each read can lose up to one unit.
    unit_j = presets.doc(platform_id)["rapl"]["energy_unit_uj"] * 1e-6
    reads = math.ceil(result.sim_time_s) + 1
    for package in result.packages:
        assert abs(package["rapl_energy_j"] - package["energy_j"]) <= unit_j * reads, package
    rapl_j = sum(p["rapl_energy_j"] for p in result.packages)
    assert abs(rapl_j - result.energy_j) <= unit_j * reads * len(result.packages)


def test_rapl_counter_wraps_are_accounted(presets, tmp_path):
    """A 20-bit counter (64 J on Skylake) wraps within seconds; the energy must still agree."""
    platform_id = "skylake-e3-1240v5"
    path = presets.write_edited(
        platform_id, tmp_path, lambda doc: doc["rapl"].update(counter_bits=20)
    )
    unit_j = presets.doc(platform_id)["rapl"]["energy_unit_uj"] * 1e-6
    wrap_j = unit_j * 2**20

    probe = dvfslab.simulate(path, "performance", "cpu-bound:threads=1", duration_s=0.5)
    watts = probe.avg_package_w
    assert watts < wrap_j, "a once-a-second read would miss wraps: this test needs less power"
    duration_s = round(1.5 * wrap_j / watts, 3)  # long enough for at least one wrap

    result = dvfslab.simulate(path, "performance", "cpu-bound:threads=1", duration_s=duration_s)
    [package] = result.packages
    assert package["energy_j"] > wrap_j
    reads = math.ceil(result.sim_time_s) + 1
    assert abs(package["rapl_energy_j"] - package["energy_j"]) <= unit_j * reads
