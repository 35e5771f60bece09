"""Why did the CPU run at that frequency? The decision log through the API and the CLI."""

from __future__ import annotations

import pandas as pd
import pytest

import dvfslab
from dvfslab.platforms import describe_platform


def test_schedutil_decisions_follow_the_formula() -> None:
    r = dvfslab.simulate(
        "skylake-e3-1240v5",
        "schedutil:kernel=6.8",
        "periodic:threads=2,run_us=4000,period_us=12000",
        duration_s=0.5,
        explain=True,
    )
    df = r.df_decisions()
    assert len(df) > 10
    # ≥ 6.8, invariant: raw = cpuinfo.max · perf / capacity, perf = min(1.25 · util, capacity).
    expected_perf = (df["util"] + (df["util"] // 4)).clip(upper=df["capacity"])
    boosted = df["iowait_boost"] > df["util"]
    assert (df.loc[~boosted, "perf"] == expected_perf[~boosted]).all()
    raw = (df["ref_khz"] * df["perf"] // df["capacity"]).astype(int)
    held = df["held_busy"] == 1
    assert (df.loc[~held, "raw_khz"] == raw[~held]).all()
    assert (df["resolved_khz"] >= df["min_khz"]).all()
    assert (df["resolved_khz"] <= df["max_khz"]).all()
    # Skylake's package-wide clock runs the highest request, capped by the turbo bin.
    assert (df["hw_khz"] <= 3_900_000).all()


def test_decisions_need_explain() -> None:
    r = dvfslab.simulate("pixel6", "performance", "cpu-bound", duration_s=0.1)
    with pytest.raises(dvfslab.DvfsError, match="explain"):
        r.df_decisions()


def test_cli_explain_prints_and_writes(cli, tmp_path) -> None:
    args = ["run", "-p", "juno-r2", "-g", "schedutil", "-w", "periodic:threads=2"]
    args += ["--duration", "0.3"]
    shown = cli(*args, "--explain")
    assert shown.code == 0, shown.stderr
    assert "frequency decisions" in shown.stdout
    assert "resolved_mhz" in shown.stdout
    out = tmp_path / "decisions.csv"
    written = cli(*args, "--explain", str(out))
    assert written.code == 0, written.stderr
    df = pd.read_csv(out)
    assert {"time_s", "policy", "raw_khz", "resolved_khz", "hw_khz", "util"} <= set(df.columns)
    assert df["time_s"].is_monotonic_increasing


def test_schedutil_logs_only_the_updates_that_ask_for_a_new_frequency() -> None:
    # docs/governors.md: no row inside rate_limit_us, none that asks for the frequency
    # already asked for. Skylake has one policy per CPU, on intel_cpufreq: with no table,
    # cpufreq_driver_resolve_freq hands schedutil the raw kHz clamped to the limits, which is
    # what must differ from one row to the next (two rows may still round to one P-state).
    # From 6.14: before, intel_cpufreq is asked at every evaluation (tests/it: governors_schedutil).
    df = dvfslab.simulate(
        "skylake-e3-1240v5",
        "schedutil:kernel=6.14",
        "periodic:threads=2,run_us=4000,period_us=12000,jitter_pct=30",
        duration_s=0.5,
        explain=True,
    ).df_decisions()
    assert df["policy"].nunique() > 1
    assert df.groupby("policy").size().max() > 10
    for _, rows in df.groupby("policy"):
        later = rows.iloc[1:]
        asked = rows["raw_khz"].clip(lower=rows["min_khz"], upper=rows["max_khz"])
        assert (asked.diff().iloc[1:] != 0).all()
        gaps_us = rows["time_s"].diff().iloc[1:] * 1e6
        assert (gaps_us >= later["rate_limit_us"] - 1e-3).all()


@pytest.mark.parametrize("governor", ["performance", "powersave", "userspace"])
def test_fixed_governors_log_one_request_per_policy_at_the_start(governor) -> None:
    r = dvfslab.simulate("juno-r2", governor, "periodic:threads=4", duration_s=0.3, explain=True)
    df = r.df_decisions()
    policies = [p["policy"] for p in describe_platform("juno-r2")["policies"]]
    assert len(policies) == 2
    assert sorted(df["policy"]) == sorted(policies)
    assert (df["time_s"] == 0).all()
