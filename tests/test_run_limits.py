"""One run at the edges: fork bombs, degenerate presets, extreme knobs, huge task counts, and a
run stopped by Ctrl-C or by its progress callback."""

from __future__ import annotations

import io
import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import dvfslab
from dvfslab import _progress

SKYLAKE = "skylake-e3-1240v5"
# About 300,000 events a simulated second: a run far longer than any test waits for.
LONG_SIMULATION = ("haswell-e5-2670v3-2s", "schedutil", "tbench:clients=4")
LONG_RUN = ("-p", LONG_SIMULATION[0], "-g", LONG_SIMULATION[1], "-w", LONG_SIMULATION[2])
LONG_RUN = (*LONG_RUN, "--duration", "1000")
FORK_BOMB = '{"tasks": {"a": {"fork": "a", "sleep": 1000, "loop": -1}}}'


def test_a_fork_bomb_is_a_one_line_error_naming_the_limit(cli: Any) -> None:
    run = cli("run", "-p", SKYLAKE, "-g", "performance", "-w", FORK_BOMB, "--duration", "0.05")
    assert run.code == 1
    assert run.stderr.count("\n") == 1, run.stderr
    assert run.stderr.startswith("error: ")
    assert "65536 tasks" in run.stderr
    assert "'a-0'" in run.stderr


# A child process runs one rt-app file and prints its simulate() time (s) and its peak RSS (MB).
RTAPP_PROBE = """
import json, sys, time
import dvfslab
start = time.monotonic()
try:
    dvfslab.simulate("skylake-e3-1240v5", "performance", sys.argv[1], duration_s=float(sys.argv[2]))
    outcome = "ran"
except dvfslab.DvfsError as e:
    outcome = str(e)
wall_s = time.monotonic() - start
# VmHWM, not ru_maxrss: the latter keeps the parent's peak across fork and exec.
status = open("/proc/self/status").read()
peak_kb = int(next(l.split()[1] for l in status.splitlines() if l.startswith("VmHWM:")))
print(json.dumps([wall_s, peak_kb / 1024, outcome]))
"""


