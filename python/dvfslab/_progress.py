"""Progress of a long job on stderr: a rich bar with ETA on a terminal, else a line now and then.

example: 108 runs, 36 already stored, 72 to run
example: 40/72 runs (56%), 0:00:10 elapsed, ETA 0:00:08
example: 72/72 runs in 0:00:18
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any, TextIO

PLAIN_INTERVAL_S = 10.0


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
