"""Small pieces of the commands' human and JSON views."""

from __future__ import annotations

import json


def print_json(value: object) -> None:
    print(json.dumps(value, indent=2))


def json_value(value: object) -> str:
    """A default as a user would type it: 2000 rather than 2000.0, "-" for none."""
    if value is None:
        return "-"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return value if isinstance(value, str) else json.dumps(value)


def mhz(khz: float) -> str:
    return f"{khz / 1000:.0f}" if khz else "-"
