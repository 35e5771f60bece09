"""The repository's scripts (scripts/, files without a .py suffix) loaded as modules, so that
tests can call their functions."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"


def load_script(name: str) -> ModuleType:
    """scripts/`name` as a module (its `main` is not run)."""
    module_name = name.replace("-", "_")
    loader = importlib.machinery.SourceFileLoader(module_name, str(SCRIPTS / name))
    spec = importlib.util.spec_from_loader(module_name, loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    # Registered first, as an import does: a dataclass in the script looks its module up.
    sys.modules[module_name] = module
    loader.exec_module(module)
    return module
