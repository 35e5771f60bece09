"""The C probes behind the guest preset's measured costs (scripts/probes/, docs/recording.md):
each builds without warnings, and the TCP stream probe runs and reports what it measured."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

PROBES = Path(__file__).resolve().parent.parent / "scripts" / "probes"

needs_cc = pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")


def build(source: Path, out: Path) -> subprocess.CompletedProcess[str]:
    cmd = ["cc", "-O2", "-Wall", "-Werror", "-pthread", str(source), "-o", str(out)]
    return subprocess.run(cmd, capture_output=True, text=True)


@needs_cc
@pytest.mark.parametrize("source", sorted(PROBES.glob("*.c")), ids=lambda p: p.name)
def test_each_probe_builds_without_warnings(source: Path, tmp_path: Path) -> None:
    done = build(source, tmp_path / source.stem)
    assert done.returncode == 0, done.stderr


@needs_cc
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
def test_the_tcp_stream_probe_times_its_reads_and_the_sender(tmp_path: Path) -> None:
    binary = tmp_path / "tcp-stream-recv"
    assert build(PROBES / "tcp-stream-recv.c", binary).returncode == 0
    cpus = sorted(os.sched_getaffinity(0))[:2]
    args = [str(binary), str(cpus[0]), str(cpus[1]), "16384", "65536", "0.5"]
    done = subprocess.run(args, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    m = re.search(
        r": (\d+) reads, (-?[\d.]+) us \+ (-?[\d.]+) ns/byte a read"
        r" \(mean (\d+) bytes in ([\d.]+) us\); sender ([\d.]+) ns/byte;"
        r" (\d+) wake-ups find (\d+) bytes queued",
        done.stdout,
    )
    assert m, done.stdout
    reads, mean_bytes, mean_us = int(m[1]), int(m[4]), float(m[5])
    sender, wakeups, queued = float(m[6]), int(m[7]), int(m[8])
    # Every read returns at most the 64 KiB asked for, and something.
    assert reads > 0
    assert 0 < mean_bytes <= 65536
    assert mean_us > 0
    assert sender > 0
    # Each wake-up reads at least once and finds something queued.
    assert 0 < wakeups <= reads
    assert queued > 0
