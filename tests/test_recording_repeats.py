"""A recording's repeats: other runs of the same benchmark on the same machine, which the model
check judges against (the median of the runs, or inside their range)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from dvfslab._core import ConfigError
from dvfslab.record import autogroup_state
from dvfslab.recordings import load_recording, shipped_recordings
from dvfslab.recordings.check import MEDIAN, PER_OP_CPU, REPORTED, compare, recorded_runs
from dvfslab.recordings.manifest import load_repeats
from script_helpers import load_script

MANIFEST = """name = "{name}"
workload = "{workload}"
window_start_s = 0.0
window_s = 0.1
operations = 10.0
{extra}
[roles]
worker = "^w$"
"""
TRACE = "          w-1 [000] d..2.     0.050000: sched_switch: prev_comm=w prev_pid=1 \
prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120\n"


def write(folder: Path, name: str, workload: str = "hackbench", extra: str = "") -> Path:
    path = folder / f"{name}.toml"
    path.write_text(MANIFEST.format(name=name, workload=workload, extra=extra))
    path.with_suffix(".txt").write_text(TRACE)
    return path


def test_runs_are_judged_by_their_median_or_their_range() -> None:
    # The median of an even count is the lower middle value, one the runs had.
    assert PER_OP_CPU.judge_runs([100.0, 300.0, 110.0, 90.0], 118.0) == "ok"  # 100 +18%
    assert PER_OP_CPU.judge_runs([100.0, 300.0, 110.0, 90.0], 125.0) == "ok"  # in 90..300
    assert PER_OP_CPU.judge_runs([100.0, 300.0, 110.0, 90.0], 301.0) == "off"
    assert PER_OP_CPU.judge_runs([100.0, 110.0], 70.0) == "off"
    assert MEDIAN.judge_runs([5.0, 100.0, 89.0], 80.0) == "ok"  # median 89
    assert MEDIAN.judge_runs([None, 100.0], 60.0) == "off"
    assert MEDIAN.judge_runs([None, None], 60.0) == "n/a"
    assert REPORTED.judge_runs([1.0, 2.0], 9.0) == "reported"


def test_compare_keeps_every_run_and_judges_against_them() -> None:
    def stats(cpu: float) -> dict:
        return {
            "roles": {"all": {"cpu_cycles_per_op": cpu}},
            "operations_per_s": 1000.0,
            "forks_per_s": 0.0,
            "execs_per_s": 0.0,
        }

    rows = compare(stats(2000.0), stats(2900.0), [stats(3000.0), stats(2200.0)])
    row = next(r for r in rows if r["statistic"] == "cpu_cycles_per_op")
    assert row["recorded_runs"] == [2000.0, 3000.0, 2200.0]
    assert row["recorded"] == 2200.0
    assert row["verdict"] == "ok"  # 32% above the median, inside the runs' 2,000..3,000
    assert row["in_runs_range_only"]
    alone = next(
        r for r in compare(stats(2000.0), stats(2900.0)) if r["statistic"] == "cpu_cycles_per_op"
    )
    assert "recorded_runs" not in alone
    assert alone["verdict"] == "off"


def test_a_shipped_recording_with_repeats_is_checked_against_all_its_runs() -> None:
    rec = load_recording("hackbench-pipe-1cpu")
    repeats = load_repeats(rec)
    assert len(repeats) >= 2
    assert all(r.workload == rec.workload and r.trace_path.exists() for r in repeats)
    runs = recorded_runs(rec)
    assert len(runs) == len(repeats) + 1
    # Each run is read on its own: its own operations and window.
    cpu = {r["roles"]["all"]["cpu_cycles_per_op"] for r in runs}
    assert len(cpu) == len(runs)


def test_bad_repeats_are_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="repeats: expected a list"):
        load_recording(write(tmp_path, "a", extra='repeats = "b.toml"'))
    with pytest.raises(ConfigError, match=r"repeats: b\.toml: no such file"):
        load_recording(write(tmp_path, "a", extra='repeats = ["b.toml"]'))
    write(tmp_path, "b", workload="tbench")
    rec = load_recording(write(tmp_path, "a", extra='repeats = ["b.toml"]'))
    with pytest.raises(ConfigError, match=r"b\.toml: workload: a repeat of a must have"):
        load_repeats(rec)


def test_the_recorder_lists_its_repeats_in_the_manifest() -> None:
    script = load_script("record-benchmarks")
    text = MANIFEST.format(name="x", workload="hackbench", extra="lost_events = 0\n")
    once = script.with_repeats(text, ["repeats/x.2.toml"])
    assert script.listed_repeats(once) == ["repeats/x.2.toml"]
    assert 'lost_events = 0\nrepeats = ["repeats/x.2.toml"]\n\n[roles]' in once
    twice = script.with_repeats(once, ["repeats/x.2.toml", "repeats/x.3.toml"])
    assert script.listed_repeats(twice) == ["repeats/x.2.toml", "repeats/x.3.toml"]
    assert twice.count("repeats =") == 1
    assert script.listed_repeats(text) == []


def test_the_recorder_makes_repeats_only_on_the_recordings_kind_of_machine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorder = load_script("record-benchmarks")
    hackbench = next(b for b in recorder.BENCHMARKS if b.name == "hackbench-socket")
    monkeypatch.setattr(recorder, "OUT", tmp_path)
    made: list[str] = []
    monkeypatch.setattr(
        recorder, "record_one", lambda b, scratch, preset, out, name: made.append((name, preset))
    )
    extra = 'machine = "AMD EPYC, 2 CPUs"\n'
    (tmp_path / "hackbench-socket.toml").write_text(
        MANIFEST.format(name="hackbench-socket", workload="hackbench", extra=extra)
    )
    monkeypatch.setattr(recorder, "this_machine", lambda: "Intel(R) Xeon(R) Processor, 2 CPUs")
    refused = r"recorded on AMD EPYC, 2 CPUs, and this machine is Intel"
    with pytest.raises(SystemExit, match=refused):
        recorder.record_repeats(hackbench, tmp_path, 2)
    assert made == []
    monkeypatch.setattr(recorder, "this_machine", lambda: "AMD EPYC, 2 CPUs")
    recorder.record_repeats(hackbench, tmp_path, 2)
    # Made on the recording's preset, which its manifest names (or the first guest's).
    assert made == [
        ("hackbench-socket.2", "kvm-guest-2cpu"),
        ("hackbench-socket.3", "kvm-guest-2cpu"),
    ]
    manifest = (tmp_path / "hackbench-socket.toml").read_text()
    assert recorder.listed_repeats(manifest) == [
        "repeats/hackbench-socket.2.toml",
        "repeats/hackbench-socket.3.toml",
    ]


def test_the_cli_lists_and_checks_a_recordings_runs() -> None:
    def dvfslab(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "dvfslab", *args], capture_output=True, text=True, check=False
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    runs = 1 + len(load_recording("hackbench-pipe-1cpu").repeats)
    listed = {line.split()[0]: line.split() for line in dvfslab("model", "list").splitlines()}
    assert str(runs) in listed["hackbench-pipe-1cpu"]
    single = next(n for n in shipped_recordings() if not load_recording(n).repeats)
    assert "1" in listed[single]
    table = dvfslab("model", "check", "hackbench-pipe-1cpu")
    assert f"the median of {runs} runs" in table
    assert "over the runs" in table
    report = json.loads(dvfslab("model", "check", "hackbench-pipe-1cpu", "--json"))
    assert report["repeats"] == runs - 1
    row = next(r for r in report["rows"] if r["role"] == "all" and r["statistic"] == "run_us.p50")
    assert len(row["recorded_runs"]) == runs
    assert row["recorded"] == sorted(row["recorded_runs"])[(runs - 1) // 2]


def test_the_recorders_manifest_says_whether_sessions_were_grouped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorder = load_script("record-benchmarks")
    tbench = next(b for b in recorder.BENCHMARKS if b.name == "tbench-2")

    class Recorded:
        lost_events = 0

    for state, key in (("autogroup off", "off"), ("autogroup on", "on"), ("no autogroup", "none")):
        monkeypatch.setattr("dvfslab.record.autogroup_state", lambda state=state: state)
        text = recorder.manifest(
            tbench, "x", Recorded(), 1.0, 10.0, "round trips", "kvm-guest-2cpu"
        )
        assert text.startswith("# Made by scripts/record-benchmarks on ")
        assert f", {state}.\n" in text.splitlines(keepends=True)[0]
        (tmp_path / "x.toml").write_text(text)
        (tmp_path / "x.txt").write_text(TRACE)
        recorded = load_recording(tmp_path / "x.toml")
        assert recorded.autogroup == key
        # tbench's tasks share the recorder's session: with autogroup on, the model groups them.
        grouped = "tbench:clients=2,autogroup=1"
        assert recorded.workload == (grouped if key == "on" else "tbench:clients=2")
    # pgbench's backends each start a session of their own: no group for the model.
    pgbench = next(b for b in recorder.BENCHMARKS if b.name == "pgbench-rw")
    text = recorder.manifest(pgbench, "x", Recorded(), 1.0, 10.0, "transactions", "kvm-guest-2cpu")
    assert (
        'workload = "pgbench:rw=1,clients=2,threads=2,scale=10,device=virtio,client_us=3.6"' in text
    )


def test_the_recorder_writes_each_shipped_recordings_workload(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A recording made again by the script is modelled as the shipped one is: its manifest's
    # workload is the shipped manifest's (all were made with autogroup on, but those whose
    # benchmark records with it off).
    recorder = load_script("record-benchmarks")
    # The commands name a git checkout and a netperf binary, which the script looks for.
    (tmp_path / "git" / "t").mkdir(parents=True)
    (tmp_path / "git" / "git").touch()
    netperf = tmp_path / "netperf"
    netperf.touch(mode=0o755)
    monkeypatch.setenv("GIT_SRC", str(tmp_path / "git"))
    monkeypatch.setenv("NETPERF", str(netperf))

    class Recorded:
        lost_events = 0

    benchmarks = {b.name: b for b in recorder.BENCHMARKS}
    for name in shipped_recordings():
        shipped = load_recording(name)
        # A second machine's recording is NAME-b (`--suffix`), its benchmark NAME's.
        benchmark = benchmarks.get(name) or benchmarks[name.removesuffix("-b")]
        state = "autogroup off" if benchmark.autogroup == "off" else "autogroup on"
        monkeypatch.setattr("dvfslab.record.autogroup_state", lambda state=state: state)
        text = recorder.manifest(
            benchmark, name, Recorded(), 1.0, 10.0, "operations", shipped.platform
        )
        (tmp_path / f"{name}.toml").write_text(text)
        (tmp_path / f"{name}.txt").write_text(TRACE)
        again = load_recording(tmp_path / f"{name}.toml")
        assert again.workload == shipped.workload, name
        assert again.operation_size == shipped.operation_size, name
        assert again.platform == shipped.platform, name


def test_the_recorder_runs_netperf_under_cubic_and_restores_the_machines_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorder = load_script("record-benchmarks")
    stream = next(b for b in recorder.BENCHMARKS if b.name == "netperf-tcp-stream")
    assert stream.sysctls == {"net.ipv4.tcp_congestion_control": "cubic"}
    sysctl = tmp_path / "net" / "ipv4" / "tcp_congestion_control"
    sysctl.parent.mkdir(parents=True)
    sysctl.write_text("bbr\n")
    with recorder.kernel_settings(stream.sysctls, tmp_path):
        assert sysctl.read_text() == "cubic"
    assert sysctl.read_text() == "bbr\n"
    with pytest.raises(RuntimeError), recorder.kernel_settings(stream.sysctls, tmp_path):
        raise RuntimeError("the benchmark failed")
    assert sysctl.read_text() == "bbr\n"
    missing = r"net.ipv4.tcp_congestion_control: this kernel has no"
    with (
        pytest.raises(SystemExit, match=missing),
        recorder.kernel_settings(stream.sysctls, tmp_path / "elsewhere"),
    ):
        pass

    class Recorded:
        lost_events = 0

    netperf = tmp_path / "netperf"
    netperf.touch(mode=0o755)
    monkeypatch.setenv("NETPERF", str(netperf))
    text = recorder.manifest(stream, "s", Recorded(), 1.0, 10.0, "bytes", "kvm-guest-2cpu-b")
    assert ", net.ipv4.tcp_congestion_control = cubic." in text.splitlines()[0]


def test_the_recorder_sets_autogroup_for_its_runs_and_restores_it(tmp_path: Path) -> None:
    recorder = load_script("record-benchmarks")
    sysctl = tmp_path / "sched_autogroup_enabled"
    sysctl.write_text("1\n")
    with recorder.autogroup("off", sysctl):
        assert sysctl.read_text() == "0"
        assert autogroup_state(sysctl) == "autogroup off"
    assert sysctl.read_text() == "1\n"
    # Restored when a run fails too; left alone when not asked for.
    with pytest.raises(RuntimeError), recorder.autogroup("off", sysctl):
        raise RuntimeError("the benchmark failed")
    assert sysctl.read_text() == "1\n"
    with recorder.autogroup(None, sysctl):
        assert sysctl.read_text() == "1\n"
    with (
        pytest.raises(SystemExit, match=r"no .*missing"),
        recorder.autogroup("on", tmp_path / "missing"),
    ):
        pass


def test_a_benchmark_recorded_both_ways_runs_with_its_own_autogroup_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # pgbench-rw-1cpu and its -flat twin show what the sessions' groups do: each is recorded
    # with autogroup as its benchmark says, whatever the machine has, which is then restored.
    recorder = load_script("record-benchmarks")
    sysctl = tmp_path / "sched_autogroup_enabled"
    sysctl.write_text("1\n")
    monkeypatch.setattr("dvfslab.record.AUTOGROUP", sysctl)
    seen: dict[str, str] = {}
    monkeypatch.setattr(
        recorder,
        "record_as_set",
        lambda b, *_: seen.__setitem__(b.name, autogroup_state(sysctl)),
    )
    benchmarks = {b.name: b for b in recorder.BENCHMARKS}
    for name in ("pgbench-rw-1cpu", "pgbench-rw-1cpu-flat", "pgbench-rw"):
        recorder.record_one(benchmarks[name], tmp_path, "kvm-guest-2cpu")
    assert seen == {
        "pgbench-rw-1cpu": "autogroup on",
        "pgbench-rw-1cpu-flat": "autogroup off",
        "pgbench-rw": "autogroup on",  # as the machine has it
    }
    assert sysctl.read_text() == "1\n"
