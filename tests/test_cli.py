"""The `dvfslab` command end to end: listings, `run --json`, `--timeline`, `bench`, help."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest

import dvfslab
from dvfslab import ConfigError
from dvfslab.platforms import describe_platform

SMALL = "skylake-e3-1240v5"
RESULT_KEYS = {
    "schema",
    "platform",
    "governor",
    "workload",
    "seed",
    "metric",
    "energy_j",
    "avg_package_w",
    "packages",
    "sim_time_s",
    "wall_time_s",
    "events",
    "per_cpu",
}
METRIC_KEYS = {"name", "value", "unit", "better"}
PACKAGE_KEYS = {
    "package",
    "energy_j",
    "avg_w",
    "rapl_energy_j",
    "uncore_energy_j",
    "idle_s",
    "uncore_clock_s",
}
PER_CPU_KEYS = {
    "cpu",
    "busy_pct",
    "avg_freq_khz",
    "util_avg_max",
    "energy_j",
    "time_in_freq",
    "time_in_idle_state",
}
TIMELINE_COLUMNS = ["time_ns", "time_s", "cpu", "signal", "value", "state"]


def cpu_count(platform_id: str) -> int:
    return next(p["cpus"] for p in dvfslab.list_platforms() if p["id"] == platform_id)


def test_platforms_lists_every_shipped_preset(cli, presets):
    run = cli("platforms")
    assert run.code == 0, run.stderr
    listed = {line.split()[0] for line in run.stdout.splitlines()[1:] if line.strip()}
    assert listed == set(presets.ids)


def test_platforms_json_describes_every_preset(cli, presets):
    run = cli("platforms", "--json")
    assert run.code == 0, run.stderr
    platforms = json.loads(run.stdout)
    assert sorted(p["id"] for p in platforms) == sorted(presets.ids)
    assert all(p["cpus"] > 0 and p["description"] for p in platforms)


def test_platforms_name_describes_one_preset(cli):
    human = cli("platforms", "pixel6")
    assert human.code == 0, human.stderr
    assert human.stdout.startswith("pixel6: ")
    assert "cpufreq policies" in human.stdout

    as_json = cli("platforms", "pixel6", "--json")
    assert as_json.code == 0, as_json.stderr
    info = json.loads(as_json.stdout)
    assert (info["id"], info["cpus"]) == ("pixel6", 8)


def test_platforms_name_shows_the_idle_states_and_their_measured_exits(cli):
    human = cli("platforms", "epyc7742-2s")
    assert human.code == 0, human.stderr
    lines = human.stdout.splitlines()
    rows = {line.split()[1]: line.split()[2:] for line in lines if line.startswith("core ")}
    # CC6: the _CST's 400 us for menu and with the package asleep, 22.5 us measured with it awake.
    assert rows["C2"][:4] == ["400", "400", "22.5", "800"]
    assert rows["C1"][:3] == ["1", "1", "1"]  # no measurement: the table's exit either way

    # The Intel presets pay a stated share of intel_idle's exit latency: C6's 85 us is
    # 63.8 us with the package asleep and 44.2 us with it awake.
    intel = cli("platforms", "skylake-e3-1240v5")
    assert intel.code == 0, intel.stderr
    intel_rows = {
        line.split()[1]: line.split()[2:]
        for line in intel.stdout.splitlines()
        if line.startswith("core ")
    }
    assert intel_rows["C6"][:3] == ["85", "63.8", "44.2"]

    info = json.loads(cli("platforms", "epyc7742-2s", "--json").stdout)
    c2 = info["clusters"][0]["idle_states"][-1]
    assert (c2["name"], c2["exit_latency_pkg_awake_us"], c2["power"]) == ("C2", 22.5, "power_gated")


def test_platforms_name_lists_the_declared_constants(cli):
    info = json.loads(cli("platforms", "skylake-e3-1240v5", "--json").stdout)
    declared = {c["path"]: c for c in info["uncertain"]}
    c_eff = declared["/clusters/0/power/c_eff_nf"]
    assert (c_eff["value"], c_eff["integer"]) == (2.119, False)
    assert c_eff["range"][0] < 2.119 < c_eff["range"][1]
    assert c_eff["source"]
    assert declared["/clusters/0/frequency/transition_latency_ns/acpi-cpufreq"]["integer"] is True

    human = cli("platforms", "skylake-e3-1240v5")
    assert human.code == 0, human.stderr
    text = human.stdout.split("Uncertain constants", 1)[1]
    row = next(line for line in text.splitlines() if line.startswith("/clusters/0/power/c_eff_nf "))
    assert row.split()[1:3] == ["2.119", "1.9071..2.3309"]
    assert len(text.strip().splitlines()) == len(info["uncertain"]) + 2  # title and header


def test_a_malformed_declared_constant_names_the_file_and_its_path(cli, presets, tmp_path):
    def unsourced(doc):
        doc["clusters"][0]["power"]["c_eff_nf"] = {"value": 2.119, "range": [1.9, 2.3]}

    path = presets.write_edited("skylake-e3-1240v5", tmp_path, unsourced)
    with pytest.raises(ConfigError, match=r"-edited\.json: /clusters/0/power/c_eff_nf: \"source\""):
        describe_platform(path)
    run = cli("platforms", str(path))
    assert run.code != 0
    assert str(path) in run.stderr
    assert "/clusters/0/power/c_eff_nf" in run.stderr


def test_governors_json_lists_the_generic_governors_with_their_tunables(cli):
    run = cli("governors", "--json")
    assert run.code == 0, run.stderr
    listing = json.loads(run.stdout)
    governors = {g["name"]: g for g in listing["governors"]}
    assert {"performance", "powersave", "userspace"} <= governors.keys()
    for governor in governors.values():
        assert governor["description"]
        for tunable in governor["tunables"]:
            assert {"name", "unit", "default", "description"} <= tunable.keys()
    assert "scaling_setspeed" in {t["name"] for t in governors["userspace"]["tunables"]}
    # The settings every governor spec accepts come beside them, described the same way.
    settings = {t["name"]: t for t in listing["system_settings"]}
    assert "hz" in settings
    assert {"unit", "default", "description"} <= settings["hz"].keys()


def test_governors_human_view_shows_tunables(cli):
    run = cli("governors")
    assert run.code == 0, run.stderr
    assert "userspace" in run.stdout
    assert "scaling_setspeed" in run.stdout


def test_workloads_json_lists_metrics_and_knobs(cli):
    run = cli("workloads", "--json")
    assert run.code == 0, run.stderr
    listing = json.loads(run.stdout)
    workloads = {w["name"]: w for w in listing["workloads"]}
    assert {"cpu-bound", "periodic"} <= workloads.keys()
    for workload in workloads.values():
        assert workload["better"] in ("higher", "lower")
        assert workload["metric"]
        assert workload["unit"] is not None
    knobs = {k["name"] for k in workloads["periodic"]["knobs"]}
    assert {"threads", "run_us", "period_us", "jitter_pct"} <= knobs
    # The knobs every workload accepts are listed once, not in each workload's own list.
    common = {k["name"] for k in listing["common_knobs"]}
    assert {"warmup_ms", "kthread_hz", "kthread_us"} <= common
    assert not common & knobs


def test_workloads_lists_the_knobs_every_workload_accepts(cli):
    run = cli("workloads")
    assert run.code == 0, run.stderr
    common = run.stdout.split("every workload spec also accepts these knobs:")[1]
    for knob in ("warmup_ms", "kthread_hz", "kthread_us"):
        assert knob in common


def test_run_json_prints_the_documented_result(cli):
    run = cli(
        "run",
        "-p",
        SMALL,
        "-g",
        "performance",
        "-w",
        "cpu-bound:threads=2",
        "--duration",
        "0.2",
        "--json",
    )
    assert run.code == 0, run.stderr
    assert run.stdout.count("\n") == 1, "--json prints exactly one JSON object on one line"
    result = json.loads(run.stdout)

    assert not RESULT_KEYS - set(result), "missing keys"
    assert result["schema"] == "dvfslab-run/1"
    assert (result["platform"], result["governor"], result["seed"]) == (SMALL, "performance", 0)
    assert result["workload"] == "cpu-bound:threads=2"
    assert set(result["metric"]) == METRIC_KEYS
    assert result["metric"]["better"] in ("higher", "lower")
    assert result["sim_time_s"] == pytest.approx(0.2)
    assert result["events"] > 0
    assert len(result["packages"]) == 1
    assert not PACKAGE_KEYS - set(result["packages"][0]), "missing keys"
    assert len(result["per_cpu"]) == cpu_count(SMALL)
    assert [row["cpu"] for row in result["per_cpu"]] == list(range(cpu_count(SMALL)))
    for row in result["per_cpu"]:
        assert not PER_CPU_KEYS - set(row), "missing keys"
        assert 0 <= row["busy_pct"] <= 100


def test_run_prints_a_readable_summary(cli):
    run = cli(
        "run", "-p", SMALL, "-g", "powersave", "-w", "cpu-bound:threads=1", "--duration", "0.2"
    )
    assert run.code == 0, run.stderr
    assert "is better" in run.stdout
    assert "avg package power" in run.stdout
    assert "package 0" in run.stdout
    per_cpu_rows = [line for line in run.stdout.splitlines() if line.split()[:1] == ["7"]]
    assert per_cpu_rows, "the per-CPU table has a row for the last CPU"


def test_run_timeline_writes_a_parquet_file(cli, tmp_path):
    out = tmp_path / "out.parquet"
    run = cli(
        "run",
        "-p",
        SMALL,
        "-g",
        "performance",
        "-w",
        "cpu-bound:threads=2",
        "--duration",
        "0.2",
        "--timeline",
        str(out),
        "--json",
    )
    assert run.code == 0, run.stderr
    json.loads(run.stdout)  # the JSON is still the only thing on stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.parquet"], "no temp file left"

    table = pd.read_parquet(out)
    assert list(table.columns) == TIMELINE_COLUMNS
    assert set(table["signal"]) == {"frequency", "util", "idle"}
    idle = table["signal"] == "idle"
    assert table.loc[idle, "state"].notna().all()
    assert table.loc[~idle, "state"].isna().all()
    assert table.loc[~idle, "value"].notna().all()
    assert table["time_ns"].is_monotonic_increasing
    assert (table["time_s"] == table["time_ns"] / 1e9).all()
    assert set(table["cpu"]) <= set(range(cpu_count(SMALL)))


def test_run_timeline_writes_csv_by_its_suffix(cli, tmp_path):
    args = ["run", "-p", SMALL, "-g", "schedutil", "-w", "periodic:threads=2", "--duration", "0.2"]
    run = cli(*args, "--timeline", str(tmp_path / "out.csv"), "--json")
    assert run.code == 0, run.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.csv"], "no temp file left"
    table = pd.read_csv(tmp_path / "out.csv")
    assert list(table.columns) == TIMELINE_COLUMNS
    # The same rows as the Parquet file of the same run.
    parquet = cli(*args, "--timeline", str(tmp_path / "out.parquet"))
    assert parquet.code == 0, parquet.stderr
    expected = pd.read_parquet(tmp_path / "out.parquet")
    pd.testing.assert_frame_equal(table, expected, check_dtype=False)


@pytest.mark.parametrize("name", ["out.txt", "out", "out.json"])
def test_run_timeline_refuses_a_format_it_does_not_write(cli, tmp_path, name):
    args = ["run", "-p", SMALL, "-g", "performance", "-w", "cpu-bound", "--duration", "0.1"]
    run = cli(*args, "--timeline", name, cwd=tmp_path)
    assert run.code == 1
    assert run.stderr == f"error: --timeline {name}: expected a .parquet or .csv file\n"
    assert list(tmp_path.iterdir()) == []


def test_bench_reports_speed_for_every_scenario(cli):
    run = cli("bench", "--seconds", "0.02", "--json")
    assert run.code == 0, run.stderr
    benches = json.loads(run.stdout)
    names = [b["scenario"] for b in benches]
    assert names == [
        "periodic",
        "server",
        "database",
        "epyc-loaded",
        "epyc-server",
        "python-governor",
    ]
    expected = {
        "scenario",
        "setup",
        "events",
        "sim_time_s",
        "wall_time_s",
        "events_per_s",
        "sim_s_per_wall_s",
        "sim_cpu_s_per_wall_s",
        "goal",
        "goal_unit",
    }
    for bench in benches:
        assert expected <= bench.keys()
        assert bench["sim_time_s"] == pytest.approx(0.02, rel=0.01)
        assert bench["events"] > 0
        assert bench["events_per_s"] > 0
        assert bench["sim_s_per_wall_s"] == pytest.approx(0.02 / bench["wall_time_s"], rel=0.01)
    # 48 policies asking every 1 ms: at 1..19 ms (the run ends at 20 ms).
    assert benches[5]["decisions"] == 48 * 19
    assert benches[5]["decisions_per_s"] > 0
    assert "tbench:clients=320" in benches[1]["setup"]
    assert "pgbench:rw=0" in benches[2]["setup"]
    # The large machine's rows, with their goals in simulated seconds per wall second.
    assert "epyc7742-2s, schedutil, cpu-bound:threads=256" in benches[3]["setup"]
    assert "tbench:clients=256" in benches[4]["setup"]
    assert [(b["goal"], b["goal_unit"]) for b in benches[3:5]] == [
        (200, "simulated s per wall s"),
        (1, "simulated s per wall s"),
    ]
    assert (benches[5]["goal"], benches[5]["goal_unit"]) == (1e5, "decisions/s")
    assert {b["goal_unit"] for b in benches[:3]} == {"events/s"}


def test_bench_repeats_report_the_fastest_run(cli):
    run = cli("bench", "--scenario", "periodic", "--seconds", "0.05", "--repeat", "3", "--json")
    assert run.code == 0, run.stderr
    (bench,) = json.loads(run.stdout)
    assert len(bench["wall_times_s"]) == 3
    assert bench["wall_time_s"] == min(bench["wall_times_s"])
    assert bench["events_per_s"] == pytest.approx(bench["events"] / bench["wall_time_s"])
    text = cli("bench", "--scenario", "periodic", "--seconds", "0.05", "--repeat", "2")
    assert text.code == 0, text.stderr
    assert "fastest of 2" in text.stdout
    assert "10,000,000 events/s (" in text.stdout  # the scenario's goal
    bad = cli("bench", "--repeat", "0")
    assert bad.code != 0
    assert "--repeat" in bad.stderr


def test_bench_times_a_whole_campaign_only_when_named(cli, tmp_path):
    from campaign_helpers import TINY, TINY_RUNS, write_campaign

    toml = write_campaign(tmp_path / "tiny.toml", TINY)
    args = ["bench", "--scenario", "campaign", "--campaign", str(toml), "--jobs", "1"]
    run = cli(*args, "--json", cwd=tmp_path)
    assert run.code == 0, run.stderr
    (bench,) = json.loads(run.stdout)
    assert bench["scenario"] == "campaign"
    assert bench["runs"] == TINY_RUNS
    assert bench["setup"] == "the tiny campaign, 8 runs, 1 worker process"
    # Every run simulates the campaign's 0.2 s; the row adds them up.
    assert bench["sim_time_s"] == pytest.approx(TINY_RUNS * 0.2)
    assert bench["events"] > TINY_RUNS
    assert 0 < bench["runs_wall_time_s"] < bench["wall_time_s"]
    assert bench["events_per_s"] == pytest.approx(bench["events"] / bench["wall_time_s"])
    assert (bench["goal"], bench["goal_unit"]) == (300, "wall s")
    # The store it ran into is gone; the working directory holds only the campaign file.
    assert [p.name for p in tmp_path.iterdir()] == ["tiny.toml"]
    text = cli(*args, cwd=tmp_path)
    assert text.code == 0, text.stderr
    assert "in 8 runs" in text.stdout
    assert "300 wall s (reached)" in text.stdout
    bad = cli("bench", "--scenario", "campaign", "--campaign", "nosuch")
    assert bad.code != 0
    assert "nosuch" in bad.stderr
    # Without the campaign scenario its options would do nothing: refused, not ignored.
    stray = cli("bench", "--scenario", "periodic", "--jobs", "4")
    assert stray.code != 0
    assert "--scenario campaign" in stray.stderr


def test_bench_ends_with_each_scenario_against_its_goal(cli):
    run = cli("bench", "--scenario", "periodic", "--scenario", "epyc-loaded", "--seconds", "0.01")
    assert run.code == 0, run.stderr
    header, periodic, loaded = run.stdout.strip().splitlines()[-3:]
    assert header.split() == ["scenario", "now", "goal"]
    number = r"[\d,.]+"
    assert re.fullmatch(
        rf"periodic +{number} events/s +10,000,000 events/s +(not )?reached", periodic
    )
    per_wall_s = "simulated s per wall s"
    assert re.fullmatch(
        rf"epyc-loaded +{number} {per_wall_s} +200 {per_wall_s} +(not )?reached", loaded
    )
    # One scenario alone has nothing to set beside it.
    one = cli("bench", "--scenario", "periodic", "--seconds", "0.01")
    assert one.stdout.strip().splitlines()[-1].startswith("goal ")


def test_bench_runs_one_scenario_and_refuses_unknown_ones(cli):
    run = cli("bench", "--scenario", "server", "--seconds", "0.01", "--json")
    assert run.code == 0, run.stderr
    assert [b["scenario"] for b in json.loads(run.stdout)] == ["server"]
    bad = cli("bench", "--scenario", "nosuch")
    assert bad.code != 0
    assert "nosuch" in bad.stderr
    assert "periodic" in bad.stderr


@pytest.mark.parametrize("command", ["platforms", "governors", "workloads", "run", "bench"])
def test_every_command_has_help_with_examples(cli, command):
    run = cli(command, "--help")
    assert run.code == 0, run.stderr
    assert "examples:" in run.stdout
    assert f"dvfslab {command}" in run.stdout.split("examples:", 1)[1]


def test_version_matches_the_package(cli):
    run = cli("--version")
    assert run.code == 0, run.stderr
    assert run.stdout.strip() == f"dvfslab {dvfslab.__version__}"
