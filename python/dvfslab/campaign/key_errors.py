"""Errors about a parsed TOML document that name the file, the key and what was expected.

    campaigns/x.toml: benchmarks.tbench4.sweep.clients: expected a non-empty list of numbers
    or strings, got 4 (an integer)

`child` builds key paths the way TOML spells them (`configs."schedutil:invariant=1"`,
`platforms[2]`); `describe` shows a value with its TOML type.
"""

from __future__ import annotations

import json
import re
from typing import NoReturn

from dvfslab._core import ConfigError

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def child(path: str, key: str | int) -> str:
    """The key path of `key` inside the value at `path`."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    name = key if _BARE_KEY.fullmatch(key) else json.dumps(key, ensure_ascii=False)
    return f"{path}.{name}" if path else name


def describe(value: object) -> str:
    """A value as the user wrote it, with its TOML type: `4 (an integer)`, `a table`."""
    if isinstance(value, bool):
        return f"{str(value).lower()} (a boolean)"
    if isinstance(value, int):
        return f"{value} (an integer)"
    if isinstance(value, float):
        return f"{value} (a float)"
    if isinstance(value, str):
        return f"{json.dumps(value, ensure_ascii=False)} (a string)"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "a list"
    return f"a {type(value).__name__}"


class Checker:
    """Fails with a ConfigError naming the document `source` and the key path."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, path: str, message: str) -> NoReturn:
        raise ConfigError(
            f"{self.source}: {path}: {message}" if path else f"{self.source}: {message}"
        )
