"""What the fixed-frequency governors make the hardware do (Haswell-EP, 2 x 12 cores).

Haswell-EP turbo bins (published): 1-2 active cores 3.1 GHz, ..., 6-12 active cores 2.6 GHz;
P-states 1.2 GHz .. 2.3 GHz base in 100 MHz steps. CPUs n and n+24 are SMT siblings.
"""

from __future__ import annotations

import pytest

import dvfslab
from dvfslab.platforms import describe_platform

HASWELL = "haswell-e5-2670v3-2s"
CORES = 24


def busy_cpus(result, threshold_pct: float = 90.0) -> list[dict]:
    return [row for row in result.per_cpu if row["busy_pct"] > threshold_pct]


def share_at(row: dict, khz: int) -> float:
    total = sum(row["time_in_freq"].values())
    return row["time_in_freq"].get(str(khz), 0.0) / total if total else 1.0


def test_performance_runs_one_busy_core_at_the_one_core_turbo_bin():
    result = dvfslab.simulate(HASWELL, "performance", "cpu-bound:threads=1", duration_s=0.5)
    [busy] = busy_cpus(result)
    assert busy["avg_freq_khz"] == pytest.approx(3_100_000, rel=0.01)
    assert share_at(busy, 3_100_000) > 0.95


def test_performance_runs_a_full_machine_at_the_all_core_turbo_bin():
    # Two threads that start on one core's siblings are spread by active balancing, which
    # waits for the imbalance to persist (from 144 ms in this 24-CPU LLC): run long enough for
    # the moved thread's new CPU to be busy most of the run.
    result = dvfslab.simulate(HASWELL, "performance", "cpu-bound:threads=24", duration_s=2.0)
    busy = busy_cpus(result)
    assert len(busy) == CORES
    assert len({row["cpu"] % CORES for row in busy}) == CORES, "one thread per core"
    for row in busy:
        assert row["avg_freq_khz"] == pytest.approx(2_600_000, rel=0.01), row["cpu"]
        assert share_at(row, 2_600_000) > 0.95, row["cpu"]


def test_powersave_keeps_every_cpu_at_the_minimum():
    result = dvfslab.simulate(HASWELL, "powersave", "cpu-bound:threads=1", duration_s=0.5)
    [busy] = busy_cpus(result)
    assert busy["avg_freq_khz"] == pytest.approx(1_200_000, rel=0.01)
    for row in result.per_cpu:
        assert share_at(row, 1_200_000) > 0.99, row["cpu"]


def test_userspace_runs_at_scaling_setspeed():
    governor = "userspace:scaling_setspeed=1800000"
    result = dvfslab.simulate(HASWELL, governor, "cpu-bound:threads=1", duration_s=0.5)
    [busy] = busy_cpus(result)
    assert busy["avg_freq_khz"] == pytest.approx(1_800_000, rel=0.01)
    assert share_at(busy, 1_800_000) > 0.95


def test_a_busy_cpu_util_avg_approaches_full_scale():
    # 0.5 s is ~15 PELT half-lives: a CPU busy all along at its top frequency nears 1024.
    result = dvfslab.simulate(HASWELL, "performance", "cpu-bound:threads=1", duration_s=0.5)
    [busy] = busy_cpus(result)
    assert 900 < busy["util_avg_max"] <= 1024


# Defaults that follow the simulated kernel and the machine.


def test_schedutil_on_power_is_not_frequency_invariant_and_refuses_invariant_1():
    # powerpc has no arch_scale_freq_capacity: the default is the non-invariant run.
    workload = "periodic:threads=4,run_us=2000,period_us=8000"
    default = dvfslab.simulate("power8-powernv", "schedutil", workload, duration_s=0.3, seed=1)
    off = dvfslab.simulate(
        "power8-powernv", "schedutil:invariant=0", workload, duration_s=0.3, seed=1
    )
    assert default.energy_j == off.energy_j
    with pytest.raises(dvfslab.ConfigError, match="POWER"):
        dvfslab.simulate("power8-powernv", "schedutil:invariant=1", workload, duration_s=0.1)


def test_ondemand_io_is_busy_follows_should_io_be_busy():
    # cpufreq_ondemand.c should_io_be_busy: Haswell-EP is Intel family 6 model 63, so I/O wait
    # counts as busy by default; io_is_busy=1 is accepted and equals the default.
    workload = "dbench4:clients=2"
    default = dvfslab.simulate(HASWELL, "ondemand", workload, duration_s=0.5)
    busy = dvfslab.simulate(HASWELL, "ondemand:io_is_busy=1", workload, duration_s=0.5)
    idle = dvfslab.simulate(HASWELL, "ondemand:io_is_busy=0", workload, duration_s=0.5)
    assert default.energy_j == busy.energy_j
    assert default.energy_j != idle.energy_j


def test_epyc_preset_shows_its_pss_latency_cppc_and_one_ms_rate_limit():
    # acpi_cpufreq_cpu_init: the firmware's _PSS latency, 0 on this part, never CPUFREQ_ETERNAL;
    # cpufreq_policy_transition_delay_us then gives 1 ms. From 5.12 cpuinfo.max_freq is the
    # top _PSS entry scaled by CPPC 166/110.
    info = describe_platform("epyc7742-2s")
    assert info["transition_latency"] == "acpi-cpufreq 0 us, amd-pstate 20 us"
    assert info["cppc"] == "highest_perf 166, nominal_perf 110"
    assert info["policies"][0]["rate_limit_us"] == 1000
    assert info["policies"][0]["cpuinfo_max_khz"] == 3_394_775
