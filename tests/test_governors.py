"""What the fixed-frequency governors make the hardware do (Haswell-EP, 2 x 12 cores), through
the Python API. The turbo bins under performance, powersave's minimum, POWER's invariance and
ondemand's io_is_busy are the simulator's own scenario tests
(crates/dvfslab-sim/tests/it/scenarios.rs).

Haswell-EP turbo bins (published): 1-2 active cores 3.1 GHz, ..., 6-12 active cores 2.6 GHz;
P-states 1.2 GHz .. 2.3 GHz base in 100 MHz steps. CPUs n and n+24 are SMT siblings.
"""

from __future__ import annotations

import pytest

import dvfslab
from dvfslab.governors import with_setting
from dvfslab.platforms import describe_platform

HASWELL = "haswell-e5-2670v3-2s"


def busy_cpus(result, threshold_pct: float = 90.0) -> list[dict]:
    return [row for row in result.per_cpu if row["busy_pct"] > threshold_pct]


def share_at(row: dict, khz: int) -> float:
    total = sum(row["time_in_freq"].values())
    return row["time_in_freq"].get(str(khz), 0.0) / total if total else 1.0


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


def test_epyc_preset_shows_its_pss_latency_cppc_and_one_ms_rate_limit():
    # acpi_cpufreq_cpu_init: the firmware's _PSS latency, 0 on this part, never CPUFREQ_ETERNAL;
    # cpufreq_policy_transition_delay_us then gives 1 ms. From 5.12 cpuinfo.max_freq is the
    # top _PSS entry scaled by CPPC 166/110.
    info = describe_platform("epyc7742-2s")
    assert info["transition_latency"] == "acpi-cpufreq 0 us, amd-pstate 20 us"
    assert info["cppc"] == "highest_perf 166, nominal_perf 110"
    assert info["policies"][0]["rate_limit_us"] == 1000
    assert info["policies"][0]["cpuinfo_max_khz"] == 3_394_775


def test_a_setting_replaces_the_specs_own_in_every_spec_form() -> None:
    assert with_setting("performance", "kernel", "5.4") == "performance:kernel=5.4"
    assert with_setting("schedutil:kernel=5.5,invariant=0", "kernel", "5.4") == (
        "schedutil:invariant=0,kernel=5.4"
    )
    # A Python governor's and a kernel file's own colons are part of their target.
    assert with_setting("python:mygovs:Stepper,sampling_ms=4", "kernel", "5.4") == (
        "python:mygovs:Stepper,sampling_ms=4,kernel=5.4"
    )
    assert with_setting("kernel:/src/cpufreq_schedutil.c", "kernel", "5.4") == (
        "kernel:/src/cpufreq_schedutil.c,kernel=5.4"
    )
