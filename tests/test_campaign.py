"""Campaign files: validation errors, expansion, seeds and keys; `compare` and `campaign` CLI."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

import dvfslab
from campaign_helpers import SMALL, TINY, TINY_RUNS, campaign_doc, write_campaign
from dvfslab import ConfigError
from dvfslab.campaign import (
    campaign_from_dict,
    campaign_names,
    check_campaign,
    list_campaigns,
    load_campaign,
    run_campaign,
)
from dvfslab.campaign.store import finished_keys, load_manifest, load_results

PERIODIC = "periodic:run_us=1000,period_us=8000,jitter_pct=20"


def bench(workload: str = PERIODIC, **entry: object) -> dict[str, object]:
    return {"periodic": {"workload": workload, **entry}}


# -- validation ------------------------------------------------------------------------------

# (changes to TINY, the key path the error names, what the error says)
INVALID = [
    ({"baseline": None}, "", "missing key 'baseline'"),
    ({"iteration": 3}, "iteration", "unknown key"),
    ({"seed": -1}, "seed", "expected an integer in 0..18446744073709551615, got -1"),
    ({"iterations": "3"}, "iterations", 'got "3" (a string)'),
    ({"iterations": 0}, "iterations", "expected an integer in 1..10000, got 0"),
    ({"duration_s": 0}, "duration_s", "expected a number of seconds > 0"),
    ({"duration_s": 1e-300}, "duration_s", "from 1e-09 (1 ns) to 1.8e+10, got 1e-300"),
    ({"duration_s": 1e308}, "duration_s", "from 1e-09 (1 ns) to 1.8e+10, got 1e+308"),
    ({"name": "my campaign"}, "name", "expected a name of letters, digits"),
    ({"platforms": []}, "platforms", "expected a non-empty list"),
    ({"platforms": ["nope"]}, "platforms[0]", "unknown platform 'nope'"),
    ({"platforms": [SMALL, SMALL]}, "platforms[1]", "listed twice"),
    ({"configs": {}}, "configs", "expected a table of at least one name = governor spec, got an"),
    ({"configs": {"schedutil": " "}}, "configs.schedutil", 'got " " (a string)'),
    ({"configs": {"schedutil": {"platforms": [SMALL]}}}, "configs.schedutil", "missing key"),
    ({"configs": {"schedutil": "schedutil", "s:x": 3}}, 'configs."s:x"', "or a table, got 3"),
    ({"description": 3}, "description", "expected a string, got 3 (an integer)"),
    (
        {"duration_s": float("inf")},
        "duration_s",
        "expected a number of seconds > 0, from 1e-09 (1 ns) to 1.8e+10, got inf",
    ),
    ({"configs": {"schedutil": 3}}, "configs.schedutil", "expected a governor spec"),
    ({"configs": {"schedutil": "schedutl"}}, "configs.schedutil", "unknown governor 'schedutl'"),
    (
        {"configs": {"schedutil": {"governor": "schedutil", "platform": [SMALL]}}},
        "configs.schedutil.platform",
        "unknown key",
    ),
    (
        {"configs": {"schedutil": {"governor": "schedutil", "platforms": ["pixel6"]}}},
        "configs.schedutil.platforms[0]",
        "'pixel6' is not a campaign platform",
    ),
    ({"baseline": "nope"}, "baseline", "'nope' is not a config"),
    ({"benchmarks": bench("perodic")}, "benchmarks.periodic.workload", "unknown workload"),
    ({"benchmarks": bench(sweeps={})}, "benchmarks.periodic.sweeps", "unknown key"),
    (
        {"benchmarks": bench(sweep={"clients": [1]})},
        "benchmarks.periodic.sweep.clients",
        "'periodic' has no knob 'clients' (knobs: threads",
    ),
    (
        {"benchmarks": bench(sweep={"threads": 4})},
        "benchmarks.periodic.sweep.threads",
        "expected a non-empty list of numbers or strings, or a table of platform = [values], "
        "got 4 (an integer)",
    ),
    (
        {"benchmarks": bench(sweep={"threads": {SMALL: [1], "pixel6": [2]}})},
        "benchmarks.periodic.sweep.threads.pixel6",
        "not a platform this benchmark runs on (they are: skylake-e3-1240v5)",
    ),
    (
        {
            "platforms": [SMALL, "pixel6"],
            "benchmarks": bench(sweep={"threads": {"pixel6": [2]}}),
        },
        "benchmarks.periodic.sweep.threads",
        "no values for platform(s) skylake-e3-1240v5",
    ),
    (
        {"benchmarks": bench(sweep={"threads": {SMALL: []}})},
        "benchmarks.periodic.sweep.threads.skylake-e3-1240v5",
        "expected a non-empty list",
    ),
    (
        {"benchmarks": bench(sweep={"threads": [1, True]})},
        "benchmarks.periodic.sweep.threads[1]",
        "got true (a boolean)",
    ),
    (
        {"benchmarks": bench(sweep={"threads": {SMALL: [1, [2]]}})},
        "benchmarks.periodic.sweep.threads.skylake-e3-1240v5[1]",
        "expected a number or a string without , : =, got a list",
    ),
    (
        {"benchmarks": bench(sweep={"threads": ["1,2"]})},
        "benchmarks.periodic.sweep.threads[0]",
        'expected a number or a string without , : =, got "1,2" (a string)',
    ),
    (
        {"benchmarks": bench(platforms=[SMALL, SMALL])},
        "benchmarks.periodic.platforms[1]",
        "listed twice",
    ),
    (
        {"benchmarks": bench(sweep={"threads": [1, 1]})},
        "benchmarks.periodic.sweep.threads[1]",
        "listed twice",
    ),
    (
        {"benchmarks": bench(sweep={"run_us": [1000]})},
        "benchmarks.periodic.sweep.run_us",
        "both set in the workload spec and swept",
    ),
    (
        {"benchmarks": bench(iterations=0)},
        "benchmarks.periodic.iterations",
        "expected an integer in 1..10000",
    ),
    (
        # TOML reads 5.10 as the number 5.1: a version must be a string.
        {"benchmarks": bench(kernel=5.10)},
        "benchmarks.periodic.kernel",
        "expected a kernel version as a string, such as '5.4' or '6.18.44'",
    ),
]


@pytest.mark.parametrize(("changes", "key", "says"), INVALID)
def test_invalid_campaign_names_file_and_key(tmp_path, changes, key, says):
    path = write_campaign(tmp_path / "bad.toml", campaign_doc(**changes))
    with pytest.raises(ConfigError) as e:
        load_campaign(path)
    message = str(e.value)
    assert message.startswith(f"{path}: {key}: " if key else f"{path}: "), message
    assert says in message


def test_baseline_must_run_on_every_platform(tmp_path):
    configs = {"schedutil": {"governor": "schedutil", "platforms": ["pixel6"]}, "p": "performance"}
    doc = campaign_doc(platforms=[SMALL, "pixel6"], configs=configs)
    with pytest.raises(ConfigError, match=r"configs\.schedutil\.platforms: the baseline must run"):
        load_campaign(write_campaign(tmp_path / "c.toml", doc))


def test_toml_syntax_error_names_file_and_line(tmp_path):
    path = tmp_path / "broken.toml"
    path.write_text('name = "x"\nseed = = 3\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=rf"^{path}: invalid TOML: .*line 2"):
        load_campaign(path)


def test_unknown_campaign_lists_the_shipped_ones():
    with pytest.raises(ConfigError, match=r"unknown campaign 'nope' \(shipped: .*example"):
        load_campaign("nope")


def test_missing_campaign_file():
    with pytest.raises(ConfigError, match=r"campaign file nowhere/x\.toml does not exist"):
        load_campaign("nowhere/x.toml")


def test_bad_tunable_stops_the_campaign_before_any_run(tmp_path):
    configs = {"schedutil": "schedutil", "bad": "schedutil:rate_limit_us=-7"}
    campaign = campaign_from_dict(campaign_doc(configs=configs), source="t")
    with pytest.raises(ConfigError, match=r"^t: platform .*config bad, benchmark periodic .*"):
        run_campaign(campaign, tmp_path / "out", jobs=1, progress=False)
    assert finished_keys(tmp_path / "out") == set()


def test_a_warm_up_is_checked_without_simulating_it():
    # 100 s of tbench with 64 clients would take minutes to simulate; the check runs nothing.
    tb = {"workload": "tbench:clients=64,warmup_ms=100000", "duration_s": 200}
    doc = campaign_doc(benchmarks={"tb": tb}, iterations=1)
    started = time.monotonic()
    check_campaign(campaign_from_dict(doc, source="t"))
    assert time.monotonic() - started < 30


def test_a_warm_up_longer_than_the_run_is_refused_by_the_check():
    doc = campaign_doc(benchmarks={"tb": "tbench:clients=2,warmup_ms=500"}, iterations=1)
    with pytest.raises(
        ConfigError, match=r"^t: platform .*benchmark tb: .*warmup_ms: the warm-up \(500 ms\)"
    ):
        check_campaign(campaign_from_dict(doc, source="t"))


@pytest.mark.parametrize("value", ["-5", "abc", "1e400"])
def test_a_bad_warm_up_is_still_named_by_the_check(value):
    doc = campaign_doc(benchmarks={"tb": f"tbench:clients=2,warmup_ms={value}"}, iterations=1)
    with pytest.raises(ConfigError, match=r"^t: platform .*benchmark tb: .*warmup_ms"):
        check_campaign(campaign_from_dict(doc, source="t"))


# -- expansion, seeds and keys ---------------------------------------------------------------


def test_the_shipped_example_loads_with_distinct_seeds_and_keys():
    assert "example" in campaign_names()
    campaign = load_campaign("example")
    runs = campaign.runs()
    assert len(runs) == 2 * 3 * (4 + 2) * 3
    assert len({r.run_key for r in runs}) == len(runs)
    assert len({r.seed for r in runs}) == len(runs)
    assert all(0 <= r.seed < 2**63 for r in runs)
    assert [c["name"] for c in list_campaigns()] == campaign_names()


def test_sweep_builds_params_and_specs_in_the_order_written():
    doc = campaign_doc(
        benchmarks={
            "grid": {
                "workload": "periodic:run_us=500",
                "sweep": {"threads": [4, 1], "mem_frac": [0.5]},
            },
            "plain": "cpu-bound",
            "bare": {"workload": "cpu-bound", "sweep": {"threads": [2]}},
        },
        iterations=1,
        configs={"schedutil": "schedutil"},
        nominal=True,  # the specs as built, without a variant's knobs
    )
    runs = campaign_from_dict(doc, source="t").runs()
    assert [(r.benchmark, r.param, r.workload) for r in runs] == [
        ("grid", "threads=4,mem_frac=0.5", "periodic:run_us=500,threads=4,mem_frac=0.5"),
        ("grid", "threads=1,mem_frac=0.5", "periodic:run_us=500,threads=1,mem_frac=0.5"),
        ("plain", "", "cpu-bound"),
        ("bare", "threads=2", "cpu-bound:threads=2"),
    ]


def test_a_benchmark_may_run_every_config_at_another_kernel(tmp_path):
    configs = {
        "schedutil": "schedutil:invariant=0,kernel=5.5",
        "performance": "performance",
    }
    benchmarks = {"old": {"workload": "cpu-bound", "kernel": "5.4"}, "plain": "cpu-bound"}
    doc = campaign_doc(configs=configs, benchmarks=benchmarks, iterations=1, nominal=True)
    runs = campaign_from_dict(doc, source="t").runs()
    assert [(r.benchmark, r.governor) for r in runs] == [
        ("old", "schedutil:invariant=0,kernel=5.4"),
        ("old", "performance:kernel=5.4"),
        ("plain", "schedutil:invariant=0,kernel=5.5"),
        ("plain", "performance"),
    ]
    # A version the simulator does not model stops the campaign before any run, naming it.
    doc["benchmarks"]["old"]["kernel"] = "3.10"
    campaign = campaign_from_dict(doc, source="t")
    with pytest.raises(ConfigError, match=r"^t: .*benchmark old.*3\.10"):
        run_campaign(campaign, tmp_path / "out", jobs=1, progress=False)
    assert finished_keys(tmp_path / "out") == set()


def test_a_sweep_may_give_each_platform_its_own_values():
    doc = campaign_doc(
        platforms=[SMALL, "pixel6"],
        benchmarks={
            "grid": {
                "workload": "periodic:run_us=500",
                "sweep": {"threads": {SMALL: [1, 8], "pixel6": [2]}, "mem_frac": [0.5]},
            },
        },
        iterations=1,
        configs={"schedutil": "schedutil"},
    )
    campaign = campaign_from_dict(doc, source="t")
    assert [(r.platform, r.param) for r in campaign.runs()] == [
        (SMALL, "threads=1,mem_frac=0.5"),
        (SMALL, "threads=8,mem_frac=0.5"),
        ("pixel6", "threads=2,mem_frac=0.5"),
    ]
    sweep = campaign.manifest()["benchmarks"][0]["sweep"]
    assert sweep == {"threads": {SMALL: ["1", "8"], "pixel6": ["2"]}, "mem_frac": ["0.5"]}


def test_adding_runs_leaves_every_other_seed_and_key_unchanged():
    small = campaign_from_dict(campaign_doc(), source="t").runs()
    grown_doc = campaign_doc(
        platforms=[SMALL, "pixel6"],
        configs={**TINY["configs"], "powersave": "powersave"},
        benchmarks={
            "periodic": {**TINY["benchmarks"]["periodic"], "sweep": {"threads": [1, 2, 4]}},
            "cpu": "cpu-bound",
        },
    )
    grown = {_coordinates(r): r for r in campaign_from_dict(grown_doc, source="t").runs()}
    assert len(grown) == 2 * 3 * (3 + 1) * 2
    for run in small:
        twin = grown[_coordinates(run)]
        assert (twin.seed, twin.run_key) == (run.seed, run.run_key)


def test_more_iterations_redraw_the_variants_but_keep_a_nominal_campaigns_runs():
    def keys(**changes):
        runs = campaign_from_dict(campaign_doc(**changes), source="t").runs()
        return {_coordinates(r): (r.seed, r.run_key) for r in runs}

    for nominal, kept in ((True, True), (False, False)):
        two, three = keys(nominal=nominal), keys(nominal=nominal, iterations=3)
        assert all((three[c] == k) is kept for c, k in two.items())
        assert all(three[c][0] == k[0] for c, k in two.items())  # seeds stay


def test_seed_depends_on_coordinates_and_key_on_inputs():
    base = campaign_from_dict(campaign_doc(), source="t").runs()[0]
    reseeded = campaign_from_dict(campaign_doc(seed=8), source="t").runs()[0]
    longer = campaign_from_dict(campaign_doc(duration_s=0.3), source="t").runs()[0]
    configs = {"schedutil": "schedutil:rate_limit_us=500", "performance": "performance"}
    tuned = campaign_from_dict(campaign_doc(configs=configs), source="t").runs()[0]
    assert reseeded.seed != base.seed
    # Same coordinates, other inputs: same seed, new key.
    for other in (longer, tuned):
        assert other.seed == base.seed
        assert other.run_key != base.run_key


def test_preset_text_is_part_of_the_key(tmp_path, presets):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    preset = presets.write_edited(SMALL, tmp_path / "a", lambda doc: None)
    edited = presets.write_edited(SMALL, tmp_path / "b", lambda doc: doc.update(description="x"))
    same = campaign_from_dict(campaign_doc(platforms=[str(preset)]), source="t").runs()[0]
    other = campaign_from_dict(campaign_doc(platforms=[str(edited)]), source="t").runs()[0]
    assert same.platform == other.platform == SMALL  # the preset's id is the coordinate
    assert same.seed == other.seed
    assert same.run_key != other.run_key


def test_relative_platform_paths_are_relative_to_the_campaign_file(tmp_path, presets):
    (tmp_path / "presets").mkdir()
    presets.write_edited(SMALL, tmp_path / "presets", lambda doc: None)
    doc = campaign_doc(platforms=[f"presets/{SMALL}-edited.json"])
    campaign = load_campaign(write_campaign(tmp_path / "c.toml", doc))
    assert campaign.platforms[0].ref == str(tmp_path / "presets" / f"{SMALL}-edited.json")


def _coordinates(run):
    return (run.platform, run.benchmark, run.config, run.param, run.iteration)


# -- CLI -------------------------------------------------------------------------------------


def test_cli_campaign_list(cli):
    run = cli("campaign", "list", "--json")
    assert run.code == 0, run.stderr
    listed = json.loads(run.stdout)
    assert any(c["name"] == "example" and c["runs"] == 108 for c in listed)


def test_cli_campaign_run_then_rerun_then_report(cli, tmp_path):
    path = write_campaign(tmp_path / "tiny.toml", campaign_doc())
    out = tmp_path / "out"
    first = cli("campaign", "run", str(path), "--out", str(out), "--jobs", "2")
    assert first.code == 0, first.stderr
    assert f"tiny: {TINY_RUNS} runs in {out}: 0 already stored, {TINY_RUNS} run on 2 workers" in (
        first.stdout
    )
    second = cli("campaign", "run", str(path), "--out", str(out))
    assert second.code == 0, second.stderr
    assert f"{TINY_RUNS} already stored, nothing to run" in second.stdout
    report = cli("campaign", "report", str(out))
    assert report.code == 0, report.stderr
    assert "performance" in report.stdout
    assert "threads=2" in report.stdout


def test_cli_campaign_run_a_part(cli, tmp_path):
    two_benchmarks = dict(
        TINY["benchmarks"],
        cpu={"workload": "cpu-bound:threads=1"},
    )
    path = write_campaign(tmp_path / "tiny.toml", campaign_doc(benchmarks=two_benchmarks))
    out = tmp_path / "out"
    part = cli("campaign", "run", str(path), "--out", str(out), "--benchmark", "cpu")
    assert part.code == 0, part.stderr
    # cpu: one point, two configs, two iterations.
    assert f"tiny: 4 runs in {out}" in part.stdout
    assert set(load_results(out)["benchmark"]) == {"cpu"}
    whole = cli("campaign", "run", str(path), "--out", str(out))
    assert whole.code == 0, whole.stderr
    assert f"tiny: {TINY_RUNS + 4} runs in {out}: 4 already stored" in whole.stdout

    unknown = cli("campaign", "run", str(path), "--platform", "pixel6", "--out", str(out))
    assert unknown.code == 1
    assert f"no platform pixel6 (expected one of: {SMALL})" in unknown.stderr


def test_cli_campaign_run_error_names_the_key(cli, tmp_path):
    path = write_campaign(tmp_path / "bad.toml", campaign_doc(seed="7"))
    run = cli("campaign", "run", str(path), "--out", str(tmp_path / "out"))
    assert run.code == 1
    assert (
        run.stderr
        == f'error: {path}: seed: expected an integer in 0..{2**64 - 1}, got "7" (a string)\n'
    )


def test_cli_compare_prints_a_mean_table_per_parameter(cli, tmp_path):
    run = cli(
        "compare",
        "-p",
        SMALL,
        "-g",
        "schedutil",
        "-g",
        "performance",
        "-w",
        "periodic:run_us=1000,period_us=8000",
        "--sweep",
        "threads=1,2",
        "--iterations",
        "2",
        "--duration",
        "0.2",
        "--out",
        str(tmp_path / "cmp"),
    )
    assert run.code == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].startswith(f"compare: 8 runs in {tmp_path / 'cmp'}: 0 already stored, 8 run")
    header = next(line for line in lines if line.startswith("param"))
    assert header.split() == ["param", "schedutil", "W", "performance", "W"]
    assert any(line.startswith("threads=1") for line in lines)
    assert any(line.startswith("threads=2") for line in lines)
    df = load_results(tmp_path / "cmp")
    assert len(df) == 8
    assert df.attrs["baseline"] == "schedutil"


def test_cli_compare_gives_each_ratio_an_interval_and_a_verdict(cli, tmp_path):
    args = ["compare", "-p", SMALL, "-g", "powersave", "-g", "performance"]
    args += ["-w", "cpu-bound:threads=2", "--iterations", "3", "--duration", "0.1"]
    run = cli(*args, "--out", str(tmp_path / "cmp"))
    assert run.code == 0, run.stderr
    row = next(line for line in run.stdout.splitlines() if "cpu-bound" in line.split()[1:2])
    # platform, benchmark, config, ratio, low - high, wide low - wide high, model verdict, verdict
    fields = row.split()
    assert fields[:3] == [SMALL, "cpu-bound", "performance"]
    ratio, low, high = float(fields[3]), float(fields[4]), float(fields[6])
    wide_low, wide_high = float(fields[7]), float(fields[9])
    assert wide_low <= low <= ratio <= high <= wide_high
    assert fields[10] == ("improved" if low > 1.02 else "uncertain")
    assert fields[11] == ("improved" if wide_low > 1.02 else "uncertain")
    assert "model discrepancy (cpu-bound: class throughput" in run.stdout
    # --no-discrepancy: the variants' interval and its verdict alone (the runs are reused).
    bare = cli(*args, "--out", str(tmp_path / "cmp"), "--no-discrepancy")
    assert bare.code == 0, bare.stderr
    row = next(line for line in bare.stdout.splitlines() if "cpu-bound" in line.split()[1:2])
    assert row.split()[3:8] == [*fields[3:7], fields[10]]
    df = load_results(tmp_path / "cmp")
    assert all("phase_us=4000" in w for w in df["workload"])  # a model variant per iteration
    nominal = cli(*args, "--nominal", "--out", str(tmp_path / "nominal"))
    assert nominal.code == 0, nominal.stderr
    assert set(load_results(tmp_path / "nominal")["workload"]) == {"cpu-bound:threads=2"}


def test_cli_campaign_run_nominal_runs_the_specs_as_written(cli, tmp_path):
    path = write_text(
        tmp_path / "c.toml",
        f'platforms = ["{SMALL}"]\nbaseline = "a"\niterations = 2\nduration_s = 0.05\n'
        '[configs]\na = "performance"\n[benchmarks]\nt = "tbench:clients=1"\n',
    )
    run = cli("campaign", "run", str(path), "--out", str(tmp_path / "out"), "--nominal")
    assert run.code == 0, run.stderr
    assert set(load_results(tmp_path / "out")["workload"]) == {"tbench:clients=1"}
    assert load_manifest(tmp_path / "out")["nominal"] is True


def test_cli_run_variants_prints_each_quantity_with_its_interval(cli):
    args = ["run", "-p", SMALL, "-g", "schedutil", "-w", "tbench:clients=2", "--duration", "0.05"]
    run = cli(*args, "--variants", "3", "--json")
    assert run.code == 0, run.stderr
    out = json.loads(run.stdout)
    assert out["variants"] == 3
    assert len(out["runs"]) == 3
    assert len({r["workload"] for r in out["runs"]}) == 3  # three different variants
    for quantity in ("metric_value", "energy_j", "avg_package_w"):
        low, high = out[quantity]["interval"]
        values = [r[quantity] for r in out["runs"]]
        assert 0 < low < min(values) <= max(values) < high
    assert cli(*args, "--variants", "1").stderr.startswith("error: --variants must be >= 2")
    refused = cli(*args, "--variants", "2", "--explain")
    assert "--explain records one run; it cannot go with --variants" in refused.stderr


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["-g", "schedutil", "-g", "schedutil"], "-g schedutil is given twice"),
        (["-g", "schedutil", "--sweep", "threads"], "--sweep expects KNOB=V1,V2,..."),
        (["-g", "schedutil", "--iterations", "0"], "--iterations must be >= 1"),
        (["-g", "schedutil", "--jobs", "0"], "--jobs must be >= 1"),
    ],
)
def test_cli_compare_rejects_bad_flags(cli, args, says):
    run = cli("compare", "-p", SMALL, "-w", "cpu-bound", *args)
    assert run.code == 1
    assert run.stderr.startswith("error: ")
    assert says in run.stderr


def test_the_documented_example_is_a_valid_campaign(tmp_path, presets):
    doc = Path(__file__).parent.parent / "docs" / "campaign-format.md"
    example = re.search(r"```toml\n(.*?)```", doc.read_text(encoding="utf-8"), re.S)
    assert example is not None
    (tmp_path / "presets").mkdir()
    presets.write_edited(SMALL, tmp_path / "presets", lambda d: d.update(id="my-box"))
    (tmp_path / "presets" / f"{SMALL}-edited.json").rename(tmp_path / "presets" / "my-box.json")
    campaign = load_campaign(write_text(tmp_path / "demo.toml", example.group(1)))
    assert campaign.name == "invariance-demo"
    assert [p.name for p in campaign.platforms] == [SMALL, "haswell-e5-2670v3-2s", "my-box"]
    runs = campaign.runs()
    per_platform = {
        p: sum(r.platform == p for r in runs) for p in ("my-box", "haswell-e5-2670v3-2s")
    }
    # cpu 1 + periodic 4 + jittery 4 params x 3 configs (4 on haswell) x 5 iterations;
    # long: 2 params x 4 configs x 3 iterations, on haswell only
    assert per_platform == {"my-box": 9 * 3 * 5, "haswell-e5-2670v3-2s": 9 * 4 * 5 + 2 * 4 * 3}
    # The simulator accepts every spec (the pre-flight check of each distinct combination).
    check_campaign(campaign)


def write_text(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


# -- rt-app files as benchmarks --------------------------------------------------------------

REPO = Path(__file__).resolve().parents[1]
PLAYBACK = REPO / "examples" / "rt-app" / "playback.json"


def rtapp_campaign(folder: Path) -> Path:
    """A campaign in `folder` whose benchmark is an rt-app file beside it, in `loads/`."""
    (folder / "loads").mkdir(parents=True)
    (folder / "loads" / "playback.json").write_text(PLAYBACK.read_text(encoding="utf-8"))
    doc = campaign_doc(
        platforms=["pixel6"],
        duration_s=0.3,
        iterations=1,
        benchmarks={"playback": {"workload": "loads/playback.json"}},
    )
    return write_campaign(folder / "rt.toml", doc)


def test_cli_campaign_runs_an_rtapp_file_relative_to_the_campaign(cli, tmp_path):
    path = rtapp_campaign(tmp_path / "campaign")
    out = tmp_path / "out"
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    # Nominal: the stored run is then comparable with a direct run of the preset as shipped.
    run = cli("campaign", "run", str(path), "--out", str(out), "--nominal", cwd=elsewhere)
    assert run.code == 0, run.stderr
    assert f"tiny: 2 runs in {out}: 0 already stored, 2 run" in run.stdout
    df = load_results(out)
    assert set(df["workload"]) == {"rt-app:loads/playback.json"}
    assert {json.loads(r)["workload"] for r in df["run_json"]} == {"rt-app:loads/playback.json"}
    assert set(df["metric_name"]) == {"run_stretch"}
    # The stored run is what `dvfslab run -w FILE` gives for the same seed.
    row = df.iloc[0]
    direct = dvfslab.simulate(
        "pixel6", row["governor"], path.parent / "loads" / "playback.json", 0.3, int(row["seed"])
    )
    assert direct.metric.value == row["metric_value"]
    assert direct.energy_j == row["energy_j"]


def test_an_rtapp_benchmark_keeps_its_keys_when_its_folder_moves(cli, tmp_path):
    first = rtapp_campaign(tmp_path / "here")
    moved = (tmp_path / "there").resolve()
    keys = [r.run_key for r in load_campaign(first).runs()]
    (tmp_path / "here").rename(moved)
    assert [r.run_key for r in load_campaign(moved / "rt.toml").runs()] == keys
    # ... and change when the file's text does.
    (moved / "loads" / "playback.json").write_text(
        PLAYBACK.read_text(encoding="utf-8").replace('"run" : 400', '"run" : 500')
    )
    changed = [r.run_key for r in load_campaign(moved / "rt.toml").runs()]
    assert set(changed).isdisjoint(keys)


def test_cli_compare_accepts_an_rtapp_file(cli, tmp_path):
    args = ["compare", "-p", "pixel6", "-g", "schedutil", "-g", "performance"]
    args += ["-w", "examples/rt-app/playback.json", "--iterations", "1", "--duration", "0.3"]
    run = cli(*args, "--out", str(tmp_path / "cmp"), cwd=REPO)
    assert run.code == 0, run.stderr
    assert "pixel6, playback: run_stretch [x], lower is better" in run.stdout
    df = load_results(tmp_path / "cmp")
    assert set(df["workload"]) == {"rt-app:examples/rt-app/playback.json"}
    assert set(df["benchmark"]) == {"playback"}