def probe_rtapp(path: Path, doc: dict[str, Any], duration_s: float) -> tuple[float, float, str]:
    path.write_text(json.dumps(doc))
    out = subprocess.run(
        [sys.executable, "-c", RTAPP_PROBE, str(path), str(duration_s)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    wall_s, rss_mb, outcome = json.loads(out.stdout)
    return wall_s, rss_mb, outcome


def test_memory_grows_linearly_with_distinct_rtapp_tasks(tmp_path: Path) -> None:
    # Each task template has its own latency slots: a table of every slot per task once made
    # this quadratic (20,000 one-shot tasks: 3.2 GB; now about 100 MB).
    tasks = {f"t{i}": {"loop": 1, "run": 1000, "sleep": 1000} for i in range(20_000)}
    _, rss_mb, outcome = probe_rtapp(tmp_path / "oneshot.json", {"tasks": tasks}, 3.0)
    assert outcome == "ran"
    assert rss_mb < 400, f"{rss_mb:.0f} MB"


def test_twenty_thousand_sleeping_tasks_take_no_quadratic_time(tmp_path: Path) -> None:
    # All wake at once, thousands on each CPU: the run-queue and the idle governor's next timer
    # once scanned them all at every pick and idle entry (0.005 s simulated took 9.7 s).
    tasks = {f"t{i}": {"loop": -1, "sleep": 1000} for i in range(20_000)}
    wall_s, rss_mb, outcome = probe_rtapp(tmp_path / "sleepers.json", {"tasks": tasks}, 0.02)
    assert outcome == "ran"
    assert wall_s < 8, f"{wall_s:.1f} s"
    assert rss_mb < 400, f"{rss_mb:.0f} MB"


def test_a_task_forking_itself_without_pause_reaches_the_limit_at_once(tmp_path: Path) -> None:
    # Past the limit the run stops at the end of the event: the programs it would still have
    # interpreted (each looping to the stuck-program bound) are not (once 10 s and 799 MB).
    doc = {"tasks": {"a": {"fork": "a", "loop": -1}}}
    wall_s, rss_mb, outcome = probe_rtapp(tmp_path / "bomb.json", doc, 10.0)
    assert "forked past the limit of 65536 tasks" in outcome
    assert wall_s < 5, f"{wall_s:.1f} s"
    assert rss_mb < 250, f"{rss_mb:.0f} MB"


def test_an_rtapp_file_with_many_sleeping_instances_runs(tmp_path: Path) -> None:
    path = tmp_path / "many.json"
    path.write_text(json.dumps({"tasks": {"a": {"instance": 20000, "sleep": 1000, "loop": -1}}}))
    result = dvfslab.simulate(SKYLAKE, "performance", path, duration_s=0.002)
    assert result.sim_time_s == pytest.approx(0.002)


@pytest.mark.parametrize(
    ("field", "value"),
    [("idle_states", []), ("cores_per_package", 0)],
)
def test_a_degenerate_preset_is_an_error_naming_the_file_and_field(
    cli: Any, presets: Any, tmp_path: Path, field: str, value: object
) -> None:
    def edit(doc: dict[str, Any]) -> None:
        doc["clusters"][0][field] = value

    path = presets.write_edited(SKYLAKE, tmp_path, edit)
    run = cli("run", "-p", str(path), "-g", "performance", "-w", "cpu-bound", "--duration", "0.01")
    assert run.code == 1
    assert run.stderr.startswith("error: ")
    assert run.stderr.count("\n") == 1, run.stderr
    assert path.name in run.stderr
    assert f"clusters[0].{field}" in run.stderr


@pytest.mark.parametrize("hz", ["1e-308", "1e-11"])
def test_kernel_threads_too_rare_to_wake_leave_the_run_unchanged(hz: str) -> None:
    without = dvfslab.simulate(SKYLAKE, "performance", "cpu-bound:threads=1", duration_s=0.2)
    with_them = dvfslab.simulate(
        SKYLAKE, "performance", f"cpu-bound:threads=1,kthread_hz={hz}", duration_s=0.2
    )
    assert with_them.metric == without.metric
    assert with_them.energy_j == without.energy_j


def test_sixty_four_thousand_threads_start_quickly() -> None:
    result = dvfslab.simulate(SKYLAKE, "performance", "cpu-bound:threads=65536", duration_s=0.005)
    # Placing each thread once scanned every run-queue: tens of seconds for these 64 Ki.
    assert result.wall_time_s < 5.0


def test_ctrl_c_stops_a_long_run_with_status_130_and_no_traceback() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "dvfslab", "run", *LONG_RUN],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(1.5)  # imports done, the simulation under way
    assert proc.poll() is None
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=10)
    assert time.monotonic() - sent < 2.0
    assert proc.returncode == 130
    assert stderr == "error: interrupted\n"
    assert stdout == ""


def test_a_keyboard_interrupt_stops_simulate() -> None:
    def interrupt(now_s: float, end_s: float) -> None:
        signal.raise_signal(signal.SIGINT)

    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        dvfslab.simulate(*LONG_SIMULATION, duration_s=1000, progress=interrupt)
    assert time.monotonic() - started < 5.0


def test_progress_sees_simulated_time_advance_and_may_stop_the_run() -> None:
    seen: list[tuple[float, float]] = []

    class Enough(Exception):
        pass

    def progress(now_s: float, end_s: float) -> None:
        seen.append((now_s, end_s))
        if len(seen) == 3:
            raise Enough

    with pytest.raises(Enough):
        dvfslab.simulate(*LONG_SIMULATION, duration_s=1000, progress=progress)
    assert [end for _, end in seen] == [1000.0] * 3
    assert 0 < seen[0][0] < seen[1][0] < seen[2][0] < 1000


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_run_bar_is_drawn_on_a_terminal_only(monkeypatch: pytest.MonkeyPatch) -> None:
    with _progress.run_progress("simulating", enabled=True, stream=io.StringIO()) as progress:
        assert progress is None
    with _progress.run_progress("simulating", enabled=False, stream=_Terminal()) as progress:
        assert progress is None
    monkeypatch.setattr(_progress, "RUN_BAR_DELAY_S", 0.0)
    terminal = _Terminal()
    with _progress.run_progress("simulating", enabled=True, stream=terminal) as progress:
        assert progress is not None
        progress(0.5, 2.0)
    assert "simulating" in terminal.getvalue()


def test_a_json_run_into_a_pipe_prints_nothing_on_stderr(cli: Any) -> None:
    run = cli("run", "-p", SKYLAKE, "-g", "performance", "-w", "cpu-bound", "--json")
    assert run.code == 0
    assert run.stderr == ""
    assert json.loads(run.stdout)["schema"] == "dvfslab-run/1"
