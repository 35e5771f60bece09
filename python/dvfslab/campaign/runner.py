"""Running a campaign's runs: in this process, in a local process pool, or on a Ray cluster.

Workers only simulate: each gets a `RunTask` (the preset's text, specs, duration, seed) and
returns an `Outcome` (the run JSON, or the error). This process alone writes the store, one
file per outcome as it arrives, so whatever the backend, a run is stored once and completely.
"""

from __future__ import annotations

import contextlib
import dataclasses
import multiprocessing
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dvfslab import _core
from dvfslab._core import ConfigError, SimulationError
from dvfslab._progress import Progress
from dvfslab.api import duration_ns
from dvfslab.campaign import store
from dvfslab.campaign.model import Campaign, Run
from dvfslab.campaign.preflight import check_setup, distinct_setups

ORPHAN_POLL_S = 0.5  # how often a pool worker checks that the campaign process is alive
RAY_POLL_S = 0.5
RAY_CONNECT_TIMEOUT_S = 5.0  # a head node or Ray Client server answers well within this
RAY_CLIENT_SCHEME = "ray://"
BROKEN_NAMED = 5  # run files named one by one when they are not whole; the rest are counted


@dataclass(frozen=True)
class RunTask:
    """What a worker needs to simulate one run, and nothing that needs a file."""

    index: int
    preset_json: str
    preset_source: str
    governor: str
    workload: str
    duration_ns: int | None
    seed: int
    workload_source: str | None = None
    """An rt-app file's path, `workload` then being its text (see `Run.simulated_workload`)."""


@dataclass(frozen=True)
class Outcome:
    index: int
    result_json: str | None
    error_type: str | None
    error: str | None
    sim_version: str
    worker_host: str
    worker_pid: int


@dataclass(frozen=True)
class RunSummary:
    """What `run_campaign` did."""

    campaign: str
    out_dir: Path
    total: int
    """Runs in the campaign."""
    cached: int
    """Runs found in the store, not run again."""
    executed: int
    """Runs simulated now."""
    workers: int
    """Worker processes used (Ray: the cluster's CPUs); 0 if nothing had to run."""
    backend: str
    """"in-process", "local" (process pool) or "ray"."""
    wall_time_s: float


def execute(task: RunTask) -> Outcome:
    """Simulate one run; never raises for a simulator error, which comes back in the Outcome."""
    result_json = error_type = error = None
    try:
        from dvfslab.governors import resolve

        governor, python_governor = resolve(task.governor)
        output = _core.simulate(
            task.preset_json,
            task.preset_source,
            governor,
            task.workload,
            duration_ns=task.duration_ns,
            seed=task.seed,
            workload_source=task.workload_source,
            python_governor=python_governor,
        )
        result_json = output["result_json"]
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # every failure, a simulator panic included, goes back
        error_type, error = type(e).__name__, str(e)
    return Outcome(
        task.index,
        result_json,
        error_type,
        error,
        _core.version(),
        socket.gethostname(),
        os.getpid(),
    )


def execute_with_preset(task: RunTask, preset_json: str) -> Outcome:
    """`execute` with the preset passed separately (Ray ships each preset to a node once)."""
    return execute(dataclasses.replace(task, preset_json=preset_json))


