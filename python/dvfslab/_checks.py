"""Reading a parsed TOML document with errors that name the file, the key and what was expected.

    campaigns/x.toml: benchmarks.tbench4.sweep.clients: expected a non-empty list of numbers
    or strings, got 4 (an integer)

Every reader takes the key path of the value it reads; `child` builds the paths the way TOML
spells them (`configs."schedutil:invariant=1"`, `platforms[2]`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Collection
from typing import Any, NoReturn

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
    """Reads values out of one document; every failure is a ConfigError naming `source`."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, path: str, message: str) -> NoReturn:
        raise ConfigError(
            f"{self.source}: {path}: {message}" if path else f"{self.source}: {message}"
        )

    def expected(self, path: str, what: str, got: object) -> NoReturn:
        self.fail(path, f"expected {what}, got {describe(got)}")

    def table(
        self,
        value: object,
        path: str,
        *,
        required: Collection[str] = (),
        optional: Collection[str] = (),
        what: str = "a table",
    ) -> dict[str, Any]:
        """`value` as a table whose keys are all in `required` or `optional` (if any are given)."""
        if not isinstance(value, dict):
            self.expected(path, what, value)
        known = [*required, *optional]
        if known:
            for key in value:
                if key not in known:
                    self.fail(child(path, key), f"unknown key (known here: {', '.join(known)})")
        for key in required:
            if key not in value:
                where = f"{path}: " if path else ""
                raise ConfigError(f"{self.source}: {where}missing key '{key}'")
        return value

    def string(self, value: object, path: str, what: str = "a non-empty string") -> str:
        if not isinstance(value, str) or not value.strip():
            self.expected(path, what, value)
        return value

    def integer(self, value: object, path: str, minimum: int, maximum: int) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            self.expected(path, f"an integer in {minimum}..{maximum}", value)
        if not minimum <= value <= maximum:
            self.fail(path, f"expected an integer in {minimum}..{maximum}, got {value}")
        return value

    def seconds(self, value: object, path: str) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.expected(path, "a number of seconds > 0", value)
        if not math.isfinite(value) or value <= 0:
            self.fail(path, f"expected a number of seconds > 0, got {value}")
        return float(value)

    def strings(self, value: object, path: str, items: str, item: str) -> list[str]:
        """A non-empty list of distinct non-empty strings: `items` names them, `item` one."""
        if not isinstance(value, list) or not value:
            self.expected(path, f"a non-empty list of {items}", value)
        seen: set[str] = set()
        for i, item_value in enumerate(value):
            self.string(item_value, child(path, i), item)
            if item_value in seen:
                self.fail(child(path, i), f"{json.dumps(item_value)} is listed twice")
            seen.add(item_value)
        return list(value)
