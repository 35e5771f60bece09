"""`dvfslab replay governor` and dvfslab.replay_governor: a governor against a real recording."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import dvfslab
from dvfslab import ConfigError
from trace_data import short_lived

JUNO_SCHEDUTIL = Path(__file__).parent / "data" / "traces" / "lisa-juno-schedutil.txt"
LINUX_4_19 = "schedutil:kernel=4.19"


# The recording's rate limits are not in the trace; replaying it, these per-policy values fit it
# (LITTLE 76-85 ms, big 37-40 ms; docs/traces.md).
JUNO_TUNED = f"{LINUX_4_19},policy0.rate_limit_us=80000,policy1.rate_limit_us=40000"


def test_schedutil_reproduces_every_judged_change_of_the_juno_recording():
    report = dvfslab.replay_governor(JUNO_SCHEDUTIL, "juno-r0", JUNO_TUNED)
    # The trace's five changes: the first of each cluster ends its warm-up (the kernel's state
    # before is unknown), so three are judged.
    assert len(report["warm_up"]) == 2
    assert report["recorded_changes"] == 3
    judged = [(c["policy"], c["recorded_khz"], c["status"]) for c in report["changes"]]
    # LITTLE down to 450 MHz once its utilisation has decayed, big down to 450 MHz, LITTLE to
    # the top when an RT thread (prio < 100) runs: the formula and the rate limit as 4.19 has them.
    assert judged == [(0, 450_000, "exact"), (1, 450_000, "exact"), (0, 850_000, "exact")]
    assert report["exact_match"] == 1.0
    assert report["unexplained"] == 0
    for c in report["changes"]:
        # The model decides when the kernel woke its worker thread; the scpi driver logs the
        # change after switching.
        assert -3.0 < (c["model_s"] - c["recorded_s"]) * 1e3 <= 0.0
    # One more model change falls within the pairing window of the recording's end.
    assert [c["status"] for c in report["at_end"]] == ["at_end"]


def test_cpufreqs_default_rate_limit_does_not_explain_the_juno_recording():
    tuned = dvfslab.replay_governor(JUNO_SCHEDUTIL, "juno-r0", JUNO_TUNED)
    default = dvfslab.replay_governor(JUNO_SCHEDUTIL, "juno-r0", LINUX_4_19)

    def extra(report):
        return [c for c in report["changes"] if c["status"] == "extra"]

    # At 10 ms the model follows each utilisation step, where the kernel changed far less often.
    assert not extra(tuned)
    assert len(extra(default)) > default["recorded_changes"]
    assert default["exact_match"] < 0.5
    assert "util_est" in default["unobservable"]  # 4.19 has util_est; the trace does not
    shown = default["divergences"]
    assert shown
    assert all(c["status"] != "exact" for c in shown)
    assert all(dict(c["inputs"]).keys() >= {"util_avg", "util"} for c in shown if c["inputs"])


def test_every_model_decision_stays_in_the_table_and_within_the_trace():
    report = dvfslab.replay_governor(JUNO_SCHEDUTIL, "juno-r0", "ondemand:kernel=4.19")
    tables = {0: {450_000, 575_000, 700_000, 775_000, 850_000}}
    tables[1] = {450_000, 625_000, 800_000, 950_000, 1_100_000}
    assert report["unobservable"] == ["iowait_time"]
    for c in report["changes"]:
        if c["model_khz"] is not None:
            assert c["model_khz"] in tables[c["policy"]]
            assert 2084.02 <= c["model_s"] <= 2084.45


def test_the_cli_prints_the_comparison(capsys):
    from dvfslab.cli.main import main

    assert main(["replay", "governor", str(JUNO_SCHEDUTIL), "-p", "juno-r0", "-g", LINUX_4_19]) == 0
    out = capsys.readouterr().out
    for shown in ("exact OPP", "warm_up", "not in the trace: util_est"):
        assert shown in out
    assert (
        main(
            ["replay", "governor", str(JUNO_SCHEDUTIL), "-p", "juno-r0", "-g", LINUX_4_19, "--json"]
        )
        == 0
    )
    data = json.loads(capsys.readouterr().out)
    assert {"decisions", "exact_match", "within_one_opp", "unexplained", "divergences"} <= set(data)


def test_a_recording_of_another_machine_or_without_inputs_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="not in juno-r2's table"):
        dvfslab.replay_governor(JUNO_SCHEDUTIL, "juno-r2", LINUX_4_19)
    empty = tmp_path / "empty.txt"
    empty.write_text(
        "  sh-1 [000] 1.0: sched_switch: prev_comm=a prev_pid=1 prev_prio=120 "
        "prev_state=S ==> next_comm=b next_pid=2 next_prio=120\n"
    )
    with pytest.raises(ConfigError, match="nothing to replay"):
        dvfslab.replay_governor(empty, "juno-r0", LINUX_4_19)
    with pytest.raises(ConfigError, match="kernel"):
        dvfslab.replay_governor(JUNO_SCHEDUTIL, "juno-r0", "schedutil:kernel=3.10")


JUNO_TASKS = Path(__file__).parent / "data" / "traces" / "lisa-juno-trace.txt"

# A made-up recording on juno-r2 (big = CPUs 1-2 at 1200 MHz, capacity 1024; LITTLE = 0, 3-5
# at 950 MHz): `a` runs 2 ms on a big CPU, sleeps until a timer wakes it 3 ms
# later, runs 1 ms during which it wakes `b` half-way, and `b` runs 1 ms on a LITTLE CPU.


def _switch(cpu: int, t: str, prev: tuple[str, int, str], nxt: tuple[str, int]) -> str:
    fields = (
        f"prev_comm={prev[0]} prev_pid={prev[1]} prev_prio=120 prev_state={prev[2]} ==> "
        f"next_comm={nxt[0]} next_pid={nxt[1]} next_prio=120"
    )
    return f"  {prev[0]}-{prev[1]} [{cpu:03d}] {t}: sched_switch: {fields}\n"


def _wakeup(cpu: int, t: str, waker: tuple[str, int], pid: int, target: int) -> str:
    body = f"comm=t pid={pid} prio=120 target_cpu={target:03d}"
    return f"  {waker[0]}-{waker[1]} [{cpu:03d}] {t}: sched_wakeup: {body}\n"


IDLE1, IDLE0 = ("swapper/1", 0), ("swapper/0", 0)
SMALL = (
    "  <idle>-0 [001] 1.000000: cpu_frequency: state=1200000 cpu_id=1\n"
    "  <idle>-0 [000] 1.000000: cpu_frequency: state=950000 cpu_id=0\n"
    + _switch(1, "1.000000", (*IDLE1, "R"), ("a", 10))
    + _switch(0, "1.000000", (*IDLE0, "R"), ("b", 11))
    + _switch(0, "1.000001", ("b", 11, "S"), IDLE0)
    + _switch(1, "1.002000", ("a", 10, "S"), IDLE1)
    + _wakeup(1, "1.005000", ("<idle>", 0), 10, 1)
    + _switch(1, "1.005000", (*IDLE1, "R"), ("a", 10))
    + _wakeup(1, "1.005500", ("a", 10), 11, 0)
    + _switch(0, "1.005500", (*IDLE0, "R"), ("b", 11))
    + _switch(1, "1.006000", ("a", 10, "S"), IDLE1)
    + _switch(0, "1.006500", ("b", 11, "S"), IDLE0)
)


def test_a_recording_becomes_rtapp_threads_that_redo_its_work_and_wake_ups(tmp_path):
    from dvfslab.traces.read import parse_text
    from dvfslab.traces.workload import trace_to_rtapp

    doc = trace_to_rtapp(parse_text(SMALL, "small.txt"), "juno-r2")
    assert doc["global"]["calibration"] == "CPU1"  # the first of the biggest CPUs
    a = doc["tasks"]["a-10"]["phases"]["replay"]
    b = doc["tasks"]["b-11"]["phases"]["replay"]
    assert a.pop("loop") == 1
    assert b.pop("loop") == 1
    assert list(a.values()) == [2000, 3000, 500, "wake_b-11", 500]
    assert [k.rsplit("_", 1)[0] for k in a] == ["run", "sleep", "run", "sem_post", "run"]
    # 1 ms on a LITTLE at its top frequency, capacity 383 (485 x 950 / 1200): 383 / 1024 of
    # the big CPU's work, 374.0 µs, and the 0.37 µs of its first 1-µs run carried into it.
    assert list(b.values()) == ["wake_b-11", 374]
    assert [k.rsplit("_", 1)[0] for k in b] == ["sem_wait", "run"]
    assert doc["tasks"]["a-10"]["delay"] == 0


def test_a_trace_runs_as_a_workload_under_any_governor():
    workload = f"trace:{JUNO_TASKS}"
    r1 = dvfslab.simulate("juno-r2", "schedutil", workload, seed=3)
    r2 = dvfslab.simulate("juno-r2", "schedutil", workload, seed=3)
    assert (r1.metric, r1.energy_j) == (r2.metric, r2.energy_j)
    assert r1.metric.name == "run_stretch"
    assert r1.metric.value >= 1.0
    assert r1.energy_j > 0
    fast = dvfslab.simulate("juno-r2", "performance", workload, seed=3)
    assert fast.metric.value <= r1.metric.value  # the top frequencies finish the work soonest


def test_replay_workload_sets_each_governor_beside_the_recording(capsys):
    from dvfslab.cli.main import main

    args = ["replay", "workload", str(JUNO_TASKS), "-p", "juno-r2", "-g", "performance"]
    assert main([*args, "-g", "schedutil", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    rec = report["recorded"]
    # devlib's markers say the recording ran at the top frequencies.
    assert rec["residency"] == {"big": {"1200000": 1.0}, "little": {"950000": 1.0}}
    assert sum(rec["busy_share"].values()) == pytest.approx(1.0)
    assert set(report["runs"]) == {"performance", "schedutil"}
    assert report["runs"]["performance"]["residency"]["big"].get("1200000", 0) > 0.99
    assert report["error"]["residency_distance"]["big"] < 0.01
    assert main(args) == 0
    assert "performance against the recording" in capsys.readouterr().out


def test_compare_and_campaigns_take_a_recording_as_a_benchmark(tmp_path, capsys):
    from dvfslab.campaign import campaign_from_dict
    from dvfslab.cli.main import main

    args = ["compare", "-p", "juno-r2", "-g", "performance", "-g", "schedutil"]
    assert main([*args, "-w", f"trace:{JUNO_TASKS}", "--iterations", "1"]) == 0
    out = capsys.readouterr().out
    assert "lisa-juno-trace" in out
    assert "schedutil" in out
    doc = {
        "name": "t",
        "platforms": ["juno-r2", "juno-r0"],
        "configs": {"su": "schedutil"},
        "baseline": "su",
        "benchmarks": {"rec": {"workload": f"trace:{JUNO_TASKS}"}},
    }
    runs = campaign_from_dict(doc, source="t.toml").runs()
    # The recording's work is made per platform (its capacities and frequencies).
    texts = {r.platform: r.workload_file_text for r in runs}
    assert texts["juno-r2"] != texts["juno-r0"]
    assert all(r.simulated_workload()[1] == f"trace:{JUNO_TASKS}" for r in runs)
    with pytest.raises(ConfigError, match=r"benchmarks\.rec\.sweep: a recorded trace has no knobs"):
        campaign_from_dict(
            {
                **doc,
                "benchmarks": {"rec": {"workload": f"trace:{JUNO_TASKS}", "sweep": {"a": [1]}}},
            },
            source="t.toml",
        )
    with pytest.raises(ConfigError, match="does not exist"):
        campaign_from_dict(
            {**doc, "benchmarks": {"rec": {"workload": f"trace:{tmp_path}/none.txt"}}},
            source="t.toml",
        )


def test_a_scan_finds_the_rate_limits_the_juno_recording_allows(capsys):
    from dvfslab.cli.main import main
    from dvfslab.traces.replay import scan_tunable

    values = list(range(30_000, 90_001, 5_000))
    found = scan_tunable(JUNO_SCHEDUTIL, "juno-r0", LINUX_4_19, "rate_limit_us", values)
    little, big = found["policies"]
    assert (little["first_cpu"], little["judged"], little["fits"]) == (0, 2, [80_000, 85_000])
    assert (big["first_cpu"], big["judged"], big["fits"]) == (1, 1, [40_000])
    # Outside the fits the model either misses a change or makes one the kernel did not.
    for entry in little["per_value"]:
        if entry["value"] not in little["fits"]:
            assert entry["exact"] < 2 or entry["extra"] > 0
    args = ["replay", "governor", str(JUNO_SCHEDUTIL), "-p", "juno-r0", "-g", LINUX_4_19]
    assert main([*args, "--scan", "rate_limit_us=30000:90000:5000"]) == 0
    out = capsys.readouterr().out
    assert "policy0  2               80000-85000" in out
    assert "policy0.rate_limit_us=85000,policy1.rate_limit_us=40000" in out
    assert main([*args, "--scan", "rate_limit_us=9:1:1"]) == 1
    assert "expected KEY=START:STOP:STEP" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="rate_limit_us is what the scan sets"):
        scan_tunable(
            JUNO_SCHEDUTIL, "juno-r0", f"{LINUX_4_19},rate_limit_us=1", "rate_limit_us", [1]
        )


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_task_never_switched_out_is_left_out_and_counted(tmp_path, capsys):
    from dvfslab.cli.main import main
    from dvfslab.traces.read import parse_text
    from dvfslab.traces.workload import convert

    # `a` runs 1 ms and sleeps; `x` is switched in on CPU 1 at 1.001 and its switch-out is
    # never recorded (the recording ended, or lost it); `c` runs on CPU 0, and a switch from `y`
    # on CPU 0 shows that `c`'s own switch-out was lost.
    text = (
        SMALL
        + _switch(1, "1.007000", (*IDLE1, "R"), ("x", 20))
        + _switch(0, "1.007000", (*IDLE0, "R"), ("c", 30))
        + _switch(0, "1.008000", ("c", 30, "S"), IDLE0)
        + _switch(0, "1.009000", (*IDLE0, "R"), ("c", 30))
        + _switch(0, "1.012000", ("y", 31, "S"), IDLE0)
        + _switch(0, "1.013000", (*IDLE0, "R"), ("b", 11))
        + _switch(0, "1.014000", ("b", 11, "S"), IDLE0)
    )
    done = convert(parse_text(text, "ends.txt"), "juno-r2")
    assert "x-20" not in done.document["tasks"]
    c = done.document["tasks"]["c-30"]["phases"]["replay"]
    # c's first run (1 ms on a LITTLE: 374 µs of the big CPU's work) is kept; its second,
    # whose switch-out is missing, is not: 3 ms it may not have run.
    assert [v for k, v in c.items() if k.startswith("run")] == [374]
    notes = done.notes
    assert notes["left_out"] == {"count": 1, "first": ["x-20"]}
    assert notes["runs_dropped"] == 2  # c's second run, x's only run
    path = _write(tmp_path, "ends.txt", text)
    assert main(["replay", "workload", str(path), "-p", "juno-r2", "-g", "performance"]) == 0
    out = capsys.readouterr().out
    assert (
        "note: tasks left out: 1, switched in and never switched out in the recording (x-20)" in out
    )
    assert "note: runs dropped: 2" in out


def test_a_recorded_nice_value_is_kept():
    from dvfslab.traces.read import parse_text
    from dvfslab.traces.workload import convert

    # `a` ran at nice 5 (the kernel's prio 125), `b` at nice 0 (120).
    text = SMALL.replace("comm=a prev_pid=10 prev_prio=120", "comm=a prev_pid=10 prev_prio=125")
    text = text.replace("comm=a next_pid=10 next_prio=120", "comm=a next_pid=10 next_prio=125")
    tasks = convert(parse_text(text, "nice.txt"), "juno-r2").document["tasks"]
    assert tasks["a-10"]["priority"] == 5
    assert "priority" not in tasks["b-11"]


def test_a_recording_without_wakeups_keeps_its_sleeps(capsys):
    from dvfslab.cli.main import main
    from dvfslab.traces.read import read_trace
    from dvfslab.traces.workload import convert

    done = convert(read_trace(JUNO_SCHEDUTIL), "juno-r0")
    threads = done.document["tasks"].values()
    # Each task blocks and runs again: its sleeps end at its next switch-in.
    sleeping = [t for t in threads if any(k.startswith("sleep") for k in t["phases"]["replay"])]
    assert len(sleeping) >= len(threads) // 2, len(sleeping)
    assert done.notes["wakeups"] == {"recorded": 0, "at_switch_in": 178}
    args = ["replay", "workload", str(JUNO_SCHEDUTIL), "-p", "juno-r0", "-g", "schedutil"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "note: the recording has no sched_wakeup events: 178 wake-ups are taken at" in out
    # No wake-up recorded, no activation to time: not 0 ms.
    assert "recording       0.056" in out
    assert main([*args, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["recorded"]["activation_ms"] == {"count": 0, "median": None, "p90": None}
    assert report["conversion"]["wakeups"]["at_switch_in"] == 178


def test_a_replay_that_judged_nothing_says_so(tmp_path, capsys):
    from dvfslab.cli.main import main

    # Every CPU's utilisation, and no frequency change recorded or made.
    text = "".join(
        f"  <idle>-0 [{cpu:03d}] 1.{t:06d}: sched_load_cfs_rq: cpu={cpu} path=/ load=0 util=10\n"
        for t in (0, 100_000)
        for cpu in range(6)
    )
    path = _write(tmp_path, "flat.txt", text)
    report = dvfslab.replay_governor(path, "juno-r0", LINUX_4_19)
    assert (report["decisions"], report["exact_match"], report["within_one_opp"]) == (0, None, None)
    assert main(["replay", "governor", str(path), "-p", "juno-r0", "-g", LINUX_4_19]) == 0
    out = capsys.readouterr().out
    assert "exact OPP n/a, within one OPP n/a: no decision to judge (the recording has no " in out
    assert "100%" not in out
    assert "timing" not in out


def test_a_recording_without_tasks_is_an_error_not_an_empty_run(cli, tmp_path):
    # Only the idle task and schedutil's worker ran.
    text = _switch(1, "1.000000", (*IDLE1, "R"), ("sugov:1", 90)) + _switch(
        1, "1.000100", ("sugov:1", 90, "S"), IDLE1
    )
    path = _write(tmp_path, "idle.txt", text)
    for args in (
        ["replay", "workload", str(path), "-p", "juno-r2", "-g", "performance"],
        ["run", "-p", "juno-r2", "-g", "performance", "-w", f"trace:{path}"],
    ):
        run = cli(*args)
        assert (run.code, run.stdout) == (1, "")
        assert run.stderr.startswith(f"error: {path}: no task of the recording to replay")


@pytest.mark.parametrize("stamp", ["nan", "inf", "1e300"])
def test_timestamps_that_are_not_times_give_one_error_line(cli, tmp_path, stamp):
    path = _write(tmp_path, "nan.txt", SMALL.replace("1.002000", stamp))
    for args in (
        ["replay", "workload", str(path), "-p", "juno-r2", "-g", "performance"],
        ["run", "-p", "juno-r2", "-g", "performance", "-w", f"trace:{path}"],
    ):
        run = cli(*args)
        assert run.code == 1
        assert run.stderr == (
            f'error: {path}:6: timestamp: "{stamp}": expected seconds as the kernel prints them '
            "(digits, a point, digits: 76.211715), or a raw clock count (an integer)\n"
        )


def test_a_tsc_recording_replays_given_its_rate(tmp_path, capsys):
    from dvfslab.cli.main import main

    # SMALL on a 2 GHz TSC: each second is 2e9 cycles.
    def cycles(match: re.Match[str]) -> str:
        return f"] {round(float(match.group(1)) * 2e9)}:"

    path = _write(tmp_path, "tsc.txt", re.sub(r"\] (\d+\.\d+):", cycles, SMALL))
    args = ["replay", "workload", str(path), "-p", "juno-r2", "-g", "performance", "--json"]
    assert main(args) == 1
    assert "is a raw clock count, not seconds" in capsys.readouterr().err
    assert main([*args, "--tsc-khz", "2000000"]) == 0
    in_cycles = json.loads(capsys.readouterr().out)
    assert main(["replay", "workload", str(_write(tmp_path, "s.txt", SMALL)), *args[3:]]) == 0
    in_seconds = json.loads(capsys.readouterr().out)
    assert in_cycles["recorded"] == in_seconds["recorded"]
    assert in_cycles["span_s"] == pytest.approx(in_seconds["span_s"])


def test_a_task_of_seventy_thousand_runs_replays(tmp_path):
    # One task that runs 10 µs and sleeps 10 µs 70,000 times: more runs than 65,535.
    lines = []
    for i in range(70_000):
        t0 = 1_000_000 + 20 * i
        lines.append(_switch(1, f"{t0 // 10**6}.{t0 % 10**6:06d}", (*IDLE1, "R"), ("a", 10)))
        t1 = t0 + 10
        lines.append(_switch(1, f"{t1 // 10**6}.{t1 % 10**6:06d}", ("a", 10, "S"), IDLE1))
    path = _write(tmp_path, "long.txt", "".join(lines))
    # Every CPU alike, so that each run takes its recorded time wherever the task starts.
    r = dvfslab.simulate("skylake-e3-1240v5", "performance", f"trace:{path}")
    assert r.sim_time_s > 1.39
    assert r.metric.value == pytest.approx(1.0, abs=0.05)


def test_memory_grows_with_the_events_of_many_short_lived_processes(tmp_path):
    # Each process forks, runs, sleeps, runs and exits. Memory was quadratic in them (each
    # task kept a start time per log slot of the whole file: 20,000 processes took 5 GB).
    script = (
        "import resource, sys, dvfslab\n"
        "dvfslab.simulate('juno-r2', 'performance', 'trace:' + sys.argv[1])\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n"
    )
    peak_kb = {}
    for count in (2_000, 8_000):
        path = tmp_path / f"p{count}.txt"
        with path.open("w", encoding="utf-8") as f:
            short_lived(count, f)
        done = subprocess.run(
            [sys.executable, "-c", script, str(path)],
            capture_output=True,
            text=True,
            timeout=300,
            check=True,
        )
        peak_kb[count] = int(done.stdout.split()[-1])
    # 6 events a process: well under 2 KB an event (it was 50 KB at 8,000 processes).
    per_event = (peak_kb[8_000] - peak_kb[2_000]) * 1024 / (6 * 6_000)
    assert per_event < 2048, peak_kb


def test_a_pid_used_again_is_another_task_and_the_task_limit_is_said_early(monkeypatch):
    from dvfslab.traces.read import parse_text
    from dvfslab.traces.workload import convert

    # `a` (pid 10) exits; a new process gets pid 10 and runs 1 ms.
    text = (
        _switch(1, "1.000000", (*IDLE1, "R"), ("a", 10))
        + _switch(1, "1.001000", ("a", 10, "X"), IDLE1)
        + _switch(1, "1.002000", (*IDLE1, "R"), ("a", 10))
        + _switch(1, "1.003000", ("a", 10, "S"), IDLE1)
    )
    tasks = convert(parse_text(text, "reuse.txt"), "juno-r2").document["tasks"]
    assert sorted(tasks) == ["a-10", "a-10.2"]
    assert tasks["a-10.2"]["delay"] == 2000
    monkeypatch.setattr("dvfslab.traces.workload.MAX_TASKS", 1)
    with pytest.raises(ConfigError, match=r"reuse.txt: 2 tasks to replay; a run takes at most 1"):
        convert(parse_text(text, "reuse.txt"), "juno-r2")