def default_jobs() -> int:
    """The CPUs this process may run on (its affinity mask, where the OS has one)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


def run_campaign(
    campaign: Campaign,
    out_dir: str | os.PathLike[str] | None = None,
    jobs: int | None = None,
    ray_address: str | None = None,
    progress: bool = True,
    force: bool = False,
) -> RunSummary:
    """Run every run of `campaign` not yet stored in `out_dir`, storing each as it finishes.

    out_dir:     the results store (default results/<campaign name>); see
                 `dvfslab.campaign.store`
    jobs:        local worker processes (default: every CPU this process may use)
    ray_address: run on a Ray cluster instead ("auto", "ray://host:10001", or "local" for an
                 instance started here); needs the `ray` package
    progress:    show progress on stderr: a bar on a terminal, a line every 10 s otherwise
    force:       store the runs even in a store another campaign wrote (its manifest is
                 replaced; its run files stay, and those with the same key are reused)

    Safe to interrupt or kill at any point: finished runs are kept and the next call runs the
    rest; a run file that is not whole is named on stderr and run again. Raises ConfigError for
    bad input (a store of another campaign, without `force`) before running anything, and the
    first run's error (naming its coordinates) if a run fails. Local workers are started with
    the "spawn" method: a script that calls this must guard its top level with
    `if __name__ == "__main__"`.
    """
    started = time.monotonic()
    if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1):
        raise ConfigError(f"jobs must be an integer >= 1 (got {jobs!r})")
    if ray_address is not None:
        check_ray(ray_address)
    out = Path(out_dir) if out_dir is not None else Path("results") / campaign.name
    runs = campaign.runs()
    with store.locked(out) as root:
        store.check_owner(root, campaign.name, force)
        done, broken = store.scan_runs(root)
        _say_broken(campaign, runs, broken)
        todo = [run for run in runs if run.run_key not in done]
        _check_setups(campaign, todo, progress)
        store.write_manifest(root, campaign.manifest(runs))
        tasks = [_task(campaign, i, run) for i, run in enumerate(todo)]
        version = _core.version()
        meter = Progress(campaign.name, total=len(runs), cached=len(runs) - len(todo))

        def finished(outcome: Outcome) -> None:
            run = todo[outcome.index]
            if outcome.result_json is None:
                raise _run_error(campaign, run, outcome)
            if outcome.sim_version != version:
                raise SimulationError(
                    f"worker {outcome.worker_host}:{outcome.worker_pid} runs dvfslab "
                    f"{outcome.sim_version}, this campaign {version}: install the same version"
                )
            store.write_run(
                root,
                run,
                campaign.name,
                outcome.result_json,
                outcome.sim_version,
                outcome.worker_host,
                outcome.worker_pid,
            )
            meter.advance()

        backend = "ray" if ray_address else "local"
        store.load_writer()  # now, not after the first run: a killed campaign loses less
        with meter.shown(progress):
            if not tasks:
                workers, backend = 0, "in-process"
            elif ray_address:
                workers = run_on_ray(tasks, ray_address, finished)
            else:
                workers = min(jobs or default_jobs(), len(tasks))
                if workers == 1:
                    backend = "in-process"
                    for task in tasks:
                        finished(execute(task))
                else:
                    run_in_pool(tasks, workers, finished)
    return RunSummary(
        campaign.name,
        out,
        total=len(runs),
        cached=len(runs) - len(todo),
        executed=len(todo),
        workers=workers,
        backend=backend,
        wall_time_s=time.monotonic() - started,
    )


# -- backends --------------------------------------------------------------------------------


def run_in_pool(
    tasks: Sequence[RunTask], workers: int, finished: Callable[[Outcome], None]
) -> None:
    """Run `tasks` on `workers` spawned processes; call finished(outcome) here as each ends.

    If `finished` raises (a failed run) or this process is interrupted, the workers are
    stopped at once; if this process is killed, they notice and exit.
    """
    context = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(
        workers, mp_context=context, initializer=_init_worker, initargs=(os.getpid(),)
    )
    try:
        futures = [pool.submit(execute, task) for task in tasks]
        for future in as_completed(futures):
            try:
                outcome = future.result()
            except BrokenProcessPool:
                raise SimulationError(
                    "a worker process died: out of memory, killed, or unable to start "
                    "(a script that runs a campaign needs `if __name__ == '__main__':`)"
                ) from None
            finished(outcome)
    except BaseException:
        _stop_now(pool)
        raise
    pool.shutdown()


def _stop_now(pool: ProcessPoolExecutor) -> None:
    """Cancel what has not started and kill the workers running the rest."""
    terminate = getattr(pool, "terminate_workers", None)  # Python >= 3.14
    if terminate is not None:
        terminate()
        return
    # Before shutdown(), which forgets them.
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        with contextlib.suppress(Exception):
            process.terminate()


def _init_worker(parent_pid: int) -> None:
    # Ctrl-C reaches the whole process group: the campaign process alone handles it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_exit_when_orphaned, args=(parent_pid,), daemon=True).start()


def _exit_when_orphaned(parent_pid: int) -> None:
    """A pool worker whose campaign process died (even by SIGKILL) has nothing left to do."""
    while os.getppid() == parent_pid:
        time.sleep(ORPHAN_POLL_S)
    os._exit(1)


def run_on_ray(tasks: Sequence[RunTask], address: str, finished: Callable[[Outcome], None]) -> int:
    """Run `tasks` as Ray tasks on the cluster at `address` ("local" starts one here).

    Returns the cluster's CPU count. Each distinct preset goes to the object store once.
    """
    ray = _import_ray()
    owned = not ray.is_initialized()
    if owned:
        _connect_ray(ray, address)
    pending: list[Any] = []
    try:
        remote = ray.remote(num_cpus=1)(execute_with_preset)
        presets = {t.preset_json: None for t in tasks}
        refs = {text: ray.put(text) for text in presets}
        pending = [
            remote.remote(dataclasses.replace(t, preset_json=""), refs[t.preset_json])
            for t in tasks
        ]
        workers = int(ray.cluster_resources().get("CPU", 1))  # type: ignore[no-untyped-call,unused-ignore]
        while pending:
            ready, pending = ray.wait(pending, num_returns=len(pending), timeout=RAY_POLL_S)
            for ref in ready:
                try:
                    outcome = ray.get(ref)
                except ray.exceptions.RayError as e:  # a worker or node died, retries spent
                    raise SimulationError(f"a Ray task failed: {e}") from None
                finished(outcome)
        return workers
    except BaseException:
        for ref in pending:
            ray.cancel(ref)
        raise
    finally:
        if owned:
            ray.shutdown()


def check_ray(address: str) -> None:
    """Fail at once, with a ConfigError, if the campaign cannot run on Ray at `address`: the
    ray package is missing, the address is not one Ray takes, or nothing answers there.

    Ray itself would retry an unreachable address for minutes before it gives up.
    """
    _import_ray()
    endpoint = ray_endpoint(address)
    if endpoint is None:
        return
    host, port = endpoint
    try:
        socket.create_connection((host, port), timeout=RAY_CONNECT_TIMEOUT_S).close()
    except OSError as e:
        reason = "timed out" if isinstance(e, socket.timeout) else (e.strerror or str(e))
        raise ConfigError(
            f"--ray {address}: cannot reach {host}:{port} ({reason}); is a Ray cluster "
            "running there (`ray start --head`)?"
        ) from None
    if address.startswith(RAY_CLIENT_SCHEME):
        _check_ray_client(address)


def _check_ray_client(address: str) -> None:
    """A Ray Client address needs ray's client extra (grpcio), which plain `pip install ray`
    leaves out; without it ray.init fails deep inside Ray."""
    try:
        import grpc  # noqa: F401
    except ImportError:
        raise ConfigError(
            f"--ray {address}: a ray:// address needs Ray Client (ray[client]): "
            "pip install 'dvfslab[ray]' (or pip install 'ray[client]')"
        ) from None


def ray_endpoint(address: str) -> tuple[str, int] | None:
    """(host, port) that `address` names, None for "auto" and "local"; a ConfigError for an
    address that Ray does not take."""
    if address in ("auto", "local"):
        return None
    host, _, port = address.removeprefix(RAY_CLIENT_SCHEME).rpartition(":")
    host = host.removeprefix("[").removesuffix("]")  # [::1]:6379
    if not host or not port.isascii() or not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigError(
            f"--ray {address}: expected auto, local, ray://HOST:PORT (a Ray Client server, "
            "port 10001 by default) or HOST:PORT (a cluster's head node, port 6379 by default)"
        )
    return host, int(port)


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ConfigError(
            "--ray needs the ray package: pip install 'dvfslab[ray]' (or pip install ray)"
        ) from None
    return ray


def _connect_ray(ray: Any, address: str) -> None:
    """ray.init, with its failures as one-line ConfigErrors."""
    options: dict[str, Any] = {"include_dashboard": False} if address == "local" else {}
    try:
        ray.init(address=address, **options)
    except Exception as e:
        message = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        if address == "auto" and "Could not find any running Ray instance" in message:
            # Ray's own words name its CLI's --address flag, which dvfslab does not have.
            message = (
                "no Ray cluster is running on this machine (auto joins the one `ray start "
                "--head` started here, or the one RAY_ADDRESS names): start one, give a "
                "cluster's address (--ray HOST:6379), or use --ray local to start one for "
                "this campaign"
            )
        raise ConfigError(f"--ray {address}: {message}") from None


# -- helpers ---------------------------------------------------------------------------------


def _say_broken(campaign: Campaign, runs: Sequence[Run], broken: list[tuple[Path, str]]) -> None:
    """Name the campaign's run files that are not whole (they are run again), on stderr."""
    keys = {run.run_key for run in runs}
    ours = [(path, problem) for path, problem in broken if store.run_key_of(path) in keys]
    for path, problem in ours[:BROKEN_NAMED]:
        print(
            f"{campaign.name}: {path}: not a whole run file ({problem}); running that run again",
            file=sys.stderr,
        )
    if len(ours) > BROKEN_NAMED:
        print(
            f"{campaign.name}: and {len(ours) - BROKEN_NAMED} more run files not whole; "
            "running those runs again",
            file=sys.stderr,
        )


