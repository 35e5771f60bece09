"""Bad input: one `error:` line naming what is wrong, exit status 1, never a traceback."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import dvfslab
from dvfslab import ConfigError, DvfsError, _core
from dvfslab.campaign import load_campaign
from dvfslab.platforms import load_platform

SMALL = "skylake-e3-1240v5"
JUNO_SCHEDUTIL = Path(__file__).parent / "data" / "traces" / "lisa-juno-schedutil.txt"


def run_args(platform=SMALL, governor="performance", workload="cpu-bound:threads=1", *extra):
    return ["run", "-p", str(platform), "-g", governor, "-w", workload, "--duration", "0.1", *extra]


def assert_one_line_error(run, expected):
    assert run.code == 1, (run.stdout, run.stderr)
    assert "Traceback" not in run.stderr
    assert run.stderr.startswith("error: ")
    assert run.stderr.count("error:") == 1
    assert run.stdout == ""
    for text in expected:
        assert text in run.stderr


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        pytest.param(
            run_args("no-such-box"),
            ["unknown platform 'no-such-box'", SMALL],
            id="unknown platform",
        ),
        pytest.param(run_args(SMALL, "warpdrive"), ["warpdrive"], id="unknown governor"),
        pytest.param(run_args(SMALL, "performance:foo=1"), ["foo"], id="unknown tunable"),
        pytest.param(
            run_args(SMALL, "performance", "bogo-load"), ["bogo-load"], id="unknown workload"
        ),
        pytest.param(
            run_args(SMALL, "performance", "cpu-bound:nosuch=3"),
            ["nosuch"],
            id="unknown workload knob",
        ),
        pytest.param(
            run_args(SMALL, "performance", "cpu-bound", "--duration", "-1"),
            ["--duration", "> 0"],
            id="negative duration",
        ),
        pytest.param(
            run_args(SMALL, "performance", "cpu-bound", "--seed", "abc"),
            ["--seed"],
            id="non-numeric seed",
        ),
        pytest.param(
            run_args(SMALL, "performance", "cpu-bound", "--seed", "-1"),
            ["--seed"],
            id="negative seed",
        ),
        pytest.param(
            ["run", "-g", "performance", "-w", "cpu-bound"],
            ["-p/--platform"],
            id="missing --platform",
        ),
        pytest.param([], ["COMMAND"], id="no command"),
        pytest.param(["frobnicate"], ["frobnicate"], id="unknown command"),
        pytest.param(
            ["platforms", "no-such-box"],
            ["unknown platform 'no-such-box'"],
            id="describe unknown platform",
        ),
        pytest.param(
            [
                *("replay", "governor", str(JUNO_SCHEDUTIL), "-p", "juno-r0"),
                *("-g", "schedutil:kernel=4.19", "--scan", "rate_limit_us=nan:1:1"),
            ],
            ["--scan 'rate_limit_us=nan:1:1': expected KEY=START:STOP:STEP"],
            id="replay scan of nan",
        ),
        pytest.param(
            [
                *("tune", "-p", "pixel6", "-g", "schedutil", "--param", "bogus=100..20000:log"),
                *("-w", "hackbench", "--out", "/nonexistent/tune-never-written"),
            ],
            ["--param bogus: not a tunable of schedutil (its tunables: margins, rate_limit_us"],
            id="tune of an unknown tunable, before any trial",
        ),
        pytest.param(
            run_args(SMALL, "conservative:up_threshold=50,policy0.down_threshold=60"),
            ["'conservative': policy0.down_threshold: must be above down_threshold"],
            id="per-policy cross-check blames the policy's key",
        ),
    ],
)
def test_cli_reports_bad_input_in_one_line(cli, args, expected):
    assert_one_line_error(cli(*args), expected)


def test_cli_names_the_file_and_line_of_malformed_platform_json(cli, tmp_path):
    path = tmp_path / "broken-box.json"
    path.write_text('{\n  "id": "broken-box",\n  "topology": {,\n}\n', encoding="utf-8")
    assert_one_line_error(cli(*run_args(path)), ["broken-box.json", "line 3"])


def test_cli_names_a_missing_platform_file(cli, tmp_path):
    assert_one_line_error(cli(*run_args(tmp_path / "missing.json")), ["missing.json"])


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        pytest.param(lambda doc: doc.update(turbo_magic=1), "turbo_magic", id="top level"),
        pytest.param(lambda doc: doc["topology"].update(smt_wdith=2), "smt_wdith", id="nested"),
    ],
)
def test_cli_names_an_unknown_platform_field(cli, presets, tmp_path, edit, field):
    path = presets.write_edited(SMALL, tmp_path, edit)
    assert_one_line_error(cli(*run_args(path)), [field])


def test_cli_refuses_a_timeline_into_a_missing_directory(cli, tmp_path):
    target = tmp_path / "no-such-dir" / "t.parquet"
    run = cli(*run_args(SMALL, "performance", "cpu-bound", "--timeline", str(target)))
    assert_one_line_error(run, ["--timeline", "no-such-dir"])


def test_simulate_rejects_a_non_positive_duration():
    with pytest.raises(ConfigError) as excinfo:
        dvfslab.simulate(SMALL, "performance", "cpu-bound", duration_s=-1)
    assert str(excinfo.value) == "duration_s must be > 0 (got -1)"
    assert isinstance(excinfo.value, ValueError)
    assert isinstance(excinfo.value, DvfsError)


@pytest.mark.parametrize("duration_s", [0, math.nan, math.inf, "1"])
def test_simulate_rejects_durations_that_are_not_positive_finite_numbers(duration_s):
    with pytest.raises(ConfigError, match="duration_s"):
        dvfslab.simulate(SMALL, "performance", "cpu-bound", duration_s=duration_s)


def test_a_duration_too_long_for_nanoseconds_is_refused_not_overflowed():
    # Found by fuzzing a campaign file: 1e308 s times 1e9 is infinite, and had no int.
    with pytest.raises(ConfigError) as excinfo:
        dvfslab.simulate(SMALL, "performance", "cpu-bound", duration_s=1e308)
    assert str(excinfo.value) == "duration_s must be at most 18446744074 s (got 1e+308)"


@pytest.mark.parametrize("seed", [-1, 2**64, 1.5, True])
def test_simulate_rejects_seeds_outside_u64(seed):
    with pytest.raises(ConfigError, match="seed"):
        dvfslab.simulate(SMALL, "performance", "cpu-bound", duration_s=0.1, seed=seed)


def test_unknown_platform_lists_the_known_ones(presets):
    with pytest.raises(ConfigError) as excinfo:
        dvfslab.simulate("no-such-box", "performance", "cpu-bound", duration_s=0.1)
    known = ", ".join(sorted(presets.ids))
    assert str(excinfo.value) == f"unknown platform 'no-such-box' (known: {known})"


def test_malformed_platform_file_names_file_and_line(tmp_path):
    path = tmp_path / "box.json"
    path.write_text('{"id": "box",\n"topology": oops}\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"box\.json.*line 2"):
        dvfslab.simulate(path, "performance", "cpu-bound", duration_s=0.1)


def test_simulator_config_errors_are_value_errors(presets, tmp_path):
    path = presets.write_edited(SMALL, tmp_path, lambda doc: doc.update(turbo_magic=1))
    with pytest.raises(ValueError, match="turbo_magic"):
        dvfslab.simulate(path, "performance", "cpu-bound", duration_s=0.1)
    with pytest.raises(ConfigError, match="foo"):
        dvfslab.simulate(SMALL, "performance:foo=1", "cpu-bound", duration_s=0.1)
    # The edited file itself is still valid JSON: the simulator, not the loader, refused it.
    json.loads(path.read_text(encoding="utf-8"))


def test_a_polling_idle_state_must_come_first(presets, tmp_path):
    def poll_second(doc):
        states = doc["clusters"][0]["idle_states"]
        states[0], states[1] = states[1], states[0]

    path = presets.write_edited("skylake-e3-1240v5", tmp_path, poll_second)
    expected = r"idle_states\[1\]\.power.*polling state must be the first"
    with pytest.raises(ConfigError, match=expected):
        dvfslab.simulate(path, "performance", "cpu-bound", duration_s=0.1)


def test_a_measured_exit_cannot_exceed_the_tables(presets, tmp_path):
    def slower_than_the_table(doc):
        doc["clusters"][0]["idle_states"][-1]["exit_latency_pkg_awake_us"] = 500.0

    path = presets.write_edited("epyc7742-2s", tmp_path, slower_than_the_table)
    field = r"idle_states\[2\]\.exit_latency_pkg_awake_us"
    expected = field + r".*expected 0\.\.exit_latency_us \(400\), got 500"
    with pytest.raises(ConfigError, match=expected):
        dvfslab.simulate(path, "performance", "cpu-bound", duration_s=0.1)


def test_a_frequency_switch_halt_is_bounded(presets, tmp_path):
    def halt_for_ever(doc):
        doc["clusters"][0]["frequency"]["switch_halt_us"] = 5000.0

    path = presets.write_edited("haswell-e5-2670v3-2s", tmp_path, halt_for_ever)
    expected = r"frequency\.switch_halt_us.*expected 0\.\.1000, got 5000"
    with pytest.raises(ConfigError, match=expected):
        dvfslab.simulate(path, "performance", "cpu-bound", duration_s=0.1)


DOCUMENTED_RULES = [
    pytest.param(
        SMALL,
        "performance",
        "cpu-bound:threads=1.5",
        ["workload 'cpu-bound': threads: expected a whole number, got 1.5"],
        id="fractional thread count",
    ),
    pytest.param(
        SMALL,
        "ondemand:up_threshold=90.5",
        "cpu-bound",
        ["governor 'ondemand': up_threshold: expected a whole number"],
        id="fractional sysfs tunable",
    ),
    pytest.param(
        SMALL,
        "conservative:up_threshold=20,down_threshold=30",
        "cpu-bound",
        ["governor 'conservative': up_threshold: must be above down_threshold"],
        id="crossed conservative thresholds",
    ),
    pytest.param(
        SMALL,
        "intel_pstate:min_perf_pct=60,max_perf_pct=50",
        "cpu-bound",
        ["governor 'intel_pstate': min_perf_pct: must not exceed max_perf_pct"],
        id="intel_pstate minimum above maximum",
    ),
    pytest.param(
        "haswell-e5-2670v3-2s",
        "intel_pstate:algorithm=hwp",
        "cpu-bound",
        ["governor 'intel_pstate': algorithm: hwp needs an HWP-capable part"],
        id="HWP on a part without it",
    ),
    pytest.param(
        SMALL,
        "schedutil:hz=200",
        "cpu-bound",
        ["governor 'schedutil': hz: expected 100, 250, 300 or 1000, got 200"],
        id="tick rate no kernel config offers",
    ),
    pytest.param(
        SMALL,
        "schedutil:kernel=6.19",
        "cpu-bound",
        ["governor 'schedutil': kernel: 6.19 is not a modelled version", "6.0-6.18"],
        id="kernel not modelled",
    ),
]


@pytest.mark.parametrize(("platform", "governor", "workload", "expected"), DOCUMENTED_RULES)
def test_specs_breaking_a_documented_rule_are_refused(cli, platform, governor, workload, expected):
    assert_one_line_error(cli(*run_args(platform, governor, workload)), expected)
    with pytest.raises(ConfigError, match=expected[0]):
        dvfslab.simulate(platform, governor, workload, duration_s=0.1)


@pytest.mark.parametrize(("platform", "governor", "workload", "expected"), DOCUMENTED_RULES)
def test_the_check_refuses_what_the_run_refuses_with_the_same_message(
    platform, governor, workload, expected
):
    platform_json, source = load_platform(platform)
    with pytest.raises(ConfigError) as run_error:
        dvfslab.simulate(platform, governor, workload, duration_s=0.1)
    with pytest.raises(ConfigError) as check_error:
        _core.check(platform_json, source, governor, workload, duration_ns=100_000_000)
    assert str(check_error.value) == str(run_error.value)


def test_the_check_accepts_a_valid_setup_and_refuses_a_warm_up_past_the_end():
    platform_json, source = load_platform(SMALL)
    assert (
        _core.check(
            platform_json, source, "schedutil", "tbench:warmup_ms=50", duration_ns=100_000_000
        )
        is None
    )
    with pytest.raises(ConfigError, match=r"warmup_ms: the warm-up \(200 ms\) must end before"):
        _core.check(
            platform_json, source, "schedutil", "tbench:warmup_ms=200", duration_ns=100_000_000
        )


def test_hwp_runs_on_the_part_that_has_it():
    result = dvfslab.simulate(SMALL, "intel_pstate:algorithm=hwp", "cpu-bound", duration_s=0.05)
    assert result.metric.value > 0


def test_a_text_file_that_is_not_utf8_is_named_with_the_byte(tmp_path):
    platform = tmp_path / "p.json"
    platform.write_bytes(b'{"id": "x\xff"}')
    with pytest.raises(ConfigError, match=r"platform file .*p\.json: not UTF-8 text \(byte 9 "):
        load_platform(platform)
    campaign = tmp_path / "c.toml"
    campaign.write_bytes(b"\xfe")
    with pytest.raises(ConfigError, match=r"campaign file .*c\.toml: not UTF-8 text \(byte 0 "):
        load_campaign(campaign)
