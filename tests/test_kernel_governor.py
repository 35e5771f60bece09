"""Kernel governor source files (`-g kernel:PATH`, docs/kernel-governors.md), end to end.

The project's own small governor file (tests/data/kernel-governors/cpufreq_twostep.c) runs
everywhere a C compiler does. The kernel's schedutil runs where DVFSLAB_KERNEL_SRC names a
kernel tree (CI extracts Debian's linux-source-6.1 and 6.12); without one those tests are
skipped and say why: the repository ships no kernel source.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import dvfslab
from dvfslab._core import ConfigError
from dvfslab.campaign.model import run_key
from dvfslab.platforms import preset_ids

ROOT = Path(__file__).resolve().parent.parent
TWOSTEP = ROOT / "tests" / "data" / "kernel-governors" / "cpufreq_twostep.c"
SCHEDUTIL = "kernel/sched/cpufreq_schedutil.c"
KERNEL_TREES = [t for t in os.environ.get("DVFSLAB_KERNEL_SRC", "").split(":") if t]
needs_tree = pytest.mark.skipif(
    not KERNEL_TREES,
    reason="DVFSLAB_KERNEL_SRC names no kernel tree (docs/kernel-governors.md says how to get one)",
)


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dvfslab", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "python"), **(env or {})},
        check=False,
    )


def test_the_cli_runs_a_governor_file_with_its_tunable() -> None:
    spec = f"kernel:{TWOSTEP},kernel=6.1,up_util=300"
    args = ["-p", "skylake-e3-1240v5", "-g", spec, "-w", "periodic:threads=4", "--duration", "0.5"]
    out = cli("run", *args, "--json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["governor"] == f"kernel:path={TWOSTEP},kernel=6.1,up_util=300"
    # No util is above 1024: the CPUs stay at the bottom of the table, slower on average.
    calm_spec = f"kernel:{TWOSTEP},kernel=6.1,up_util=1024"
    calm = dvfslab.simulate("skylake-e3-1240v5", calm_spec, "periodic:threads=4", duration_s=0.5)
    average = lambda cpus: sum(c["avg_freq_khz"] for c in cpus) / len(cpus)  # noqa: E731
    assert average(calm.per_cpu) < average(result["per_cpu"])


def test_an_unknown_tunable_is_a_config_error_naming_the_known_ones() -> None:
    with pytest.raises(
        ConfigError, match=r"down_util: not a tunable .*its sysfs tunables: up_util"
    ):
        dvfslab.simulate(
            "pixel6", f"kernel:{TWOSTEP},kernel=6.1,down_util=1", "periodic", duration_s=0.1
        )


def test_without_a_c_compiler_one_line_says_what_to_install(tmp_path: Path) -> None:
    env = {"CC": str(tmp_path / "no-such-cc"), "DVFSLAB_CACHE_DIR": str(tmp_path)}
    spec = f"kernel:{TWOSTEP},kernel=6.1"
    out = cli("run", "-p", "pixel6", "-g", spec, "-w", "periodic", "--duration", "0.1", env=env)
    assert out.returncode == 1
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith("error: ")
    assert "there is no" in lines[0]
    assert "apt-get install gcc" in lines[0]


def test_a_stored_run_follows_the_governor_file(tmp_path: Path) -> None:
    tree = tmp_path / "kernel" / "sched"
    tree.mkdir(parents=True)
    governor_file = tree / "cpufreq_schedutil.c"
    governor_file.write_text("/* one */\n")
    key = lambda: run_key("{}", f"kernel:{tmp_path}", "periodic", 1.0, 0, "v")  # noqa: E731
    before = key()
    governor_file.write_text("/* two */\n")
    assert key() != before
    assert run_key("{}", f"kernel:{governor_file}", "periodic", 1.0, 0, "v") != before
    # ondemand's result follows the DBS code beside it too.
    drivers = tmp_path / "drivers" / "cpufreq"
    drivers.mkdir(parents=True)
    ondemand = drivers / "cpufreq_ondemand.c"
    ondemand.write_text('#include "cpufreq_governor.h"\n')
    (drivers / "cpufreq_governor.h").write_text("/* h */\n")
    (drivers / "cpufreq_governor.c").write_text("/* one */\n")
    od_key = lambda: run_key("{}", f"kernel:{ondemand}", "periodic", 1.0, 0, "v")  # noqa: E731
    before = od_key()
    (drivers / "cpufreq_governor.c").write_text("/* two */\n")
    assert od_key() != before


@needs_tree
@pytest.mark.parametrize("tree", KERNEL_TREES)
def test_the_kernels_schedutil_runs_on_every_preset(tree: str) -> None:
    for platform in preset_ids():
        r = dvfslab.simulate(platform, f"kernel:{tree}", "periodic:threads=2", duration_s=0.2)
        assert r.energy_j > 0, platform


@needs_tree
@pytest.mark.parametrize("tree", KERNEL_TREES)
def test_the_kernels_schedutil_decides_as_the_built_in_one(tree: str) -> None:
    makefile = (Path(tree) / "Makefile").read_text()
    fields = dict(
        (k.strip(), v.strip())
        for k, _, v in (line.partition("=") for line in makefile.splitlines()[:8])
        if k.strip() in ("VERSION", "PATCHLEVEL", "SUBLEVEL")
    )
    # A stable tree runs as its own update, with the backports the built-in follows there.
    version = f"{fields['VERSION']}.{fields['PATCHLEVEL']}"
    if fields.get("SUBLEVEL", "0") not in ("", "0"):
        version += f".{fields['SUBLEVEL']}"
    # A stable tree with 6.6's rule for a pending limits update but not 6.14's (see
    # carries_rules_the_built_in_lacks in crates/dvfslab-sim/tests/it/kernel_governor.rs) is
    # compared on acpi-cpufreq, where intel_cpufreq's flag plays no part.
    source = (Path(tree) / SCHEDUTIL).read_text()
    major, minor = (int(x) for x in version.split(".")[:2])
    busy_rule = "next_f < sg_policy->next_freq &&\n\t    !sg_policy->need_freq_update" in source
    cleared = "!cpufreq_driver_test_flags(CPUFREQ_NEED_UPDATE_LIMITS)" in source or (
        "if (sg_policy->need_freq_update)\n\t\tsg_policy->need_freq_update = false;" in source
    )
    # (the built-in has 6.6's rule from 6.6, and in 6.1.60+ and 6.5.9+ of the stable series)
    backported = (
        (major, minor) < (6, 6)
        and (major, minor) not in ((6, 1), (6, 5))
        and busy_rule
        and not cleared
    )
    compared = 0
    for platform, workload, keys in [
        ("juno-r2", "periodic:threads=6,run_us=2000,period_us=16000", ""),
        ("skylake-e3-1240v5", "dbench4:clients=2", ",driver=acpi-cpufreq" if backported else ""),
    ]:
        runs = [
            dvfslab.simulate(platform, gov, workload, duration_s=2.0, seed=3, explain=True)
            for gov in (f"schedutil:kernel={version}{keys}", f"kernel:{tree}{keys}")
        ]
        ours, theirs = (r.df_decisions()[["time_s", "policy", "resolved_khz"]] for r in runs)
        assert len(ours) > 5  # Juno's periodic load settles in a few requests from 6.6
        assert ours.reset_index(drop=True).equals(theirs.reset_index(drop=True)), platform
        compared += len(ours)
    assert compared > 50
    print(f"{version}: {compared} decisions compared")


def test_a_governor_file_replays_against_a_recording() -> None:
    trace = ROOT / "tests" / "data" / "traces" / "lisa-juno-schedutil.txt"
    spec = f"kernel:{TWOSTEP},kernel=4.19"
    out = cli("replay", "governor", str(trace), "-p", "juno-r0", "-g", spec)
    assert out.returncode == 0, out.stderr
    assert "model frequency changes" in out.stdout
    assert " 0 decisions" not in out.stdout
