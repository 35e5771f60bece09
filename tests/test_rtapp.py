"""rt-app files as workloads: `-w file.json` on the command line, a path in `dvfslab.simulate`."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

import dvfslab
from dvfslab import ConfigError

SMALL = "skylake-e3-1240v5"
# The examples shipped in the repository (docs/rtapp.md says what each shows).
SHIPPED = Path(__file__).resolve().parents[1] / "examples" / "rt-app"

PERIODIC = {
    "tasks": {"t0": {"cpus": [0], "run": 2000, "timer": {"ref": "unique", "period": 10000}}},
    "global": {"duration": 1, "calibration": "CPU0"},
}


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def run_args(workload: object, *extra: str) -> list[str]:
    return ["run", "-p", SMALL, "-g", "performance", "-w", str(workload), *extra]


def assert_one_line_error(run, expected: list[str]) -> None:
    assert run.code == 1, (run.stdout, run.stderr)
    assert "Traceback" not in run.stderr
    assert run.stderr.startswith("error: ")
    assert run.stderr.count("\n") == 1
    assert run.stdout == ""
    for text in expected:
        assert text in run.stderr


def example_files() -> list[Path]:
    """The shipped examples, and rt-app's own when DVFSLAB_RTAPP_EXAMPLES names their folder.

    A named folder that is missing is returned as it is, for the test to fail on it.
    """
    files = sorted(SHIPPED.glob("*.json"))
    upstream = os.environ.get("DVFSLAB_RTAPP_EXAMPLES")
    if upstream is not None:
        folder = Path(upstream)
        files += sorted(folder.glob("*.json")) if folder.is_dir() else [folder]
    return files


def example_id(path: Path) -> str:
    return path.name if path.parent == SHIPPED else f"upstream/{path.name}"


def test_cli_runs_an_rtapp_file(cli, tmp_path):
    path = write(tmp_path, "periodic.json", json.dumps(PERIODIC))
    run = cli(*run_args(path, "--duration", "0.5", "--json"))
    assert run.code == 0, run.stderr
    result = json.loads(run.stdout)
    assert result["workload"] == f"rt-app:{path}"
    metric = result["metric"]
    assert (metric["name"], metric["unit"], metric["better"]) == ("run_stretch", "x", "lower")
    # Pinned to CPU 0, the calibration CPU, at its maximum frequency: runs take their time.
    assert metric["value"] == pytest.approx(1.0, abs=0.01)


def test_cli_shows_the_metric_of_a_shipped_example(cli):
    path = SHIPPED / "cond-handover.json"
    run = cli(*run_args(path, "--duration", "0.3"))
    assert run.code == 0, run.stderr
    assert f"rt-app:{path}" in run.stdout
    assert "run_stretch" in run.stdout


def test_the_repositorys_own_example_runs_as_the_readme_shows(cli):
    path = SHIPPED / "playback.json"
    run = cli("run", "-p", "juno-r2", "-g", "schedutil", "-w", str(path), "--json")
    assert run.code == 0, run.stderr
    result = json.loads(run.stdout)
    assert result["metric"]["name"] == "run_stretch"
    # Its global.duration, 2 s, bounds the run; three periodic threads keep CPUs busy.
    assert result["sim_time_s"] == pytest.approx(2.0)
    assert sum(c["busy_pct"] > 10 for c in result["per_cpu"]) >= 2


def test_the_shipped_examples_are_there():
    assert len(list(SHIPPED.glob("*.json"))) == 12


@pytest.mark.parametrize("path", example_files(), ids=example_id)
def test_every_example_file_runs(path):
    assert path.is_file(), f"DVFSLAB_RTAPP_EXAMPLES={path}: no such folder"
    result = dvfslab.simulate("pixel6", "schedutil", path, duration_s=0.2)
    assert result.workload == f"rt-app:{path}"
    assert result.metric.name == "run_stretch"
    assert result.metric.value >= 0.0


def test_a_run_stretches_at_a_lower_frequency(tmp_path):
    path = write(tmp_path, "periodic.json", json.dumps(PERIODIC))
    fast = dvfslab.simulate(SMALL, "userspace:scaling_setspeed=3900000", path, duration_s=0.3)
    slow = dvfslab.simulate(SMALL, "userspace:scaling_setspeed=1300000", str(path), duration_s=0.3)
    assert fast.metric.value == pytest.approx(1.0, abs=0.01)
    assert slow.metric.value == pytest.approx(3.0, abs=0.03)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            '{"tasks": {"t0": {"run": "fast"}}}',
            ["tasks.t0.run: expected an integer >= 0 (µs)"],
            id="bad event value",
        ),
        pytest.param(
            '{"tasks": {"t0": {"phases": {"p1": {"timer": {"ref": "t", "period": "x"}}}}}}',
            ["tasks.t0.phases.p1.timer.period: expected an integer"],
            id="bad timer period",
        ),
        pytest.param(
            '{"tasks": {"t0": {"run": 1000, "slep": 1000}}}',
            ["tasks.t0.slep: unknown key"],
            id="unknown key",
        ),
        pytest.param(
            '{"tasks": {"t0": {"run": 1000, "fork": "ghost"}}}',
            ["tasks.t0.fork", "ghost"],
            id="unknown fork target",
        ),
        pytest.param(
            '{"tasks": {"t0": {"cpus": [64], "run": 1000}}}',
            ["tasks.t0.cpus: CPU 64 does not exist"],
            id="no such CPU",
        ),
        pytest.param(
            '{"tasks": {"t0": {"instance": 100000000, "run": 1000}}}',
            ["tasks.t0.instance: 100000000 threads: a run creates at most 65536"],
            id="too many threads",
        ),
        pytest.param(
            '{"tasks": {"a": {"lock": "x", "lock1": "y", "unlock": "y", "unlock1": "x"},'
            ' "b": {"lock": "y", "lock1": "x", "unlock": "x", "unlock1": "y"}}}',
            ['tasks.b.lock1: takes "x" while holding "y"', "a and b can deadlock"],
            id="opposite lock orders",
        ),
        pytest.param(
            '{"tasks": {"t0": {"run": 1000, "unlock": "m"}}}',
            ['tasks.t0.unlock: unlocks "m", which the thread does not hold'],
            id="unlock not held",
        ),
        pytest.param(
            '{"tasks": {"t0": {"loop": -3, "run": 1000}}}',
            ["tasks.t0.loop: expected -1 (forever) or a count >= 1, got -3"],
            id="negative loop",
        ),
        pytest.param(
            '{\n  "tasks": {\n    "t0": {"run": 1000,, }\n  }\n}',
            ["line 3, column 24"],
            id="malformed JSON",
        ),
    ],
)
def test_cli_errors_name_the_file_and_the_json_path(cli, tmp_path, text, expected):
    path = write(tmp_path, "bad.json", text)
    assert_one_line_error(
        cli(*run_args(path, "--duration", "0.1")), [f"rt-app {path}: ", *expected]
    )


def test_a_missing_file_is_named(cli, tmp_path):
    path = tmp_path / "missing.json"
    assert_one_line_error(cli(*run_args(path)), [f"rt-app file {path} does not exist"])


def test_api_errors_are_config_errors(tmp_path):
    path = write(tmp_path, "bad.json", '{"tasks": {"t0": {"sleep": -5}}}')
    with pytest.raises(ConfigError, match=r"bad\.json: tasks\.t0\.sleep: expected an integer"):
        dvfslab.simulate(SMALL, "performance", path, duration_s=0.1)


def _traced(doc: dict[str, object], kernel: str) -> str:
    """`doc` run on juno-r2 under performance at `kernel`, as ftrace text."""
    from dvfslab.api import simulate_text
    from dvfslab.traces.ftrace import render

    governor = f"performance:kernel={kernel}"
    result = simulate_text("juno-r2", governor, json.dumps(doc), "policies.json", timeline=True)
    return render(result)


def test_nice_values_weigh_threads_and_the_trace_prints_their_prio():
    # Two spinning threads at nice 0 and 5 on one CPU share it as their weights, 1024 : 335.
    doc = {
        "global": {"duration": 1, "calibration": 100},
        "tasks": {
            name: {"priority": nice, "cpus": [0], "loop": -1, "run": 1000}
            for name, nice in (("nice0", 0), ("nice5", 5))
        },
    }
    text = _traced(doc, "6.18")
    runtime = {"nice0-0": 0, "nice5-1": 0}
    for comm, ns in re.findall(r"sched_stat_runtime: comm=(\S+) pid=\d+ runtime=(\d+)", text):
        runtime[comm] += int(ns)
    assert runtime["nice0-0"] / runtime["nice5-1"] == pytest.approx(1024 / 335, rel=0.03)
    assert "prev_comm=nice5-1 prev_pid=2 prev_prio=125" in text
    assert "prev_comm=nice0-0 prev_pid=1 prev_prio=120" in text


def _switch_ins_after_wakeups(text: str, comm: str) -> list[tuple[float, float]]:
    """(woken, switched in) times of each of `comm`'s wake-ups."""
    woken_at: float | None = None
    pairs = []
    for line in text.splitlines():
        t = re.search(r" (\d+\.\d+): ", line)
        if t is None:
            continue
        if f"sched_wakeup: comm={comm} " in line:
            woken_at = float(t.group(1))
        elif f"next_comm={comm} " in line and woken_at is not None:
            pairs.append((woken_at, float(t.group(1))))
            woken_at = None
    return pairs


