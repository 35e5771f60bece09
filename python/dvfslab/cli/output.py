"""Small pieces of the commands' human and JSON views."""

from __future__ import annotations

import json
import math


def print_json(value: object) -> None:
    """`value` as JSON; a float that is not finite (no JSON number) becomes null."""
    print(json.dumps(finite(value), indent=2, allow_nan=False))


def finite(value: object) -> object:
    """`value` with every NaN or infinite float, at any depth, replaced by None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def json_value(value: object) -> str:
    """A default as a user would type it: 2000 rather than 2000.0, "-" for none."""
    if value is None:
        return "-"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return value if isinstance(value, str) else json.dumps(value)


def mhz(khz: float) -> str:
    return f"{khz / 1000:.0f}" if khz else "-"
