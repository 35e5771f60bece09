"""The package-power fit of docs/validation.md recovers known constants and resists outliers."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from dvfslab.validate.power_fit import fit_power, power_terms, preset_constants

PLATFORM = "haswell-e5-2670v3-2s"


def run_json(active: float, clock: float, idle: float, cores: float, constants: dict) -> str:
    """A run of 1 s on two packages whose terms are the given time shares."""
    uncore = (
        constants["p_uncore_active_w"] * active
        + constants["p_uncore_dyn_w"] * clock
        + constants["p_pkg_idle_w"] * idle
    )
    packages = [
        {"idle_s": idle / 2, "uncore_clock_s": clock / 2, "uncore_energy_j": uncore / 2},
        {"idle_s": idle / 2, "uncore_clock_s": clock / 2, "uncore_energy_j": uncore / 2},
    ]
    return json.dumps({"sim_time_s": 1.0, "packages": packages, "energy_j": uncore + cores})


def test_terms_are_time_shares_of_the_run():
    js = json.dumps(
        {
            "sim_time_s": 2.0,
            "energy_j": 100.0,
            "packages": [
                {"idle_s": 0.5, "uncore_clock_s": 1.0, "uncore_energy_j": 30.0},
                {"idle_s": 1.5, "uncore_clock_s": 0.0, "uncore_energy_j": 30.0},
            ],
        }
    )
    # Two packages of 2 s: 2 s idle in all, so 2 s active; 40 J of the 100 J are the cores'.
    assert power_terms(js) == pytest.approx((1.0, 0.5, 1.0, 20.0))


def preset_dyn() -> float:
    return preset_constants(PLATFORM)["p_uncore_dyn_w"]


def synthetic_cells(truth: dict, core_scale: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    """24 runs with random activity and the published watts the given constants imply."""
    rng = np.random.default_rng(7)
    rows, published = [], []
    for i in range(24):
        active = rng.uniform(1.0, 2.0)
        clock = rng.uniform(0.0, active)
        cores = rng.uniform(2.0, 120.0)
        bench, config = f"b{i // 4}", f"c{i % 4}"
        rows.append(
            {
                "platform": PLATFORM,
                "benchmark": bench,
                "config": config,
                "sim_time_s": 1.0,
                "run_json": run_json(active, clock, 2.0 - active, cores, {**truth}),
            }
        )
        watts = (
            truth["p_uncore_active_w"] * active
            + truth["p_uncore_dyn_w"] * clock
            + truth["p_pkg_idle_w"] * (2.0 - active)
            + core_scale * cores
        )
        published.append((PLATFORM, bench, config, watts))
    table = pd.DataFrame(published, columns=["machine", "benchmark", "config", "package_watts"])
    return pd.DataFrame(rows), table


def test_fit_recovers_the_constants_behind_published_watts_despite_an_outlier():
    # The clock-following share is held (HELD): the truth has the preset's.
    truth = {"p_uncore_active_w": 20.0, "p_uncore_dyn_w": preset_dyn(), "p_pkg_idle_w": 9.0}
    rows, table = synthetic_cells(truth, core_scale=0.8)
    # One cell whose benchmark model is far off: three times the published watts.
    table.loc[0, "package_watts"] /= 3

    (fit,) = fit_power(rows, table)
    assert fit.platform == PLATFORM
    assert fit.cells == 24
    assert fit.fitted["core_scale"] == pytest.approx(0.8, rel=0.03)
    for name, value in truth.items():
        assert fit.fitted[name] == pytest.approx(value, rel=0.1), name
    assert fit.within_25pct_after == pytest.approx(23 / 24)


def test_idle_power_above_the_active_uncore_is_refused():
    # Watts that only an idle package drawing more than an active one would explain.
    truth = {"p_uncore_active_w": 12.0, "p_uncore_dyn_w": preset_dyn(), "p_pkg_idle_w": 30.0}
    rows, table = synthetic_cells(truth, core_scale=0.8)

    (fit,) = fit_power(rows, table)
    assert fit.fitted["p_pkg_idle_w"] == fit.preset["p_pkg_idle_w"]
    assert fit.fitted["p_pkg_idle_w"] < fit.fitted["p_uncore_active_w"]
