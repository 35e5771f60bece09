"""Timelines recorded with timeline=True: DataFrames per signal and the Parquet export."""

from __future__ import annotations

import pandas as pd
import pyarrow.parquet as pq
import pytest

import dvfslab
from dvfslab import ConfigError, SimResult

SMALL = "skylake-e3-1240v5"
FRAMES = [
    ("df_cpus_frequency", "freq_khz"),
    ("df_cpus_util", "util_avg"),
    ("df_cpus_idle", "state"),
]


@pytest.fixture(scope="module")
def traced(periodic_jittered) -> SimResult:
    return dvfslab.simulate(SMALL, "performance", periodic_jittered, duration_s=0.5, timeline=True)


@pytest.mark.parametrize(("frame", "value"), FRAMES)
def test_timeline_frames_are_per_cpu_time_series(traced, frame, value):
    df = getattr(traced, frame)()
    assert list(df.columns) == ["time_s", "cpu", value]
    assert len(df) > 0
    assert df["time_s"].dtype == "float64"
    assert df["time_s"].between(0, traced.sim_time_s).all()
    assert set(df["cpu"]) <= {row["cpu"] for row in traced.per_cpu}
    for cpu, series in df.groupby("cpu")["time_s"]:
        assert series.is_monotonic_increasing, f"cpu {cpu}: time goes backwards"


def test_timeline_values_are_physical(traced, presets):
    freqs = set(traced.df_cpus_frequency()["freq_khz"])
    assert freqs <= presets.hardware_freqs_khz(SMALL)
    util = traced.df_cpus_util()["util_avg"]
    assert util.between(0, 1024).all()
    states = set(traced.df_cpus_idle()["state"])
    assert "C0" in states
    assert states <= {"C0"} | presets.idle_state_names(SMALL)


def test_timeline_util_stays_under_the_summarys_maximum(traced):
    peak = traced.df_cpus_util().groupby("cpu")["util_avg"].max()
    for row in traced.per_cpu:
        assert peak.get(row["cpu"], 0) <= row["util_avg_max"]


@pytest.mark.parametrize(("frame", "value"), FRAMES)
def test_one_cpu_frames_are_slices_of_the_all_cpu_frames(traced, frame, value):
    everything = getattr(traced, frame)()
    one = getattr(traced, frame.replace("df_cpus_", "df_cpu_"))(0)
    assert list(one.columns) == ["time_s", value]
    expected = everything[everything["cpu"] == 0].drop(columns="cpu").reset_index(drop=True)
    pd.testing.assert_frame_equal(one, expected)


def test_frames_are_the_callers_to_change(traced):
    frame = traced.df_cpus_frequency()
    frame.loc[:, "freq_khz"] = -1
    assert (traced.df_cpus_frequency()["freq_khz"] > 0).all()


def test_one_cpu_frame_of_a_cpu_that_does_not_exist(traced):
    with pytest.raises(ConfigError, match="cpu 99"):
        traced.df_cpu_frequency(99)


def test_recording_a_timeline_does_not_change_the_run(traced, periodic_jittered):
    plain = dvfslab.simulate(SMALL, "performance", periodic_jittered, duration_s=0.5)
    with_timeline, without = traced.to_dict(), plain.to_dict()
    for key in ("wall_time_s", "events"):
        with_timeline.pop(key)
        without.pop(key)
    assert with_timeline == without


def test_write_timeline_writes_one_long_table(traced, tmp_path):
    path = traced.write_timeline(tmp_path / "run.parquet")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.parquet"]

    table = pd.read_parquet(path)
    counts = table["signal"].value_counts().to_dict()
    assert counts == {
        "frequency": len(traced.df_cpus_frequency()),
        "util": len(traced.df_cpus_util()),
        "idle": len(traced.df_cpus_idle()),
    }
    frequency = table[table["signal"] == "frequency"]
    assert sorted(frequency["value"]) == sorted(traced.df_cpus_frequency()["freq_khz"])
    assert table["time_ns"].is_monotonic_increasing

    metadata = pq.read_schema(path).metadata
    assert metadata[b"dvfslab.result"].decode() == traced.to_json()


def test_write_timeline_replaces_an_existing_file(traced, tmp_path):
    path = tmp_path / "run.parquet"
    path.write_text("old contents")
    traced.write_timeline(path)
    assert len(pd.read_parquet(path)) > 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.parquet"]
