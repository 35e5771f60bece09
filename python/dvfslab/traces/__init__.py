"""Traces of one run, in the formats the field's tools read. One exporter per format:

- `.json`: Chrome / Perfetto trace-event JSON (ui.perfetto.dev and chrome://tracing open it);
- `.txt`:  ftrace text as the kernel's trace file prints it (sched_switch, sched_wakeup,
  cpu_frequency, cpu_idle), which Perfetto, trace-cmd-style and LISA-style parsers read.

Both need a run recorded with `timeline=True`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from dvfslab._core import ConfigError

if TYPE_CHECKING:
    from dvfslab.result import SimResult

from dvfslab.traces import chrome, ftrace

EXPORTERS: dict[str, Callable[[SimResult], str]] = {".json": chrome.render, ".txt": ftrace.render}


def write_trace(result: SimResult, path: str | os.PathLike[str]) -> Path:
    """Write `result`'s trace to `path`, in the format its suffix names; return the path."""
    from dvfslab._files import replace_atomically

    target = Path(path)
    render = EXPORTERS.get(target.suffix.lower())
    if render is None:
        known = ", ".join(EXPORTERS)
        raise ConfigError(
            f"--trace {target}: unknown trace format {target.suffix!r} (known: {known})"
        )
    text = render(result)
    replace_atomically(target, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))
    return target
