"""The README's commands as written: every file they name is shipped, and the ones that read a
shipped file run (from the repository's root, as a newcomer types them)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from conftest import run_cli

ROOT = Path(__file__).resolve().parent.parent


def readme_commands() -> list[list[str]]:
    """The `dvfslab ...` lines of the README's sh blocks, as argument lists (comments cut)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = []
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        for line in block.splitlines():
            for part in line.split("&&"):
                words = shlex.split(part, comments=True)
                if words[:1] == ["dvfslab"]:
                    commands.append(words[1:])
    return commands


def named_files(args: list[str]) -> list[str]:
    """The repository files an argument list names: paths, and python:FILE.py:CLASS specs."""
    files = []
    for arg in args:
        spec = re.match(r"python:([^:,]+\.py):", arg)
        if spec:
            files.append(spec.group(1))
        elif re.search(r"\.(txt|json|py|toml)$", arg) and "/" in arg:
            files.append(arg)
    return files


def test_every_file_a_readme_command_reads_is_shipped():
    named = [f for args in readme_commands() for f in named_files(args)]
    assert "examples/stepper.py" in named
    assert "tests/data/traces/lisa-juno-trace.txt" in named
    for path in named:
        assert (ROOT / path).is_file(), path


@pytest.mark.parametrize(
    "command",
    [c for c in readme_commands() if c[:2] == ["trace", "summary"] or "python:" in " ".join(c)],
    ids=lambda c: " ".join(c[:2]),
)
def test_the_readme_commands_on_shipped_files_run(command):
    if command[0] in ("compare", "run"):
        command = [*command, "--duration", "0.2"]  # as written but shorter
    run = run_cli(*command, cwd=ROOT)
    assert run.code == 0, run.stderr
