"""Reports kept inside Markdown documents: the lines between two markers are the output of
`dvfslab campaign report DIR --format markdown`, and only that tool writes them.

    <!-- campaign-report: margins-pixel6 -->
    ### pixel6: performance ratio to baseline (...)
    ...
    <!-- end campaign-report -->

`dvfslab campaign report DIR --into DOC.md` replaces the block named after the store's
campaign (docs/campaigns.md; `make campaign-docs` does every block of it). The rest of the
document is kept byte for byte, and the new document replaces the old one atomically.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from dvfslab._core import ConfigError
from dvfslab._files import read_text, replace_atomically

BEGIN = "<!-- campaign-report: {name} -->"
END = "<!-- end campaign-report -->"
_BEGIN_LINE = re.compile(r"^<!-- campaign-report: (\S+) -->$")


def block_names(text: str) -> list[str]:
    """The names of the report blocks in a document's text, in order."""
    return [m.group(1) for line in text.splitlines() if (m := _BEGIN_LINE.match(line))]


def replace_block(text: str, name: str, body: str, source: str = "document") -> str:
    """`text` with the lines between block `name`'s markers replaced by `body`, set off by a
    blank line on each side. Raises ConfigError, naming `source`, when the block is missing,
    given twice or not closed."""
    lines = text.splitlines(keepends=True)
    begin = BEGIN.format(name=name)
    starts = [i for i, line in enumerate(lines) if line.rstrip("\r\n") == begin]
    if not starts:
        known = ", ".join(block_names(text)) or "none"
        raise ConfigError(f"{source}: no line {begin!r} (report blocks there: {known})")
    if len(starts) > 1:
        raise ConfigError(f"{source}: {begin!r} is on {len(starts)} lines; expected one")
    start = starts[0]
    end = next(
        (i for i in range(start + 1, len(lines)) if lines[i].rstrip("\r\n") == END),
        None,
    )
    nested = [i for i in range(start + 1, end or len(lines)) if _BEGIN_LINE.match(lines[i])]
    if end is None or nested:
        raise ConfigError(
            f"{source}: block {name!r} (line {start + 1}) has no {END!r} before the next "
            "block or the end of the file"
        )
    inner = body.strip("\n")
    return "".join(lines[: start + 1]) + f"\n{inner}\n\n" + "".join(lines[end:])


def write_block(path: str | os.PathLike[str], name: str, body: str) -> Path:
    """Replace block `name` of the Markdown file at `path` with `body` (`replace_block`),
    atomically; the file is left as it was when the block cannot be found."""
    target = Path(path)
    text = read_text(target, "document")
    updated = replace_block(text, name, body, source=str(target))
    replace_atomically(target, lambda tmp: Path(tmp).write_bytes(updated.encode("utf-8")))
    return target
