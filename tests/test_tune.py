"""`dvfslab tune`: a multi-objective search of a governor's tunables that resumes where it
stopped."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from dvfslab import ConfigError
from dvfslab.cli.main import main
from dvfslab.tune import Categorical, Param, TrialFailed, parse_param, scores, trial_spec

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

    # The first two were not run again: the same results (whether a trial is on the front
    # depends on the trials found since).
    def result(t: dict) -> dict:
        return {k: v for k, v in t.items() if k != "pareto"}

    assert [result(t) for t in again["trials"][:2]] == [result(t) for t in first["trials"]]
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

    def dies_in_the_second_trial(self, specs):
        calls.append(specs)
        if len(calls) == 2:
            raise KeyboardInterrupt  # the search is killed mid-trial
        return real(self, specs)

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
    states = {t.number: t.state for t in study.trials}
    assert states[1] == optuna.trial.TrialState.FAIL  # the one killed, not RUNNING forever
    assert optuna.trial.TrialState.RUNNING not in states.values()


FAST = [*SEARCH[: SEARCH.index("--iterations")], "--nominal", "--duration", "0.2", "--quiet"]
FAST[FAST.index("periodic:threads=4")] = "periodic:threads=2"


def search(out, *extra):
    """A fast search's --json summary."""
    import contextlib
    import io

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main([*FAST, "--iterations", "1", "--out", str(out), "--json", *extra]) == 0
    return json.loads(printed.getvalue())


def test_a_zero_metric_is_a_failed_trial_not_a_crash():
    import pandas as pd

    rows = [("default", 1, 100.0, 10.0, 2.0), ("trial", 1, 0.0, 10.0, 2.0)]
    df = pd.DataFrame(
        rows, columns=["config", "iteration", "metric_value", "energy_j", "avg_package_w"]
    )
    df["benchmark"], df["param"], df["better"] = "b", "", "higher"
    with pytest.raises(TrialFailed, match=r"metric_value = 0\.0 for the trial"):
        scores(df)


def test_a_trial_whose_runs_fail_is_marked_failed_and_the_search_goes_on(tmp_path):
    module = tmp_path / "failing.py"
    module.write_text(
        "import dvfslab\n"
        "class G(dvfslab.Governor):\n"
        "    mode = 'ok'\n"
        "    def update(self, policy):\n"
        "        if self.mode == 'raise':\n"
        "            raise RuntimeError('boom')\n"
        "        return policy.max_khz\n"
    )
    args = [a if a != "schedutil" else f"python:{module}:G" for a in FAST]
    args[args.index("rate_limit_us=100..20000:log")] = "mode=ok,raise"
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main([*args, "--iterations", "1", "--out", str(tmp_path / "f"), "--sampler", "grid"])
    assert code == 0
    text = out.getvalue()
    assert "1 trials (1 failed)" in text
    assert "failed: " in text
    assert "raised" in text


def test_a_trial_left_running_by_a_kill_is_marked_failed_on_resume(tmp_path):
    import optuna

    out = tmp_path / "s"
    search(out, "--trials", "1")
    storage = f"sqlite:///{out / 'study.db'}"
    study = optuna.load_study(study_name="dvfslab-tune", storage=storage)
    study.ask()  # as a search killed by SIGKILL leaves its trial
    got = search(out, "--trials", "2")
    assert [t["trial"] for t in got["trials"]] == [0, 2]
    assert got["failed"][0]["trial"] == 1
    assert "killed" in got["failed"][0]["error"]
    states = [t.state for t in optuna.load_study(study_name="dvfslab-tune", storage=storage).trials]
    assert optuna.trial.TrialState.RUNNING not in states


def test_a_resumed_search_proposes_what_the_uninterrupted_one_would(tmp_path):
    whole = search(tmp_path / "whole", "--trials", "4")
    search(tmp_path / "parts", "--trials", "2")
    resumed = search(tmp_path / "parts", "--trials", "4")
    values = [t["params"]["rate_limit_us"] for t in resumed["trials"]]
    assert len(set(values)) == 4  # never the first values again
    assert [t["params"] for t in resumed["trials"]] == [t["params"] for t in whole["trials"]]


