"""Shared test helpers: the CLI run the way a user runs it, and the shipped platform presets.

Tests go through the public surface only: `dvfslab.simulate` and friends, and the `dvfslab`
command (as `python -m dvfslab`, so the interpreter under test is the one that runs it).
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from dvfslab.platforms import load_platform, preset_values

PRESET_IDS = (
    "broadwell-e5-2698v4-2s",
    "epyc7742-2s",
    "haswell-e5-2670v3-2s",
    "hikey960",
    "i7-2600k",
    "juno-r0",
    "juno-r2",
    "kvm-guest-2cpu",
    "kvm-guest-2cpu-b",
    "pixel6",
    "power8-powernv",
    "skylake-e3-1240v5",
)

# A randomised workload: the jitter draws from the run's seed.
PERIODIC_JITTERED = "periodic:threads=4,run_us=1000,period_us=8000,jitter_pct=20"


@dataclass(frozen=True)
class CliRun:
    code: int
    stdout: str
    stderr: str


def run_cli(*args: str, cwd: Path | None = None) -> CliRun:
    """Run `python -m dvfslab ARGS...` and return its exit status and output."""
    proc = subprocess.run(
        [sys.executable, "-m", "dvfslab", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        check=False,
    )
    return CliRun(proc.returncode, proc.stdout, proc.stderr)


class Presets:
    """The shipped presets as files and as data (docs/platform-format.md)."""

    ids = PRESET_IDS

    @staticmethod
    def path(platform_id: str) -> Path:
        return Path(str(resources.files("dvfslab") / "data" / "platforms" / f"{platform_id}.json"))

    def doc(self, platform_id: str) -> dict[str, Any]:
        """The preset's data, declared constants as their values (as the simulator reads it)."""
        doc: dict[str, Any] = preset_values(json.loads(load_platform(platform_id)[0]))
        return doc

    def hardware_freqs_khz(self, platform_id: str) -> set[int]:
        """Every frequency the hardware can run: P-states/OPPs, turbo bins, min, base, max."""
        freqs: set[int] = set()
        for cluster in self.doc(platform_id)["clusters"]:
            f = cluster["frequency"]
            freqs.update(f["pstates_khz"])
            freqs.update(f["turbo_khz_by_active_cores"] or ())
            freqs.update((f["min_khz"], f["base_khz"], f["max_khz"]))
        return freqs

    def idle_state_names(self, platform_id: str) -> set[str]:
        return {s["name"] for c in self.doc(platform_id)["clusters"] for s in c["idle_states"]}

    def write_edited(self, platform_id: str, directory: Path, edit: Any) -> Path:
        """Write a copy of a shipped preset, changed by edit(doc), and return its path."""
        doc = self.doc(platform_id)
        edit(doc)
        path = directory / f"{platform_id}-edited.json"
        path.write_text(json.dumps(doc, indent=2), encoding="utf-8")
        return path


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test that takes `platform_id` runs once for every shipped preset."""
    if "platform_id" in metafunc.fixturenames:
        metafunc.parametrize("platform_id", PRESET_IDS)


@pytest.fixture(scope="session")
def cli() -> Any:
    return run_cli


@pytest.fixture(scope="session")
def presets() -> Presets:
    return Presets()


@pytest.fixture(scope="session")
def periodic_jittered() -> str:
    return PERIODIC_JITTERED
