"""The context switches `dvfslab record` reads from /proc around its window, and what
`dvfslab model check` makes of them (dvfslab.switch_counts, docs/recording.md)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from dvfslab import switch_counts
from dvfslab.record import _trace_window
from dvfslab.recordings.behaviour import ALL
from dvfslab.recordings.check import untraced_preempted_pct


def status(name: str, voluntary: int, involuntary: int) -> str:
    return (
        f"Name:\t{name}\nState:\tS (sleeping)\nvoluntary_ctxt_switches:\t{voluntary}\n"
        f"nonvoluntary_ctxt_switches:\t{involuntary}\n"
    )


def fake_proc(root: Path, tasks: dict[tuple[int, int], str]) -> Path:
    """A /proc with the status file of each (pid, tid)."""
    for (pid, tid), text in tasks.items():
        folder = root / str(pid) / "task" / str(tid)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "status").write_text(text)
    (root / "self").mkdir(exist_ok=True)
    return root


def test_every_thread_on_the_machine_is_read_and_an_unreadable_one_left_out(tmp_path: Path) -> None:
    proc = fake_proc(
        tmp_path,
        {
            (10, 10): status("tbench", 5, 1),
            (10, 11): status("tbench", 7, 2),
            (20, 20): status("tbench_srv", 3, 4),
            (30, 30): "Name:\tgone\n",  # exited while read: no counters left
        },
    )
    assert switch_counts.machine_tasks(proc) == {
        10: ("tbench", 5, 1),
        11: ("tbench", 7, 2),
        20: ("tbench_srv", 3, 4),
    }


def test_switches_between_two_readings_are_summed_by_comm() -> None:
    before = {
        10: ("tbench", 5, 1),
        11: ("tbench", 7, 2),
        20: ("tbench_srv", 3, 4),
        40: ("idle", 1, 0),
    }
    after = {
        10: ("tbench", 105, 31),
        11: ("tbench", 57, 12),
        20: ("tbench_srv", 103, 4),
        40: ("idle", 1, 0),  # did not switch: left out
        50: ("sh", 2, 1),  # started since: counted from its start
    }  # 30, gone since, is not known
    assert switch_counts.between(before, after) == {
        "sh": (2, 1),
        "tbench": (150, 40),
        "tbench_srv": (100, 0),
    }


def test_the_header_lines_read_back_and_a_header_without_them_has_none() -> None:
    counts = {"tbench": (150, 40), "tbench_srv": (100, 0)}
    header = (
        "# dvfslab record: tbench -t 4 2 127.0.0.1\n"
        "# pid 7, kernel 6.18, autogroup on, clock mono, exit status 0, 4.1 s, traced from 2 s\n"
        + switch_counts.header_line("untraced", 1.0012, counts)
        + switch_counts.header_line("traced", 0.9987, {"tbench": (10, 90)})
        + "cpus=2\n# tracer: nop\n#\n"
    )
    assert switch_counts.read_header(header + "  tbench-7 [000] ...\n") == {
        "untraced": (1.001, counts),
        "traced": (0.999, {"tbench": (10, 90)}),
    }
    assert switch_counts.read_header("cpus=2\n# tracer: nop\n  x-1 [000]\n") == {}
    # Only the header counts: a line like it among the events is not read.
    events = "cpus=2\n  x-1 [000] d..2. 1.0: sched_switch: ...\n" + switch_counts.header_line(
        "untraced", 1.0, counts
    )
    assert switch_counts.read_header(events) == {}


def test_each_roles_untraced_preemption_share_is_over_its_comms() -> None:
    counts = {"tbench": (300, 100), "tbench_srv": (90, 10), "sshd": (5, 5)}
    roles = {"client": "^tbench$", "server": "^tbench_srv$", "db": "^postgres$"}
    shares = untraced_preempted_pct(counts, roles)
    # all: (100 + 10) / (400 + 100); sshd is no role's; no postgres switched.
    assert shares == {"client": 25.0, "server": 10.0, "db": None, ALL: 22.0}


@pytest.mark.parametrize("lead", [True, False])
def test_a_window_reads_the_switches_over_it_and_over_as_long_before_it(
    lead: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The reader is called at each edge: the untraced stretch's start (only when the window
    # starts late enough), the window's start (before tracing starts) and its end (after).
    readings = iter([{1: ("a", 0, 0)}, {1: ("a", 10, 5)}, {1: ("a", 30, 6)}])
    monkeypatch.setattr(switch_counts, "machine_tasks", lambda: next(readings))
    writes: list[str] = []

    class Instance:
        def write(self, name: str, value: str) -> None:
            writes.append(f"{name}={value}")

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1.0)"])
    try:
        window = (0.3, 0.2) if lead else (0.0, 0.2)
        got = _trace_window(child, time.monotonic(), window, None, Instance())  # type: ignore[arg-type]
    finally:
        child.kill()
        child.wait()
    assert writes == ["tracing_on=1", "tracing_on=0"]
    counts = {label: by_comm for label, (_, by_comm) in got.items()}
    if lead:
        assert counts == {"untraced": {"a": (10, 5)}, "traced": {"a": (20, 1)}}
        assert all(0.15 < seconds < 0.6 for seconds, _ in got.values())
    else:
        assert counts == {"traced": {"a": (10, 5)}}
