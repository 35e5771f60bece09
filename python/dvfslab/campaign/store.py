"""The results store of a campaign: one Parquet file per finished run, and a manifest.

    DIR/campaign.json              the campaign (name, baseline, configs, benchmarks, ...) and
                                   every run's key and coordinates, in campaign order
    DIR/runs/<run_key>.parquet     one finished run: one row, the columns of `load_results`
    DIR/.lock                      held by the `campaign run` writing to DIR

A run's file is written under a temporary name (`runs/.<run_key>…tmp`), flushed to disk and
renamed into place, so a reader sees a run completely or not at all, wherever its writer is
killed; the next writer deletes leftover temporary files. A run is finished when its file
exists whole (`scan_runs`), so a campaign run again runs only the others, and a run is never
stored twice. A store belongs to the campaign its manifest names (`check_owner`).

Each run file carries its run key in its Parquet metadata (`dvfslab.run_key`): a file copied
or renamed to another run's name is not that run. `scan_runs` treats it as not stored (the
campaign runs that run again and replaces it) and `load_results` refuses it, naming it.
`count_runs` says how many of the campaign's runs a store holds and which cells lack some.

Any Parquet reader can query the store, e.g. with DuckDB (runs of several platforms and
benchmarks measure different things: group by them):
    duckdb.sql("select platform, benchmark, config, param, avg(metric_value) "
               "from 'DIR/runs/*.parquet' group by all order by all")
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dvfslab._core import ConfigError, DvfsError
from dvfslab._files import replace_atomically

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

    from dvfslab.campaign.model import Run

STORE_SCHEMA = "dvfslab-store/1"
MANIFEST = "campaign.json"
RUNS = "runs"
LOCK = ".lock"
RUN_SUFFIX = ".parquet"
PARQUET_MAGIC = b"PAR1"
PARQUET_TAIL_BYTES = 8  # the footer's length, then the magic
RUN_KEY_METADATA = b"dvfslab.run_key"  # the Parquet key-value metadata naming a file's run

# The columns of `load_results`, in order: (name, Arrow type name). Only ever appended to.
COLUMNS = (
    ("platform", "string"),
    ("benchmark", "string"),
    ("config", "string"),
    ("param", "string"),
    ("iteration", "int64"),
    ("seed", "int64"),
    ("run_key", "string"),
    ("metric_name", "string"),
    ("metric_value", "float64"),
    ("metric_unit", "string"),
    ("better", "string"),
    ("energy_j", "float64"),
    ("sim_time_s", "float64"),
    ("avg_package_w", "float64"),
    ("wall_time_s", "float64"),
    ("events", "int64"),
    ("governor", "string"),
    ("workload", "string"),
    ("duration_s", "float64"),
    ("campaign", "string"),
    ("sim_version", "string"),
    ("worker_host", "string"),
    ("worker_pid", "int64"),
    ("run_json", "string"),
)


def load_results(directory: str | os.PathLike[str]) -> pd.DataFrame:
    """Every finished run of the store at `directory`, one row each, in campaign order.

    Columns: platform, benchmark, config, param ("clients=8"; "" without a sweep), iteration
    (1..N), seed, run_key, metric_name, metric_value, metric_unit, better ("higher"/"lower"),
    energy_j, sim_time_s, avg_package_w, wall_time_s, events, governor and workload (the specs
    run), duration_s, campaign, sim_version, worker_host, worker_pid, and run_json (the run's
    full result, docs/run-json.md). Runs stored for coordinates the campaign no longer has are
    left out. `df.attrs` holds "campaign" and "baseline" (see also `load_manifest`).

    Raises DvfsError, naming the file, for a run file that is unreadable or holds another run
    than its name says (copied or renamed).
    """
    root = _results_dir(directory)
    manifest = load_manifest(root) if (root / MANIFEST).exists() else None
    files = {run_key_of(p): p for p in run_files(root)}
    if manifest is not None:
        keys = [run["run_key"] for run in manifest["runs"] if run["run_key"] in files]
    else:
        keys = sorted(files)
    for key in keys:
        problem = _not_this_run(files[key])
        if problem is not None:
            raise DvfsError(
                f"{files[key]}: {problem}; delete it, or run the campaign again to redo that run"
            )
    df = _read_runs([files[key] for key in keys]).to_pandas()
    if manifest is not None:
        # Campaign order, whatever order the files were read in.
        position = {key: i for i, key in enumerate(keys)}
        df = df.sort_values("run_key", key=lambda column: column.map(position))
    else:
        df = df.sort_values(["platform", "benchmark", "config", "param", "iteration"])
    df = df.reset_index(drop=True)
    df.attrs["campaign"] = manifest["name"] if manifest else None
    df.attrs["baseline"] = manifest["baseline"] if manifest else None
    return df


def load_manifest(directory: str | os.PathLike[str]) -> dict[str, Any]:
    """The store's campaign.json: name, baseline, configs, benchmarks, runs, ..."""
    path = _results_dir(directory) / MANIFEST
    try:
        manifest: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path} does not exist: not a campaign's results directory") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: unreadable manifest ({e})") from None
    return manifest