@pytest.mark.parametrize("kernel", ["5.15", "6.18"])
def test_batch_and_idle_threads_never_preempt_by_waking_and_idle_ones_always_yield(kernel):
    # A thread that runs 0.1 ms every 2 ms beside one that spins, both on CPU 0.
    def doc(spinner: str, sleeper: str) -> dict[str, object]:
        return {
            "global": {"duration": 1, "calibration": 100},
            "tasks": {
                "spin": {"policy": spinner, "cpus": [0], "loop": -1, "run": 1000},
                "wake": {"policy": sleeper, "cpus": [0], "loop": -1, "run": 100, "sleep": 2000},
            },
        }

    tick_s = 0.004  # juno-r2's HZ 250
    # A SCHED_BATCH thread waits for the spinner's tick to preempt it, every time.
    waits = _switch_ins_after_wakeups(_traced(doc("SCHED_OTHER", "SCHED_BATCH"), kernel), "wake-1")
    assert len(waits) > 50
    at_ticks = [s for _, s in waits if abs(s / tick_s - round(s / tick_s)) < 1e-4]
    assert len(at_ticks) == len(waits), waits[:5]
    # A spinning SCHED_IDLE thread gives way at once to any other that wakes, even a
    # SCHED_BATCH one, which would wait for the tick beside any other spinner.
    waits = _switch_ins_after_wakeups(_traced(doc("SCHED_IDLE", "SCHED_BATCH"), kernel), "wake-1")
    assert len(waits) > 400
    assert max(s - w for w, s in waits) < 20e-6
