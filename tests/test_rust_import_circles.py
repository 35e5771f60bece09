"""The Rust simulator's files import one another in circles only within a folder.

`scripts/import-circles` reads every `crate::`, `super::` and `self::` path of the crate's
files (tests left out); a circle is a set of files that reach one another. `sim/` imports `hw/`
and `sched/`, and neither imports `sim/` (docs/architecture.md).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "import-circles"


def circles(src: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--strict", "--src", str(src)],
        capture_output=True,
        text=True,
        check=False,
    )


def test_no_import_circle_of_the_simulator_spans_two_folders() -> None:
    got = circles(ROOT / "crates" / "dvfslab-sim" / "src")
    assert got.returncode == 0, got.stdout + got.stderr


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_a_circle_over_two_folders_is_found_and_fails(tmp_path: Path) -> None:
    src = write(
        tmp_path,
        {
            "lib.rs": "pub mod a;\npub mod b;\n",
            "a/mod.rs": "use crate::b::{Thing, other::{More}};\npub struct A;\n",
            "b/mod.rs": "pub mod other;\npub struct Thing;\n",
            "b/other.rs": "pub struct More(crate::a::A);\n",
        },
    )
    got = circles(src)
    assert got.returncode == 1
    assert "2 files over 2 folder(s) [a, b]: a/mod.rs, b/other.rs" in got.stdout


def test_a_circle_within_a_folder_and_test_modules_pass(tmp_path: Path) -> None:
    src = write(
        tmp_path,
        {
            "lib.rs": "pub mod a;\npub mod b;\n",
            "a/mod.rs": "pub mod x;\nuse self::x::X;\npub struct A;\n",
            "a/x.rs": "pub struct X(super::A);\n",
            # A test module's imports are not the file's: no circle with a/.
            "b/mod.rs": "pub struct B;\n#[cfg(test)]\nmod tests {\n    use crate::a::A;\n}\n",
        },
    )
    got = circles(src)
    assert got.returncode == 0, got.stdout
    assert "2 files over 1 folder(s) [a]: a/mod.rs, a/x.rs" in got.stdout
    # b/ reaches a/ only from its tests; with a real import a/ -> b/ there is still no circle.
    (src / "a" / "x.rs").write_text("pub struct X(super::A, crate::b::B);\n")
    assert circles(src).returncode == 0