def _check_setups(campaign: Campaign, todo: Sequence[Run], progress: bool) -> None:
    """`check_campaign` over the runs to do, with its own progress: hundreds of setups take
    seconds, which should not pass in silence."""
    setups = distinct_setups(todo)
    meter = Progress(
        campaign.name,
        total=len(setups),
        unit="setups checked",
        intro=f"checking the {len(setups)} distinct (platform, governor, workload) setups "
        f"of {len(todo)} runs to run",
    )
    with meter.shown(progress):
        for run in setups:
            check_setup(campaign, run)
            meter.advance()


def _task(campaign: Campaign, index: int, run: Run) -> RunTask:
    platform = campaign.platform(run.platform)
    workload, workload_source = run.simulated_workload()
    return RunTask(
        index,
        run.preset_json or platform.preset_json,
        platform.ref,
        run.governor,
        workload,
        duration_ns(run.duration_s),
        run.seed,
        workload_source,
    )


def _run_error(campaign: Campaign, run: Run, outcome: Outcome) -> Exception:
    message = (
        f"campaign {campaign.name}: run failed ({run.describe()}; seed {run.seed}): "
        f"{outcome.error_type}: {outcome.error}"
    )
    return ConfigError(message) if outcome.error_type == "ConfigError" else SimulationError(message)
