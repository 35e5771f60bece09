"""Platform presets: the shipped ones by id, any preset file by path.

The shipped presets are `dvfslab/data/platforms/<id>.json`; the format is docs/platform-format.md.
The simulator validates a preset's fields; this module finds the text and makes sure it is JSON,
so that a syntax error is reported with its file and line before the simulator sees it.
"""

from __future__ import annotations

import json
import os
from importlib import resources
from pathlib import Path
from typing import Any, Union

from dvfslab import _core
from dvfslab._core import ConfigError
from dvfslab._files import read_text

PlatformRef = Union[str, "os.PathLike[str]"]
"""A shipped preset's id ("pixel6") or the path of a preset file ("./my-box.json")."""


def preset_ids() -> list[str]:
    """The ids of the shipped presets, sorted."""
    directory = resources.files("dvfslab") / "data" / "platforms"
    if not directory.is_dir():
        return []
    return sorted(
        entry.name[: -len(".json")] for entry in directory.iterdir() if entry.name.endswith(".json")
    )


def load_platform(platform: PlatformRef) -> tuple[str, str]:
    """Return (preset JSON text, source), where source names the preset in error messages.

    A string ending in ".json" or containing a path separator is a path; otherwise a shipped
    preset id, and failing that an existing file.
    """
    text, source = _preset_text(platform)
    return _extended(text, source), source


def _preset_text(platform: PlatformRef) -> tuple[str, str]:
    """The preset's own JSON text, as its file holds it, and its source."""
    if isinstance(platform, os.PathLike):
        return _read_preset_file(Path(platform))
    if not isinstance(platform, str):
        raise TypeError(f"platform must be a preset id or a path (got {type(platform).__name__})")
    if _looks_like_path(platform):
        return _read_preset_file(Path(platform))
    if platform in preset_ids():
        preset = resources.files("dvfslab") / "data" / "platforms" / f"{platform}.json"
        return preset.read_text(encoding="utf-8"), platform
    if Path(platform).is_file():
        return _read_preset_file(Path(platform))
    known = ", ".join(preset_ids()) or "none shipped"
    raise ConfigError(f"unknown platform {platform!r} (known: {known})")


def _extended(text: str, source: str) -> str:
    """A preset that `extends` a shipped one, as the whole preset: the base's fields with its
    own over them as a JSON merge patch (RFC 7396): objects merged key by key, a null removing
    the key, anything else (a number, a list, a declared constant given as a number) replaced;
    its `notes` follow the base's. Others unchanged."""
    doc = json.loads(text)
    if not isinstance(doc, dict) or "extends" not in doc:
        return text
    base_id = doc.pop("extends")
    if not isinstance(base_id, str) or base_id not in preset_ids():
        known = ", ".join(preset_ids())
        raise ConfigError(
            f"{source}: extends: expected a shipped preset id ({known}), got {base_id!r}"
        )
    base = json.loads(load_platform(base_id)[0])
    notes = base.get("notes", []) + doc.pop("notes", [])
    merged = _merged(base, doc)
    if notes:
        merged["notes"] = notes
    return json.dumps(merged)


def _merged(base: Any, over: Any) -> Any:
    if not isinstance(over, dict):
        return over
    merged = dict(base) if isinstance(base, dict) else {}
    for key, value in over.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = _merged(merged.get(key), value)
    return merged


def describe_platform(platform: PlatformRef) -> dict[str, Any]:
    """What the simulator makes of a preset: id, name, description, CPU counts, policies, ..."""
    info: dict[str, Any] = json.loads(_core.describe_platform(*load_platform(platform)))
    return info


def list_platforms() -> list[dict[str, Any]]:
    """Every shipped preset, described: [{"id", "description", "cpus", "policies", ...}]."""
    return [describe_platform(preset_id) for preset_id in preset_ids()]


def preset_values(doc: Any) -> Any:
    """A parsed preset with each declared constant (`{"value", "range", "source"}`,
    docs/platform-format.md) replaced by its value, as the simulator reads it."""
    if isinstance(doc, dict):
        if "value" in doc and "range" in doc:
            return doc["value"]
        return {key: preset_values(child) for key, child in doc.items()}
    if isinstance(doc, list):
        return [preset_values(child) for child in doc]
    return doc


def pointer_parent(doc: Any, pointer: str) -> tuple[Any, Any]:
    """The container and key (or index) a JSON Pointer (RFC 6901, "/clusters/0/power/c_eff_nf")
    names inside a parsed preset; KeyError, IndexError or ValueError when it names nothing."""
    tokens = [t.replace("~1", "/").replace("~0", "~") for t in pointer[1:].split("/")]
    node = doc
    for token in tokens[:-1]:
        node = node[int(token)] if isinstance(node, list) else node[token]
    return node, int(tokens[-1]) if isinstance(node, list) else tokens[-1]


def _looks_like_path(text: str) -> bool:
    separators = [sep for sep in (os.sep, os.altsep) if sep]
    return text.endswith(".json") or any(sep in text for sep in separators)


def _read_preset_file(path: Path) -> tuple[str, str]:
    text = read_text(path, "platform file")
    try:
        json.loads(text)
    except json.JSONDecodeError as e:
        raise ConfigError(
            f"{path}: invalid JSON at line {e.lineno}, column {e.colno}: {e.msg}"
        ) from None
    return text, str(path)
