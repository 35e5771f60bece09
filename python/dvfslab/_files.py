"""Reading a user's text file with errors that name it, and writing a file so that readers see
the old one or the whole new one, power cut included.

Every file dvfslab writes (run results in a store, its manifest, timelines, traces, HTML
reports, decision logs) goes through `replace_atomically`; every text file it reads from the
user (a platform, a campaign, an rt-app file, a document) through `read_text`.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path
from typing import Callable

TMP_SUFFIX = ".tmp"


def read_text(path: Path, what: str) -> str:
    """The UTF-8 text of the `what` file at `path` ("platform file", "rt-app file"), its line
    endings as written; a ConfigError naming it when it is missing, unreadable or not UTF-8."""
    from dvfslab._core import ConfigError

    try:
        return path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{what} {path} does not exist") from None
    except UnicodeDecodeError as e:
        raise ConfigError(
            f"{what} {path}: not UTF-8 text (byte {e.start} cannot be decoded)"
        ) from None
    except OSError as e:
        raise ConfigError(f"cannot read {what} {path}: {e.strerror or e}") from None


def replace_atomically(
    path: str | os.PathLike[str],
    write: Callable[[str], object],
    remove_leftovers: bool = True,
) -> None:
    """Call write(tmp) on a hidden temporary name beside `path`, flush it to disk, rename it to
    `path` and flush the rename.

    Readers see the old file or the whole new one; a failed or interrupted write leaves nothing
    behind, and a writer killed outright leaves a `.NAME.PID.XXXX.tmp` that the next write to
    `path` removes (unless not `remove_leftovers`: the results store clears its own under its
    lock, and looking through thousands of run files at each write would cost more).
    """
    path = Path(path)
    if remove_leftovers:
        remove_dead_writers_files(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}{TMP_SUFFIX}")
    try:
        write(str(tmp))
        _fsync_file(tmp)
        os.replace(tmp, path)
    except BaseException as e:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        if isinstance(e, OSError) and e.filename is None:
            # A full disk says ENOSPC and no file (pyarrow's writer neither): name the file.
            raise OSError(e.errno, e.strerror or str(e), str(path)) from e
        raise
    _fsync_directory(path.parent)


def remove_dead_writers_files(path: Path) -> list[Path]:
    """Remove the temporary files beside `path` whose writing process is gone; return them.

    Only on POSIX, where a process can be asked whether it is alive without being touched.
    """
    if os.name != "posix" or not path.parent.is_dir():
        return []
    removed = []
    prefix = f".{path.name}."
    with os.scandir(path.parent) as entries:
        names = [e.name for e in entries if e.name.startswith(prefix)]
    for name in names:
        pid = name[len(prefix) :].split(".")[0]
        if name.endswith(TMP_SUFFIX) and pid.isdigit() and not _alive(int(pid)):
            candidate = path.with_name(name)
            with contextlib.suppress(FileNotFoundError):
                candidate.unlink()
                removed.append(candidate)
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)  # signal 0: the existence check, nothing is sent
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDWR)  # Windows flushes only a file opened for writing
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_directory(directory: Path) -> None:
    """Make a rename in `directory` survive a power cut (POSIX; elsewhere a no-op)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # pragma: no cover - Windows cannot open a directory
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
