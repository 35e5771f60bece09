"""Progress of a long job on stderr: a rich bar with ETA on a terminal, else a line now and then.

example: 108 runs, 36 already stored, 72 to run
example: 40/72 runs (56%), 0:00:10 elapsed, ETA 0:00:08
example: 72/72 runs in 0:00:18

One long simulation (`run_progress`) shows a bar of simulated seconds on a terminal only.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any, TextIO

PLAIN_INTERVAL_S = 10.0
# A single run shows its bar only once it has taken this long: short runs stay quiet.
RUN_BAR_DELAY_S = 1.0


class Progress:
    def __init__(
        self,
        title: str,
        total: int,
        cached: int = 0,
        stream: TextIO | None = None,
        interval_s: float = PLAIN_INTERVAL_S,
        unit: str = "runs",
        intro: str | None = None,
    ) -> None:
        """`unit` names what is counted; `intro` replaces the first line of the plain view
        ("108 runs, 36 already stored, 72 to run")."""
        self.title = title
        self.unit = unit
        self.intro = intro
        self.total = total
        self.cached = cached
        self.todo = total - cached
        self.done = 0
        self.stream = stream or sys.stderr
        self.interval_s = interval_s
        self._bar: Any = None
        self._task: Any = None
        self._plain = False
        self._started = self._printed = time.monotonic()

    @contextlib.contextmanager
    def shown(self, enabled: bool = True) -> Iterator[Progress]:
        """Show progress while inside (nothing if not `enabled` or nothing is to run)."""
        self._started = self._printed = time.monotonic()
        if not enabled or self.todo == 0:
            yield self
        elif self.stream.isatty():
            with self._rich_bar():
                yield self
        else:
            self._plain = True
            self._say(self.intro or self._default_intro())
            try:
                yield self
            finally:
                self._plain = False
                if self.done == self.todo:
                    self._say(f"{self.done}/{self.todo} {self.unit} in {self._elapsed()}")

    def advance(self) -> None:
        self.done += 1
        if self._bar is not None:
            self._bar.advance(self._task)
        elif self._plain and time.monotonic() - self._printed >= self.interval_s:
            self._say(
                f"{self.done}/{self.todo} {self.unit} ({100 * self.done / self.todo:.0f}%), "
                f"{self._elapsed()} elapsed, ETA {self._eta()}"
            )

    @contextlib.contextmanager
    def _rich_bar(self) -> Iterator[None]:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )
        from rich.progress import (
            Progress as RichProgress,
        )

        bar = RichProgress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn(self.unit),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=Console(file=self.stream),
        )
        cached = f" ({self.cached} already stored)" if self.cached else ""
        with bar:
            self._bar, self._task = bar, bar.add_task(f"{self.title}{cached}", total=self.todo)
            try:
                yield
            finally:
                self._bar = self._task = None

    def _default_intro(self) -> str:
        if self.cached:
            return f"{self.total} {self.unit}, {self.cached} already stored, {self.todo} to run"
        return f"{self.total} {self.unit} to run"

    def _say(self, text: str) -> None:
        print(f"{self.title}: {text}", file=self.stream, flush=True)
        self._printed = time.monotonic()

    def _elapsed(self) -> str:
        return _clock(time.monotonic() - self._started)

    def _eta(self) -> str:
        if self.done == 0:
            return "-"
        elapsed = time.monotonic() - self._started
        return _clock(elapsed / self.done * (self.todo - self.done))


def _clock(seconds: float) -> str:
    return str(timedelta(seconds=round(seconds)))


@contextlib.contextmanager
def run_progress(
    title: str, enabled: bool, stream: TextIO | None = None
) -> Iterator[Callable[[float, float], None] | None]:
    """A `progress(now_s, end_s)` callback for one simulation (`dvfslab.simulate`) that draws
    a transient bar of simulated seconds on `stream` (stderr) once the run has taken
    `RUN_BAR_DELAY_S`; None, and nothing shown, if not `enabled` or not on a terminal."""
    out = stream or sys.stderr
    if not enabled or not out.isatty():
        yield None
        return
    shown = _RunBar(title, out)
    try:
        yield shown.update
    finally:
        shown.close()


class _RunBar:
    def __init__(self, title: str, stream: TextIO) -> None:
        self.title = title
        self.stream = stream
        self.started = time.monotonic()
        self._bar: Any = None
        self._task: Any = None

    def update(self, now_s: float, end_s: float) -> None:
        if self._bar is None:
            if time.monotonic() - self.started < RUN_BAR_DELAY_S:
                return
            self._open(end_s)
        self._bar.update(self._task, completed=now_s, total=end_s)

    def _open(self, end_s: float) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn
        from rich.progress import Progress as RichProgress

        self._bar = RichProgress(
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.completed:.3g}/{task.total:.3g} s simulated"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=Console(file=self.stream),
            transient=True,
        )
        self._bar.start()
        self._task = self._bar.add_task(self.title, total=end_s)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