def run_files(directory: str | os.PathLike[str]) -> list[Path]:
    """The run files, sorted by run key (temporary files excluded)."""
    runs = Path(directory) / RUNS
    if not runs.is_dir():
        return []
    return sorted(
        p for p in runs.iterdir() if p.name.endswith(RUN_SUFFIX) and not p.name.startswith(".")
    )


def finished_keys(directory: str | os.PathLike[str]) -> set[str]:
    """The keys of the runs stored whole in `directory` (see `scan_runs`)."""
    return scan_runs(directory)[0]


def scan_runs(directory: str | os.PathLike[str]) -> tuple[set[str], list[tuple[Path, str]]]:
    """(the keys of the runs stored whole, [(run file, what is wrong with it)] for the others).

    A run file that is not a whole Parquet file (cut short, emptied, overwritten by something
    else) or holds another run than its name says (copied, renamed) does not count as stored:
    the campaign runs it again and replaces it.
    """
    finished: set[str] = set()
    broken: list[tuple[Path, str]] = []
    for path in run_files(directory):
        problem = _incomplete(path) or _not_this_run(path)
        if problem is None:
            finished.add(run_key_of(path))
        else:
            broken.append((path, problem))
    return finished, broken


def run_key_of(path: Path) -> str:
    """The run key a run file is named after."""
    return path.name[: -len(RUN_SUFFIX)]


def count_runs(manifest: dict[str, Any], stored: set[str]) -> tuple[int, list[dict[str, Any]]]:
    """(the campaign's runs, [each cell missing some]) for a store whose manifest is `manifest`
    and whose finished runs have the keys `stored`.

    A cell is a platform, benchmark, configuration and parameter; each missing one is
    {"platform", "benchmark", "config", "param", "finished", "expected"}, in campaign order.
    """
    cells: dict[tuple[str, str, str, str], list[int]] = {}
    runs = manifest.get("runs") or []
    for run in runs:
        cell = (run["platform"], run["benchmark"], run["config"], run["param"])
        counts = cells.setdefault(cell, [0, 0])
        counts[0] += run["run_key"] in stored
        counts[1] += 1
    missing = [
        {
            "platform": platform,
            "benchmark": benchmark,
            "config": config,
            "param": param,
            "finished": finished,
            "expected": expected,
        }
        for (platform, benchmark, config, param), (finished, expected) in cells.items()
        if finished < expected
    ]
    return len(runs), missing


def check_owner(directory: Path, campaign: str, force: bool = False) -> None:
    """Refuse a store that another campaign wrote, or whose manifest is unreadable, unless
    `force`: the campaign's runs would then be stored among another campaign's."""
    if force or not (directory / MANIFEST).exists():
        return
    try:
        manifest = load_manifest(directory)
    except ConfigError as e:
        raise ConfigError(
            f"{e}: cannot tell which campaign {directory} belongs to; choose another --out, "
            f"or add --force to store campaign {campaign}'s runs there"
        ) from None
    owner = manifest.get("name") if isinstance(manifest, dict) else None
    if owner != campaign:
        raise ConfigError(
            f"{directory} holds the results of campaign {owner}, not {campaign}: choose another "
            f"--out, or add --force to make it campaign {campaign}'s store"
        )


# -- writing (only under `locked`) ----------------------------------------------------------


