"""intel_pstate's decisions recomputed from the decision log, in the driver's fixed point.

Each load-based evaluation (get_target_pstate) and each PID step (pid_calc on
get_target_pstate_use_performance's input) is recomputed from the inputs `--explain` logs, at
the kernel versions whose rules differ (the PID of 4.13, the 1.0 I/O-wait boost of 4.14 - 5.0,
the doubling boost of 5.1+), and every one must agree.
"""

from __future__ import annotations

import math

import pandas as pd
import pytest

import dvfslab

FRAC = 256  # 8-bit fixed point, as the driver keeps percentages and busy fractions
# i7-2600K: ratios 16 (1.6 GHz) .. 34 (base) .. 38 (1-core turbo).
MIN_PSTATE, TURBO_PSTATE = 16, 38


def fp(x: float) -> int:
    """A logged fixed-point value back to its integer (it was logged as x / 256, exactly)."""
    return round(x * FRAC)


def load_target(row: pd.Series) -> tuple[int, int]:
    """get_target_pstate, then the clamp to the limits: (target, pstate)."""
    busy = max(fp(row["busy_frac"]), fp(row["iowait_boost"]))
    top = TURBO_PSTATE + (TURBO_PSTATE >> 2)
    target = max((top * busy) >> 8, MIN_PSTATE)
    avg = int(row["avg_pstate"])
    if avg > target:
        target += (avg - target) >> 1
    pstate = min(max(target, int(row["min_perf_ratio"])), int(row["max_perf_ratio"]))
    return target, pstate


def decisions(governor: str, workload: str) -> pd.DataFrame:
    r = dvfslab.simulate("i7-2600k", governor, workload, duration_s=2.0, seed=3, explain=True)
    return r.df_decisions()


@pytest.mark.parametrize("kernel", ["4.19", "5.0", "5.2", "6.18"])
@pytest.mark.parametrize("workload", ["fio", "kernbench:jobs=4", "periodic:threads=3,run_us=3000"])
def test_load_based_decisions_recompute(kernel: str, workload: str) -> None:
    df = decisions(f"intel_pstate:algorithm=load,kernel={kernel}", workload)
    df = df.dropna(subset=["busy_frac"])
    assert len(df) > 20
    recomputed = df.apply(load_target, axis=1, result_type="expand")
    agree = (recomputed[0] == df["target_pstate"]) & (recomputed[1] == df["pstate"])
    assert agree.sum() == len(df), df[~agree].head()


def test_the_iowait_boost_follows_the_kernel() -> None:
    # fio waits on its device: up to 5.0 an I/O wait sets the boost to 1.0 (each evaluation
    # then halves it); from 5.1 it grows from 1/8 by doubling, so only 1/8 .. 1 appear.
    old = decisions("intel_pstate:algorithm=load,kernel=4.19", "fio").dropna(subset=["busy_frac"])
    new = decisions("intel_pstate:algorithm=load,kernel=5.2", "fio").dropna(subset=["busy_frac"])
    old_levels = {fp(b) for b in old["iowait_boost"]} - {0}
    new_levels = {fp(b) for b in new["iowait_boost"]} - {0}
    assert FRAC in old_levels
    assert old_levels <= {FRAC >> k for k in range(9)}
    assert new_levels
    assert new_levels <= {FRAC >> k for k in range(4)}


@pytest.mark.parametrize("workload", ["kernbench:jobs=4", "periodic:threads=3,run_us=3000", "fio"])
def test_pid_decisions_recompute(workload: str) -> None:
    """pid_calc with the pstate_snb defaults (setpoint 97, p 20 %, i and d 0, deadband 0)."""
    df = decisions("intel_pstate:algorithm=pid,kernel=4.13", workload).dropna(subset=["core_busy"])
    assert len(df) > 20
    setpoint, p_gain = 97 * FRAC, (20 * FRAC) // 100
    agree = 0
    for _, row in df.iterrows():
        err = setpoint - fp(row["core_busy"])
        out = 0 if err == 0 else (((p_gain * err) >> 8) + (FRAC >> 1)) >> 8
        target = int(row["current_pstate"]) - out
        pstate = min(max(target, MIN_PSTATE), TURBO_PSTATE)
        agree += (out, target, pstate) == (row["pid_out"], row["target_pstate"], row["pstate"])
    assert agree == len(df)


@pytest.mark.parametrize("epp", [0, 128, 255])
def test_hwp_model_decisions_recompute(epp: int) -> None:
    """The modelled hardware (intel_pstate_hwp.rs): enough performance that the window's
    demand keeps the core at 0.9 * EPP/255 busy, within HWP min/max; EPP 0 the maximum."""
    r = dvfslab.simulate(
        "skylake-e3-1240v5",
        f"intel_pstate:algorithm=hwp,energy_performance_preference={epp}",
        "periodic:threads=2,run_us=3000",
        duration_s=1.0,
        seed=3,
        explain=True,
    )
    df = r.df_decisions().dropna(subset=["util_target"])
    assert len(df) > 10
    for _, row in df.iterrows():
        lo, hi = int(row["hwp_min"]), int(row["hwp_max"])
        assert row["util_target"] == pytest.approx(0.9 * epp / 255)
        want = hi
        if epp:
            want = min(max(math.ceil(row["demand_pstate"] / row["util_target"]), lo), hi)
        assert row["pstate"] == want