def test_parallel_trials_give_the_sequential_search(tmp_path):
    sequential = search(tmp_path / "one", "--trials", "4")
    parallel = search(tmp_path / "two", "--trials", "4", "--jobs", "2")
    assert parallel["trials"] == sequential["trials"]
    import optuna

    storage = f"sqlite:///{tmp_path / 'two' / 'study.db'}"
    t = optuna.load_study(study_name="dvfslab-tune", storage=storage).trials
    # Two trials at a time: the second started before the first finished.
    assert t[1].datetime_start < t[0].datetime_complete
    assert t[3].datetime_start < t[2].datetime_complete


@pytest.mark.parametrize("sampler", ["nsga2", "random"])
def test_a_sampler_is_chosen(tmp_path, sampler):
    got = search(tmp_path / sampler, "--trials", "2", "--sampler", sampler)
    assert len(got["trials"]) == 2


def test_the_grid_sampler_runs_every_combination_of_ranges_and_lists(tmp_path):
    args = ["--param", "fits=80pct,tick", "--sampler", "grid", "--grid-points", "2"]
    got = search(tmp_path / "g", "--trials", "10", *args)
    assert sorted((t["params"]["rate_limit_us"], t["params"]["fits"]) for t in got["trials"]) == [
        (100, "80pct"),
        (100, "tick"),
        (20000, "80pct"),
        (20000, "tick"),
    ]
    assert {t["spec"] for t in got["trials"]} >= {"schedutil:rate_limit_us=100,fits=tick"}


def test_a_list_of_values_is_a_categorical_param():
    assert parse_param("driver=intel_cpufreq,acpi-cpufreq", set()) == Categorical(
        "driver", ("intel_cpufreq", "acpi-cpufreq")
    )
    with pytest.raises(ConfigError, match="each value once"):
        parse_param("fits=tick,tick", set())
    assert Param("r", 100, 10000, True, True).grid(3) == [100, 1000, 10000]
    spec = trial_spec("schedutil", {"fits": "tick"}, [Categorical("fits", ("80pct", "tick"))])
    assert spec == "schedutil:fits=tick"


TWOSTEP = Path(__file__).resolve().parent / "data" / "kernel-governors" / "cpufreq_twostep.c"


def test_a_kernel_governor_file_is_tuned_through_its_sysfs_tunables(tmp_path, capsys):
    # The file's one tunable, up_util, is found by building it; its values are whole numbers
    # (a sysfs store parses an integer), and each trial's spec writes one through the store.
    governor = f"kernel:{TWOSTEP},kernel=6.1"
    args = ["tune", "-p", "pixel6", "-g", governor, "--param", "up_util=100..1024"]
    args += ["-w", "periodic:threads=4", "--iterations", "1", "--duration", "0.3", "--quiet"]
    assert main([*args, "--trials", "3", "--out", str(tmp_path / "s"), "--json"]) == 0
    trials = json.loads(capsys.readouterr().out)["trials"]
    assert len(trials) == 3
    for t in trials:
        value = t["params"]["up_util"]
        assert isinstance(value, int), t
        assert 100 <= value <= 1024, t
        assert t["spec"] == f"{governor},up_util={value}"
    # Different thresholds give different runs: the tunable reached the file.
    assert len({(t["perf"], t["energy"]) for t in trials}) > 1


def test_a_param_the_kernel_governor_file_lacks_is_refused_before_any_trial(tmp_path, capsys):
    governor = f"kernel:{TWOSTEP},kernel=6.1"
    args = ["tune", "-p", "pixel6", "-g", governor, "--param", "down_util=1..10"]
    args += ["-w", "periodic", "--trials", "1", "--out", str(tmp_path / "s"), "--quiet"]
    assert main(args) == 1
    refused = r"--param: .*down_util: not a tunable .*its sysfs tunables: up_util"
    assert re.search(refused, capsys.readouterr().err)
    assert not (tmp_path / "s").exists()