@contextlib.contextmanager
def locked(directory: str | os.PathLike[str]) -> Iterator[Path]:
    """Create the store if need be and hold its lock; clean up what a killed writer left."""
    root = Path(directory)
    if (
        root.is_dir()
        and any(not _ours(e.name) for e in root.iterdir())
        and not (root / MANIFEST).exists()
    ):
        raise ConfigError(
            f"{root} is not empty and holds no {MANIFEST}: not a results directory; "
            "choose another --out"
        )
    (root / RUNS).mkdir(parents=True, exist_ok=True)
    fd = os.open(root / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        _lock(fd, root)
        for leftover in [*(root / RUNS).glob(".*.tmp"), *root.glob(f".{MANIFEST}.*.tmp")]:
            with contextlib.suppress(FileNotFoundError):
                leftover.unlink()
        yield root
    finally:
        os.close(fd)


def write_manifest(directory: Path, manifest: dict[str, Any]) -> None:
    text = json.dumps(manifest, indent=1, ensure_ascii=False) + "\n"
    replace_atomically(directory / MANIFEST, lambda tmp: Path(tmp).write_text(text, "utf-8"))


def write_run(
    directory: Path,
    run: Run,
    campaign: str,
    result_json: str,
    sim_version: str,
    worker_host: str,
    worker_pid: int,
) -> Path:
    """Store one finished run as runs/<run_key>.parquet, atomically; return its path."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    result = json.loads(result_json)
    metric = result["metric"]
    row: dict[str, Any] = {
        "platform": run.platform,
        "benchmark": run.benchmark,
        "config": run.config,
        "param": run.param,
        "iteration": run.iteration,
        "seed": run.seed,
        "run_key": run.run_key,
        "metric_name": metric["name"],
        "metric_value": metric["value"],
        "metric_unit": metric["unit"],
        "better": metric["better"],
        "energy_j": result["energy_j"],
        "sim_time_s": result["sim_time_s"],
        "avg_package_w": result["avg_package_w"],
        "wall_time_s": result["wall_time_s"],
        "events": result["events"],
        "governor": run.governor,
        "workload": run.workload,
        "duration_s": run.duration_s,
        "campaign": campaign,
        "sim_version": sim_version,
        "worker_host": worker_host,
        "worker_pid": worker_pid,
        "run_json": result_json,
    }
    schema = _schema(run.run_key)
    table = pa.Table.from_pylist([row], schema=schema)
    path = directory / RUNS / f"{run.run_key}{RUN_SUFFIX}"
    # `locked` has cleared what killed writers left in runs/.
    replace_atomically(path, lambda tmp: pq.write_table(table, tmp), remove_leftovers=False)
    return path


def load_writer() -> None:
    """Load what `write_run` needs (pyarrow, which imports pandas: a few hundred ms) now, so
    that the first run is stored as soon as it ends, not after runs that ended meanwhile."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist([], schema=_schema()), pa.BufferOutputStream())


# -- helpers ---------------------------------------------------------------------------------


def _schema(run_key: str | None = None) -> pa.Schema:
    """The run files' schema; with `run_key`, that of the file of this run."""
    import pyarrow as pa

    metadata = {b"dvfslab.schema": STORE_SCHEMA.encode()}
    if run_key is not None:
        metadata[RUN_KEY_METADATA] = run_key.encode()
    return pa.schema([(name, getattr(pa, kind)()) for name, kind in COLUMNS], metadata=metadata)


def _not_this_run(path: Path) -> str | None:
    """What says that the whole Parquet file `path` is not the run its name says, or None.

    The key is in the file's metadata; a file written before it was (no such metadata) is
    judged by its run_key column.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        metadata = pq.read_metadata(path).metadata or {}
        claimed = metadata.get(RUN_KEY_METADATA)
        if claimed is not None:
            key = claimed.decode("utf-8", "replace")
        else:
            keys = pq.read_table(path, columns=["run_key"]).column("run_key").to_pylist()
            key = keys[0] if len(keys) == 1 else f"{len(keys)} rows"
    except (OSError, pa.ArrowException, KeyError) as e:
        return f"unreadable run file ({e})"
    if key != run_key_of(path):
        return f"holds run {key}, not the run its name says (a copied or renamed file)"
    return None


def _read_runs(paths: list[Path]) -> pa.Table:
    """The run files as one table, read in parallel (files written by an older dvfslab get
    nulls in the columns added since); an unreadable file is named."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    schema = _schema()
    if not paths:
        return schema.empty_table()
    try:
        return ds.dataset([str(p) for p in paths], schema=schema, format="parquet").to_table()
    except (OSError, pa.ArrowException):
        for path in paths:  # find the culprit
            try:
                ds.dataset(str(path), schema=schema, format="parquet").to_table()
            except (OSError, pa.ArrowException) as e:
                raise DvfsError(
                    f"{path}: unreadable run file ({e}); "
                    "delete it and run the campaign again to redo that run"
                ) from None
        raise


def _results_dir(directory: str | os.PathLike[str]) -> Path:
    root = Path(directory)
    if not root.is_dir():
        raise ConfigError(f"results directory {root} does not exist")
    if not (root / MANIFEST).exists() and not (root / RUNS).is_dir():
        raise ConfigError(f"{root} is not a campaign's results directory (no {MANIFEST})")
    return root


def _incomplete(path: Path) -> str | None:
    """What makes `path` not a whole Parquet file, or None.

    A Parquet file starts with "PAR1" and ends with its footer's length (4 bytes, little
    endian) and "PAR1" again: a file cut short loses its end. Two small reads per file, so a
    store of thousands of runs is scanned in a blink; `load_results` reads the rest.
    """
    try:
        size = path.stat().st_size
        with open(path, "rb") as f:
            head = f.read(len(PARQUET_MAGIC))
            f.seek(max(0, size - PARQUET_TAIL_BYTES))
            tail = f.read(PARQUET_TAIL_BYTES)
    except OSError as e:
        return f"cannot read it: {e.strerror or e}"
    if size == 0:
        return "empty"
    if head != PARQUET_MAGIC:
        return "not a Parquet file"
    footer_bytes = int.from_bytes(tail[: -len(PARQUET_MAGIC)], "little")
    if (
        size < len(PARQUET_MAGIC) + PARQUET_TAIL_BYTES
        or tail[-len(PARQUET_MAGIC) :] != PARQUET_MAGIC
        or footer_bytes > size - len(PARQUET_MAGIC) - PARQUET_TAIL_BYTES
    ):
        return f"cut short at {size} bytes"
    return None


def _ours(name: str) -> bool:
    """A name the store writes in its directory (temporary manifests included)."""
    return name in (MANIFEST, RUNS, LOCK) or name.startswith(f".{MANIFEST}.")


def _lock(fd: int, root: Path) -> None:
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX: no lock, one writer assumed
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise ConfigError(
            f"{root} is being written by another `dvfslab campaign run`; "
            "wait for it to finish or choose another --out"
        ) from None
