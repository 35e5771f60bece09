"""dvfslab.read_trace and `dvfslab trace summary`: recorded ftrace text into tables."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import dvfslab
from dvfslab import ConfigError
from dvfslab.traces import write_trace
from dvfslab.traces.read import MAX_TRACE_BYTES, TRACE_DAT_MAGIC
from trace_data import switch, wakeup

LISA_JUNO = Path(__file__).parent / "data" / "traces" / "lisa-juno-trace.txt"
JUNO_SCHEDUTIL = LISA_JUNO.with_name("lisa-juno-schedutil.txt")
LISA_SCHEDUTIL = Path(__file__).parent / "data" / "traces" / "lisa-juno-schedutil.txt"


def test_a_schedutil_trace_gives_its_run_queues_utilisation_and_rt_tasks():
    trace = dvfslab.read_trace(LISA_SCHEDUTIL)
    assert trace.counts["sched_load_cfs_rq"] == 191  # the root run-queues' lines, all kept
    assert trace.skipped == {}
    # sched_migrate_task: logged by the CPU that moves the task (here a wake-up's placement).
    first = trace.migrations.iloc[0]
    assert (len(trace.migrations), first["comm"], first["pid"]) == (28, "kworker/u12:4", 310)
    assert (first["cpu"], first["orig_cpu"], first["dest_cpu"]) == (5, 0, 5)
    assert sorted(trace.pelt["cpu"].unique()) == list(range(6))
    assert trace.pelt["util"].between(0, 1024).all()
    assert (trace.pelt["runnable"] == -1).all()  # sched_load_cfs_rq has no runnable average
    # The watchdog threads are RT (prio 0), the idle task and kworkers CFS (120).
    rt = trace.switches[trace.switches["next_prio"] < 100]
    assert "watchdog/0" in set(rt["next_comm"])
    assert set(trace.frequency["freq_khz"]) == {450000, 800000, 850000}
    # devlib's markers, from `trace-cmd report -R`'s `ip=.. buf=..`, keep only the text.
    assert trace.markers["text"].iloc[0].startswith("cpu_frequency_devlib:")


def test_a_real_juno_trace_reads_into_tables():
    trace = dvfslab.read_trace(LISA_JUNO)
    assert trace.cpus == 6  # its `cpus=6` header
    assert trace.counts == {
        "sched_switch": 617,
        "sched_wakeup": 333,
        "print": 7,
        "sched_overutilized": 1,
    }
    assert trace.skipped == {"sched_overutilized": 1}
    assert len(trace.switches) == 617
    assert len(trace.wakeups) == 333
    first = trace.switches.iloc[0]
    assert (first["time_s"], first["cpu"], first["prev_comm"], first["prev_pid"]) == (
        76.211513,
        1,
        "trace-cmd",
        1701,
    )
    assert (first["next_comm"], first["next_pid"], first["prev_state"]) == ("swapper/1", 0, "64")
    assert set(trace.wakeups["target_cpu"]) <= set(range(6))
    assert trace.markers["text"].iloc[0] == "TRACE_MARKER_START"
    assert trace.markers["text"].iloc[1].startswith("cpu_frequency_devlib:")
    assert trace.switches["time_s"].is_monotonic_increasing


def test_what_dvfslab_writes_reads_back(tmp_path):
    result = dvfslab.simulate(
        "juno-r2", "schedutil", "periodic:threads=3", duration_s=0.3, timeline=True
    )
    path = write_trace(result, tmp_path / "run.txt")
    trace = dvfslab.read_trace(path)
    written = result.df_cpus_frequency().sort_values(["cpu", "time_s"], kind="stable")
    read = trace.frequency.sort_values(["cpu", "time_s"], kind="stable")
    assert list(read["cpu"]) == list(written["cpu"])
    assert list(read["freq_khz"]) == list(written["freq_khz"])
    assert list(read["time_s"]) == pytest.approx(list(written["time_s"]), abs=1e-6)
    assert len(trace.switches) == len(result.timeline_columns()["switch"]["time_ns"])
    # Every CPU enters and leaves idle states by index; -1 marks the exits.
    assert set(trace.idle["state"]) >= {-1}
    summary = trace.summary()
    for cpu in summary["per_cpu"]:
        residency = cpu["freq_residency_khz_pct"]
        assert sum(residency.values()) == pytest.approx(100.0)
        if cpu["busy_pct"] is not None:
            assert 0.0 <= cpu["busy_pct"] <= 100.0


def test_kernel_trace_file_lines_with_flags_and_tgid_read_too(tmp_path):
    path = tmp_path / "trace_pipe.txt"
    path.write_text(
        "# tracer: nop\n"
        "#\n"
        "          <idle>-0       (-------) [002] d..2.  5.000100: cpu_idle: state=4294967295 "
        "cpu_id=2\n"
        "          <idle>-0       [002] d..2  5.000200: cpu_frequency: state=1200000 cpu_id=2\n"
        "            bash-42      [001] ....  5.000300: tracing_mark_write: hello world\n"
        "            bash-42      [001] d..3  5.000400: sched_wakeup_new: comm=cat pid=43 "
        "prio=120 target_cpu=003\n",
        encoding="utf-8",
    )
    trace = dvfslab.read_trace(path)
    assert list(trace.idle["state"]) == [-1]
    assert list(trace.frequency[["cpu", "freq_khz"]].iloc[0]) == [2, 1200000]
    assert list(trace.markers["text"]) == ["hello world"]
    assert list(trace.wakeups[["pid", "target_cpu", "new"]].iloc[0]) == [43, 3, True]
    assert trace.cpus == 3


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("this is not a trace\n", ":2: not an ftrace event line"),
        ("  a-1 [000] 1.000000: sched_switch: prev_comm=a\n", ":2: sched_switch: cannot read"),
        ("  a-1 [000] 1.000000: cpu_frequency: state=fast cpu_id=0\n", ":2: cpu_frequency"),
    ],
)
def test_a_malformed_line_is_named_by_file_and_line(tmp_path, line, says):
    path = tmp_path / "bad.txt"
    path.write_text("# tracer: nop\n" + line, encoding="utf-8")
    with pytest.raises(ConfigError, match=f"{path}{says}"):
        dvfslab.read_trace(path)


def test_a_trace_dat_needs_trace_cmd(tmp_path, monkeypatch):
    path = tmp_path / "trace.dat"
    path.write_bytes(TRACE_DAT_MAGIC + b"\0" * 64)
    monkeypatch.setattr("shutil.which", lambda name: None)
    with pytest.raises(ConfigError, match=r"needs trace-cmd .*package `trace-cmd`"):
        dvfslab.read_trace(path)
    with pytest.raises(ConfigError, match="does not exist"):
        dvfslab.read_trace(tmp_path / "missing.txt")


def _fake_trace_cmd(bin_dir, script):
    """A `trace-cmd` on PATH that runs `script` (sh): what dvfslab asks of the real one."""
    tool = bin_dir / "trace-cmd"
    tool.write_text("#!/bin/sh\n" + script, encoding="utf-8")
    tool.chmod(0o755)
    return str(bin_dir)


def test_a_trace_dat_is_read_through_trace_cmd_report_raw(tmp_path, monkeypatch):
    path = tmp_path / "trace.dat"
    path.write_bytes(TRACE_DAT_MAGIC + b"\0" * 64)
    calls = tmp_path / "calls.txt"
    # The fake prints the shipped text of LISA's recording when asked for `report -R FILE`.
    script = f'echo "$@" >> {calls}\n[ "$1 $2" = "report -R" ] && cat {LISA_JUNO}\n'
    monkeypatch.setenv("PATH", _fake_trace_cmd(tmp_path, script) + os.pathsep + os.environ["PATH"])
    trace = dvfslab.read_trace(path)
    assert calls.read_text().split() == ["report", "-R", str(path)]
    assert len(trace.switches) == len(dvfslab.read_trace(LISA_JUNO).switches) == 617
    failing = _fake_trace_cmd(tmp_path, 'echo "trace-cmd: bad magic" >&2\nexit 1\n')
    monkeypatch.setenv("PATH", failing + os.pathsep + os.environ["PATH"])
    with pytest.raises(ConfigError, match=r"trace-cmd report failed: trace-cmd: bad magic"):
        dvfslab.read_trace(path)


def test_cli_trace_summary(cli):
    run = cli("trace", "summary", str(LISA_JUNO), "--json")
    assert run.code == 0, run.stderr
    info = json.loads(run.stdout)
    assert (info["cpus"], info["events"]["sched_switch"], info["markers"]) == (6, 617, 7)
    assert info["skipped"] == {"sched_overutilized": 1}
    assert info["end_s"] - info["start_s"] == pytest.approx(0.328007)
    text = cli("trace", "summary", str(LISA_JUNO))
    assert text.code == 0, text.stderr
    assert "sched_overutilized" in text.stdout
    assert "skipped" in text.stdout
    bad = cli("trace", "summary", str(LISA_JUNO.with_name("nope.txt")))
    assert bad.code == 1
    assert bad.stderr.startswith("error: trace file")


def test_trace_summary_names_the_longest_wait_for_a_cpu(cli, tmp_path):
    # Task 3 is woken onto CPU 0 at 1.0 s and never runs while tasks 1 and 2 take turns there
    # until 1.2 s; task 5, woken onto CPU 1 at the same moment, runs 1 ms later. The summary
    # names task 3's 200 ms, still waiting at the trace's end.
    text = wakeup(0, "1.000000", ("a", 1), 3, target=0) + wakeup(1, "1.000000", ("c", 4), 5, 1)
    text += switch(1, "1.001000", ("c", 4, "S"), ("t", 5))
    turns = [(("a", 1, "R"), ("b", 2)), (("b", 2, "R"), ("a", 1))]
    text += "".join(switch(0, f"{1.0 + 0.01 * (i + 1):.6f}", *turns[i % 2]) for i in range(20))
    path = tmp_path / "starved.txt"
    path.write_text("cpus=2\n" + text)
    info = dvfslab.read_trace(path).summary()
    assert info["longest_wait"] == {"ms": pytest.approx(200.0), "comm": "t", "still_waiting": True}
    run = cli("trace", "summary", str(path))
    assert run.code == 0, run.stderr
    assert (
        "longest wait for a CPU after a wake-up: 200.0 ms (t, still waiting at the end)"
        in run.stdout
    )


def test_a_cpu_map_names_each_cpus_type():
    from dvfslab.traces.read import cpu_map, preset_cpu_map

    assert cpu_map("big=1-2,little=0,3-5") == preset_cpu_map("juno-r2")
    summary = dvfslab.read_trace(LISA_JUNO).summary(cpu_map("big=1-2,little=0,3-5"))
    assert [c["type"] for c in summary["per_cpu"]] == [
        "little",
        "big",
        "big",
        "little",
        "little",
        "little",
    ]
    with pytest.raises(ConfigError, match="leaves out CPU 5 of the trace's 6"):
        dvfslab.read_trace(LISA_JUNO).summary(cpu_map("big=1-2,little=0,3-4"))
    for bad, says in (
        ("big", "expected TYPE=CPUS"),
        ("big=1-x", "not a CPU number"),
        ("a=1,b=1", "CPU 1 is given twice"),
    ):
        with pytest.raises(ConfigError, match=says):
            cpu_map(bad)


def test_idle_exits_time_the_last_remote_signal_to_the_exit(tmp_path):
    path = tmp_path / "wake.txt"
    path.write_text(
        # CPU 1 sleeps in state 2; CPU 0 updates its load from afar (an idle balancer), later
        # wakes a task onto it: the exit 200 us after that wake-up is what the wake-up cost.
        "  <idle>-0 [001] 1.000000: cpu_idle: state=2 cpu_id=1\n"
        "  b-7 [000] 1.010000: sched_load_cfs_rq: cpu=1 path=/ load=0 util=3\n"
        "  b-7 [000] 1.015000: sched_wakeup: comm=a pid=9 prio=120 target_cpu=001\n"
        "  <idle>-0 [001] 1.015200: cpu_idle: state=4294967295 cpu_id=1\n"
        # A timer wakes CPU 1 from state 0: no signal from another CPU, so not counted.
        "  <idle>-0 [001] 1.020000: cpu_idle: state=0 cpu_id=1\n"
        "  <idle>-0 [001] 1.021000: cpu_idle: state=4294967295 cpu_id=1\n",
        encoding="utf-8",
    )
    exits = dvfslab.read_trace(path).summary()["idle_exits"]
    assert exits == [{"state": 2, "wakeups": 1, "median_us": 200.0, "min_us": 200.0}]


def test_the_juno_recording_wakes_from_wfi_faster_than_from_power_down():
    exits = {e["state"]: e for e in dvfslab.read_trace(JUNO_SCHEDUTIL).summary()["idle_exits"]}
    assert set(exits) == {0, 1, 2}  # WFI, cpu-sleep, cluster-sleep
    assert exits[0]["median_us"] < 10 < exits[1]["min_us"]
    assert exits[0]["median_us"] < exits[2]["min_us"]
    # Far below the device tree's 1500 and 1600 us (entry + exit, a worst case).
    assert exits[1]["median_us"] < 300
    assert exits[2]["median_us"] < 300


def _switches(*stamps: str, cpu: int = 0) -> str:
    return "".join(switch(cpu, t, ("a", 1, "S"), ("b", 2)) for t in stamps)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (_switches("1.000000", "nan"), r":2: timestamp: \"nan\": expected seconds"),
        (_switches("1.000000", "inf"), r":2: timestamp: \"inf\": expected seconds"),
        (_switches("1e300"), r":1: timestamp: \"1e300\": expected seconds"),
        (_switches("2.000000", "1.000000"), r":2: timestamp: 1.000000 on CPU 0 is before 2 on"),
        (
            _switches("1.0").replace("prev_state=S", "prev_state=ZZZZ"),
            r":1: sched_switch: cannot read its fields \(prev_state=ZZZZ is not a task state",
        ),
        (_switches("1.0", cpu=99_999_999), r":1: CPU: \[99999999\]: expected a CPU below 8192"),
        ("cpus=4000000000\n" + _switches("1.0"), r":1: cpus: 4000000000 CPUs: at most 8192"),
        ("", r": no ftrace event: expected lines"),
        (_switches("2000000000"), r":1: timestamp: 2000000000 is a raw clock count"),
    ],
)
def test_what_is_not_a_trace_is_an_error_naming_the_file_and_line(cli, tmp_path, text, says):
    path = tmp_path / "bad.txt"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=f"{path}{says}"):
        dvfslab.read_trace(path)
    run = cli("trace", "summary", str(path), "--json")
    assert (run.code, run.stdout) == (1, "")
    assert run.stderr.startswith(f"error: {path}"), run.stderr
    assert run.stderr.count("\n") == 1, run.stderr


def test_each_cpu_keeps_its_order_while_cpus_interleave(tmp_path):
    # trace_pipe: CPU 1's line at 5.0001 comes after CPU 0's at 5.0002; both are read, in order.
    text = _switches("5.000200", cpu=0) + _switches("5.000100", "5.000300", cpu=1)
    from dvfslab.traces.read import parse_text

    trace = parse_text(text, "pipe.txt")
    assert list(trace.switches["time_s"]) == [5.0001, 5.0002, 5.0003]
    assert list(trace.switches["cpu"]) == [1, 0, 1]


def test_lost_events_are_counted_and_reported(cli, tmp_path):
    path = tmp_path / "lost.txt"
    path.write_text(
        _switches("1.000000")
        + "CPU:1 [LOST 1234 EVENTS]\n"
        + "CPU:0 [LOST EVENTS]\n"
        + _switches("2.000000", "3.000000"),
        encoding="utf-8",
    )
    trace = dvfslab.read_trace(path)
    assert (len(trace.switches), trace.cpus) == (3, 2)  # CPU 1 logged no event, only its loss
    assert trace.lost_summary() == {
        "reports": 2,
        "events": 1234,
        "unknown": 1,
        "per_cpu": {1: 1234},
    }
    run = cli("trace", "summary", str(path), "--json")
    assert run.code == 0, run.stderr
    assert json.loads(run.stdout)["lost"]["events"] == 1234
    text = cli("trace", "summary", str(path))
    assert (
        "lost: 1234 events in 2 [LOST EVENTS] reports, 1 reports without a count (CPU 1: 1234)"
        in text.stdout
    )


def test_a_raw_tsc_clock_is_read_given_its_rate(cli, tmp_path):
    path = tmp_path / "tsc.txt"
    path.write_text(_switches("3000000000", "3000300000"), encoding="utf-8")
    run = cli("trace", "summary", str(path))
    assert run.code == 1
    assert "is a raw clock count, not seconds" in run.stderr
    assert "--tsc-khz" in run.stderr
    # A 3 GHz TSC: 3e9 cycles are 1 s, 300,000 of them 100 µs.
    assert list(dvfslab.read_trace(path, tsc_khz=3e6).switches["time_s"]) == [1.0, 1.0001]
    run = cli("trace", "summary", str(path), "--tsc-khz", "3000000", "--json")
    assert run.code == 0, run.stderr
    info = json.loads(run.stdout)
    assert (info["start_s"], info["tsc_khz"]) == (1.0, 3e6)
    text = cli("trace", "summary", str(path), "--tsc-khz", "3000000")
    assert "timestamps: raw TSC counts at 3000000 kHz, shown in seconds" in text.stdout
    path.write_text("# tsc_khz=3000000\n" + path.read_text(), encoding="utf-8")
    assert dvfslab.read_trace(path).tsc_khz == 3e6
    with pytest.raises(ConfigError, match="tsc_khz: expected the clock's rate in kHz"):
        dvfslab.read_trace(path, tsc_khz=float("nan"))


def test_what_is_not_a_file_or_too_big_is_refused_before_it_is_read(cli, tmp_path, monkeypatch):
    for path in ("/dev/zero", str(tmp_path)):
        run = cli("trace", "summary", path)
        assert run.code == 1
        assert run.stderr.startswith(f"error: trace file {path}: not a regular file")
    huge = tmp_path / "huge.txt"
    with huge.open("wb") as f:
        f.truncate(MAX_TRACE_BYTES + 1)  # sparse: nothing written
    with pytest.raises(
        ConfigError, match=r"huge.txt: is 2.0 GiB or more; at most 2 GiB of trace text"
    ):
        dvfslab.read_trace(huge)
    # A file that grows past its size while it is read is cut at the cap, not read whole.
    small = tmp_path / "small.txt"
    small.write_text(_switches("1.0") * 10, encoding="utf-8")
    monkeypatch.setattr("dvfslab.traces.read.MAX_TRACE_BYTES", 100)
    monkeypatch.setattr("dvfslab.traces.read._check_size", _size_checked_once())
    with pytest.raises(ConfigError, match="or more; at most"):
        dvfslab.read_trace(small)


def _size_checked_once():
    """`_check_size` that lets the first check (the file's stat) pass, as a growing file would."""
    from dvfslab.traces import read

    real = read._check_size
    calls = []

    def check(source, size, what="is"):
        calls.append(size)
        if len(calls) > 1:
            real(source, size, what)

    return check


def test_cpu_maps_are_bounded_and_ranges_checked():
    from dvfslab.traces.read import cpu_map

    for bad in ("big=0-99999999", "big=5-1", "big=8192", "big=-1"):
        with pytest.raises(ConfigError, match="--cpus"):
            cpu_map(bad)
    assert cpu_map("big=8190-8191") == {8190: "big", 8191: "big"}


def test_a_junk_trace_dat_and_an_empty_file_are_errors(cli, tmp_path, monkeypatch):
    empty = tmp_path / "empty.txt"
    empty.write_text("", encoding="utf-8")
    run = cli("trace", "summary", str(empty))
    assert (run.code, run.stdout) == (1, "")
    assert run.stderr.startswith(f"error: {empty}: no ftrace event")
    junk = tmp_path / "trace.dat"
    junk.write_bytes(TRACE_DAT_MAGIC + b"\xff" * 64)
    # A trace-cmd that reads nothing out of it and says nothing wrong.
    monkeypatch.setenv(
        "PATH", _fake_trace_cmd(tmp_path, "exit 0\n") + os.pathsep + os.environ["PATH"]
    )
    with pytest.raises(ConfigError, match=f"{junk}: no ftrace event"):
        dvfslab.read_trace(junk)


def test_json_output_has_no_infinity_or_nan(capsys):
    from dvfslab.cli.output import print_json

    print_json({"a": float("inf"), "b": [float("nan"), 1.5], "c": {"d": -float("inf")}})
    assert json.loads(capsys.readouterr().out) == {"a": None, "b": [None, 1.5], "c": {"d": None}}


def test_a_summary_of_many_cpus_takes_the_time_of_its_events():
    import time

    from dvfslab.traces.read import parse_text

    trace = parse_text(_switches("1.0", "2.0", cpu=8191), "wide.txt")
    began = time.perf_counter()
    info = trace.summary()
    assert time.perf_counter() - began < 5.0
    assert (info["cpus"], len(info["per_cpu"])) == (8192, 8192)
