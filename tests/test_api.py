"""The Python facade: `simulate`, `SimResult`, `list_platforms`, `__version__`."""

from __future__ import annotations

import dataclasses
import importlib.metadata
import json

import pytest

import dvfslab
from dvfslab import DvfsError, Metric, SimResult

SMALL = "juno-r2"


@pytest.fixture(scope="module")
def result() -> SimResult:
    return dvfslab.simulate(SMALL, "performance", "cpu-bound:threads=2", duration_s=0.2, seed=3)


def test_list_platforms_partitions_each_platforms_cpus_into_policies(presets):
    platforms = dvfslab.list_platforms()
    assert [p["id"] for p in platforms] == sorted(presets.ids)
    for platform in platforms:
        cpus = sorted(cpu for policy in platform["policies"] for cpu in policy["cpus"])
        assert cpus == list(range(platform["cpus"])), platform["id"]
        for policy in platform["policies"]:
            assert policy["min_khz"] <= policy["base_khz"] <= policy["max_khz"]


def test_simulate_accepts_a_path_as_well_as_an_id(presets, result):
    by_path = dvfslab.simulate(
        presets.path(SMALL), "performance", "cpu-bound:threads=2", duration_s=0.2, seed=3
    )
    assert by_path.platform == result.platform
    assert by_path.energy_j == result.energy_j


def test_a_preset_that_extends_another_is_the_base_with_its_own_fields_over_it(tmp_path):
    base = json.loads(dvfslab.platforms.load_platform("kvm-guest-2cpu")[0])
    second = json.loads(dvfslab.platforms.load_platform("kvm-guest-2cpu-b")[0])
    assert "extends" not in second
    assert second["id"] == "kvm-guest-2cpu-b"
    assert second["clusters"] == base["clusters"]
    assert second["vcpu_wake"]["ipi_us"]["value"] < base["vcpu_wake"]["ipi_us"]["value"]
    # Its notes follow the base's.
    assert second["notes"][: len(base["notes"])] == base["notes"]
    assert len(second["notes"]) > len(base["notes"])
    # An object is merged key by key: a user's file that changes the tick keeps the driver.
    mine = tmp_path / "mine.json"
    mine.write_text(
        json.dumps({"extends": "skylake-e3-1240v5", "id": "mine", "defaults": {"hz": 1000}})
    )
    merged = json.loads(dvfslab.platforms.load_platform(mine)[0])
    assert merged["defaults"] == {"driver": "intel_cpufreq", "hz": 1000}
    run = dvfslab.simulate(mine, "performance", "cpu-bound:threads=1", duration_s=0.05)
    assert run.platform == "mine"
    # A null removes the base's key (a JSON merge patch): a guest that packs vCPUs by the other
    # form of the rule gives that form and clears the base's fields.
    mine.write_text(
        json.dumps(
            {
                "extends": "kvm-guest-2cpu",
                "id": "mine",
                "vcpu_pack": {"margin_pct": 15.0, "flags": None, "util_limit_pct": None},
            }
        )
    )
    merged = json.loads(dvfslab.platforms.load_platform(mine)[0])
    assert merged["vcpu_pack"] == {"margin_pct": 15.0}
    assert dvfslab.platforms.describe_platform(mine)["id"] == "mine"
    mine.write_text(json.dumps({"extends": "nope", "id": "mine"}))
    with pytest.raises(
        dvfslab.ConfigError, match=r"mine\.json: extends: expected a shipped preset"
    ):
        dvfslab.platforms.load_platform(mine)


def test_result_attributes_mirror_the_result_json(result):
    summary = json.loads(result.to_json())
    assert result.to_dict() == summary
    assert (result.platform, result.governor, result.workload, result.seed) == (
        SMALL,
        "performance",
        "cpu-bound:threads=2",
        3,
    )
    assert result.metric == Metric(**summary["metric"])
    assert result.energy_j == summary["energy_j"]
    assert result.avg_package_w == summary["avg_package_w"]
    assert result.packages == summary["packages"]
    assert result.sim_time_s == pytest.approx(0.2)
    assert result.events == summary["events"]
    assert result.per_cpu == summary["per_cpu"]
    assert not result.has_timeline


def test_metric_is_frozen(result):
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.metric.value = 0.0  # type: ignore[misc]


def test_a_saved_result_loads_back(result):
    again = SimResult(result.to_json())
    assert again.to_dict() == result.to_dict()
    assert again.metric == result.metric


def test_summary_frame_has_one_row_per_cpu(result):
    frame = result.df_cpus_summary()
    assert list(frame["cpu"]) == list(range(6))
    assert {"busy_pct", "avg_freq_khz", "util_avg_max", "energy_j"} <= set(frame.columns)
    assert frame["energy_j"].sum() == pytest.approx(sum(r["energy_j"] for r in result.per_cpu))


def test_residency_frames_match_the_per_cpu_dicts(result):
    in_freq = result.df_cpus_time_in_freq()
    assert list(in_freq.columns) == ["cpu", "freq_khz", "time_s"]
    for row in result.per_cpu:
        mine = in_freq[in_freq["cpu"] == row["cpu"]]
        assert dict(zip(mine["freq_khz"].map(str), mine["time_s"])) == row["time_in_freq"]

    in_idle = result.df_cpus_time_in_idle_state()
    assert list(in_idle.columns) == ["cpu", "state", "time_s"]
    assert in_idle["time_s"].sum() == pytest.approx(
        sum(sum(row["time_in_idle_state"].values()) for row in result.per_cpu)
    )


@pytest.mark.parametrize("frame", ["df_cpus_frequency", "df_cpus_util", "df_cpus_idle"])
def test_timelines_need_timeline_true(result, frame):
    with pytest.raises(DvfsError, match="timeline=True"):
        getattr(result, frame)()


def test_write_timeline_needs_timeline_true(result, tmp_path):
    with pytest.raises(DvfsError, match="timeline=True"):
        result.write_timeline(tmp_path / "t.parquet")
    assert list(tmp_path.iterdir()) == []


def test_version_is_the_installed_distributions():
    assert dvfslab.__version__ == importlib.metadata.version("dvfslab")
