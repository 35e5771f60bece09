"""dvfslab.validate.leave_one_out: each machine scored with the constants fitted without it."""

from __future__ import annotations

import json

import pytest

from dvfslab import ConfigError
from dvfslab.campaign import campaign_from_dict, run_campaign
from dvfslab.campaign.store import load_results
from dvfslab.validate.leave_one_out import _best_value, cross_validate, fold_campaign

SKYLAKE, HASWELL = "skylake-e3-1240v5", "haswell-e5-2670v3-2s"
UNCORE = "/package_power/p_uncore_active_w"


def _doc(**cross_validate):
    return {
        "name": "intel-invariance",  # scored against its published cells
        "platforms": [SKYLAKE, HASWELL],
        "configs": {
            "baseline-schedutil-noninv": "schedutil:invariant=0,kernel=5.2,driver=intel_cpufreq",
            "schedutil-inv-4c": "schedutil:invariant=1,freq_max=4c,kernel=5.2,driver=intel_cpufreq",
        },
        "baseline": "baseline-schedutil-noninv",
        "benchmarks": {
            "pgbench-ro": {"workload": "pgbench:rw=0", "sweep": {"clients": [4]}},
            "gitsource": {"workload": "gitsource:commands=20"},
        },
        "duration_s": 0.05,
        "iterations": 2,
        "nominal": True,
        "cross_validate": cross_validate,
    }


def test_a_fold_takes_the_values_before_the_fit_and_the_refitted_knobs():
    campaign = campaign_from_dict(_doc(fitted_on_one={SKYLAKE: {UNCORE: 8.0}}), source="test")
    fold = fold_campaign(campaign, SKYLAKE, {UNCORE: 8.0, "pgbench:client_us": 8.0})
    assert [p.name for p in fold.platforms] == [SKYLAKE]
    preset = json.loads(fold.platforms[0].preset_json)
    uncore = preset["package_power"]["p_uncore_active_w"]
    assert (uncore["value"] if isinstance(uncore, dict) else uncore) == 8.0
    workloads = {r.benchmark: r.workload for r in fold.runs()}
    assert "client_us=8" in workloads["pgbench-ro"]
    assert "client_us" not in workloads["gitsource"]


def test_in_sample_runs_take_the_campaigns_own_value_of_a_knob_fitted_on_all():
    campaign = campaign_from_dict(_doc(fitted_on_all={"pgbench:client_us": [5, 8]}), source="test")
    workloads = {r.benchmark: r.workload for r in campaign.runs()}
    assert workloads["pgbench-ro"] == "pgbench:rw=0,client_us=5,clients=4"
    assert "client_us" not in workloads["gitsource"]
    # a spec that sets the knob keeps its own value
    doc = _doc(fitted_on_all={"pgbench:client_us": [5, 8]})
    doc["benchmarks"]["pgbench-ro"]["workload"] = "pgbench:rw=0,client_us=12"
    workloads = {r.benchmark: r.workload for r in campaign_from_dict(doc, source="test").runs()}
    assert "client_us=12" in workloads["pgbench-ro"]
    assert "client_us=5" not in workloads["pgbench-ro"]


def test_a_refit_chooses_by_the_other_machines_only():
    by_value = {"a": {3.0: 10, 8.0: 0}, "b": {3.0: 1, 8.0: 2}, "c": {3.0: 1, 8.0: 2}}
    assert _best_value(by_value, "a") == 8.0
    assert _best_value(by_value, "b") == 3.0
    # ties go to the value listed first (the campaign's own)
    assert _best_value({"a": {5.0: 1, 3.0: 1}, "b": {}}, "b") == 5.0


def test_cross_validation_scores_each_machine_in_its_own_fold(tmp_path):
    campaign = campaign_from_dict(
        _doc(
            fitted_on_one={SKYLAKE: {UNCORE: 8.0}},
            fitted_on_all={"pgbench:client_us": [3, 8]},
        ),
        source="test",
    )

    def run(c, store):
        run_campaign(c, store, jobs=1, progress=False)

    result = cross_validate(campaign, tmp_path, run)
    assert [f["platform"] for f in result["folds"]] == [SKYLAKE, HASWELL]
    skylake, haswell = result["folds"]
    assert skylake["constants"][UNCORE] == 8.0
    assert UNCORE not in haswell["constants"]
    for fold in result["folds"]:
        assert fold["constants"]["pgbench:client_us"] in (3.0, 8.0)
        stored = load_results(tmp_path / fold["platform"])
        assert set(stored["platform"]) == {fold["platform"]}
        pgbench = stored[stored["benchmark"] == "pgbench-ro"]["workload"]
        assert all("client_us=" in w for w in pgbench)
    # the pooled scores count every fold's cells once
    for table in ("ratios", "power"):
        assert result["judged"][table] == sum(f["judged"][table] for f in result["folds"])
        assert result["judged"][table] > 0
    assert 0 <= result["power_within_25pct"] <= 1


def test_a_cross_validate_table_naming_what_does_not_exist_is_refused():
    with pytest.raises(ConfigError, match=r"cross_validate\.fitted_on_one\.pixel6: 'pixel6'"):
        campaign_from_dict(_doc(fitted_on_one={"pixel6": {UNCORE: 1.0}}), source="test")
    with pytest.raises(ConfigError, match="the preset has no number at /package_power/nope"):
        campaign_from_dict(
            _doc(fitted_on_one={SKYLAKE: {"/package_power/nope": 1.0}}), source="test"
        )
    with pytest.raises(ConfigError, match="pgbench has no knob 'nope'"):
        campaign_from_dict(_doc(fitted_on_all={"pgbench:nope": [1, 2]}), source="test")
    with pytest.raises(ConfigError, match="expected 'workload:knob'"):
        campaign_from_dict(_doc(fitted_on_all={"tbench:clients": [1, 2]}), source="test")
    with pytest.raises(ConfigError, match="fitted_on_all"):
        campaign_from_dict(_doc(fitted_on_all={"pgbench:client_us": [3]}), source="test")
