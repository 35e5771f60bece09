"""`dvfslab tune`: a multi-objective search of a governor's tunables that resumes where it
stopped."""

from __future__ import annotations

import json

import pytest

from dvfslab import ConfigError
from dvfslab.cli.main import main
from dvfslab.tune import Param, parse_param, scores, trial_spec

SEARCH = [
    "tune",
    "-p",
    "pixel6",
    "-g",
    "schedutil",
    "--param",
    "rate_limit_us=100..20000:log",
    "-w",
    "periodic:threads=4",
    "--iterations",
    "2",
    "--duration",
    "0.3",
    "--quiet",
]


def test_a_search_reports_its_front_and_resumes_where_it_stopped(tmp_path, capsys):
    out = tmp_path / "search"
    assert main([*SEARCH, "--trials", "2", "--out", str(out), "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert len(first["trials"]) == 2
    runs = sorted((out / "runs" / "runs").rglob("*.parquet"))
    # 2 iterations of the default and of each trial.
    assert len(runs) == 6
    assert (
        main(
            [
                *SEARCH,
                "--trials",
                "3",
                "--out",
                str(out),
                "--json",
                "--html",
                str(tmp_path / "t.html"),
            ]
        )
        == 0
    )
    again = json.loads(capsys.readouterr().out)
    assert [t["trial"] for t in again["trials"]] == [0, 1, 2]
    assert again["trials"][:2] == first["trials"]  # the first two were not run again
    # A trial that repeats an earlier spec reuses its runs: 2 iterations per distinct spec.
    specs = {t["spec"] for t in again["trials"]}
    assert len(sorted((out / "runs" / "runs").rglob("*.parquet"))) == 2 * (1 + len(specs))
    front = again["pareto"]
    assert front
    for t in front:
        # No other trial is at least as good on both objectives and better on one.
        for u in again["trials"]:
            assert not (
                u["perf"] >= t["perf"]
                and u["energy"] <= t["energy"]
                and (u["perf"] > t["perf"] or u["energy"] < t["energy"])
            )
        assert 100 <= t["params"]["rate_limit_us"] <= 20000
        assert t["spec"] == f"schedutil:rate_limit_us={t['params']['rate_limit_us']}"
    html = (tmp_path / "t.html").read_text()
    assert "<svg" in html
    assert "Pareto front" in html


def test_another_search_in_the_same_directory_is_refused(tmp_path, capsys):
    out = tmp_path / "search"
    assert main([*SEARCH, "--trials", "1", "--out", str(out)]) == 0
    other = [a if a != "rate_limit_us=100..20000:log" else "rate_limit_us=100..500" for a in SEARCH]
    assert main([*other, "--trials", "1", "--out", str(out)]) != 0
    assert "holds another search" in capsys.readouterr().err


def test_params_and_specs():
    assert parse_param("rate_limit_us=100..20000:log", {"rate_limit_us"}) == Param(
        "rate_limit_us", 100.0, 20000.0, True, True
    )
    for bad, message in [
        ("rate_limit_us=100", "expected NAME=LOW..HIGH"),
        ("x=5..1", "LOW < HIGH"),
        ("x=0..1:log", "a log scale needs LOW > 0"),
    ]:
        with pytest.raises(ConfigError, match=message):
            parse_param(bad, set())
    params = [
        Param("up_threshold", 50, 95, False, True),
        Param("response_time_pct", 1, 200, False, False),
    ]
    spec = trial_spec("ondemand", {"up_threshold": 80.4, "response_time_pct": 33.3333333}, params)
    assert spec == "ondemand:up_threshold=80,response_time_pct=33.3333"
    assert trial_spec("schedutil:kernel=6.8", {"up_threshold": 80}, params[:1]).endswith(
        ",up_threshold=80"
    )


def test_an_objective_is_the_least_favourable_iteration():
    import pandas as pd

    rows = []
    for it, (perf, energy) in enumerate([(1.10, 0.9), (0.95, 1.2)], start=1):
        rows.append(("default", it, 100.0, 10.0, 2.0))
        rows.append(("trial", it, 100.0 * perf, 10.0 * energy, 2.0))
    df = pd.DataFrame(
        rows, columns=["config", "iteration", "metric_value", "energy_j", "avg_package_w"]
    )
    df["benchmark"], df["param"], df["better"] = "b", "", "higher"
    got = scores(df)
    assert got["perf"] == pytest.approx(0.95)  # the worse of 1.10 and 0.95
    assert got["energy"] == pytest.approx(1.2)  # the worse of 0.9 and 1.2


def test_a_killed_search_resumes_with_the_runs_it_finished(tmp_path, monkeypatch):
    from dvfslab import tune as tune_module

    out = tmp_path / "search"
    real = tune_module._Evaluator.__call__
    calls = []

    def dies_in_the_second_trial(self, spec, progress):
        calls.append(spec)
        if len(calls) == 2:
            raise KeyboardInterrupt  # the search is killed mid-trial
        return real(self, spec, progress)

    monkeypatch.setattr(tune_module._Evaluator, "__call__", dies_in_the_second_trial)
    assert main([*SEARCH, "--trials", "3", "--out", str(out)]) != 0  # interrupted
    stored = len(list((out / "runs" / "runs").rglob("*.parquet")))
    assert stored == 4  # the default's and the first trial's 2 iterations each
    monkeypatch.setattr(tune_module._Evaluator, "__call__", real)
    assert main([*SEARCH, "--trials", "3", "--out", str(out), "--json"]) == 0
    import optuna

    study = optuna.load_study(study_name="dvfslab-tune", storage=f"sqlite:///{out / 'study.db'}")
    complete = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    assert len(complete) == 3
    assert complete[0].number == 0  # the trial finished before the kill is kept, not rerun
