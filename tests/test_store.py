"""The results store: one file per run, reuse on re-run, resume after SIGKILL, workers, Ray."""

from __future__ import annotations

import io
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import dvfslab
from campaign_helpers import SLOW, SMALL, TINY, TINY_RUNS, campaign_doc, write_campaign
from dvfslab import ConfigError
from dvfslab._progress import Progress
from dvfslab.campaign import campaign_from_dict, run_campaign
from dvfslab.campaign.runner import default_jobs
from dvfslab.campaign.store import finished_keys, load_manifest, load_results, locked, run_files

CONTRACT_COLUMNS = [
    "platform",
    "benchmark",
    "config",
    "param",
    "iteration",
    "seed",
    "run_key",
    "metric_name",
    "metric_value",
    "metric_unit",
    "better",
    "energy_j",
    "sim_time_s",
    "avg_package_w",
    "wall_time_s",
]


def tiny(**changes):
    return campaign_from_dict(campaign_doc(TINY, **changes), source="tiny.toml")


def run_quietly(campaign, out, jobs=1, **options):
    return run_campaign(campaign, out, jobs=jobs, progress=False, **options)


def test_results_table_has_one_row_per_run_with_the_contract_columns(tmp_path):
    campaign = tiny()
    summary = run_quietly(campaign, tmp_path)
    assert (summary.total, summary.cached, summary.executed) == (TINY_RUNS, 0, TINY_RUNS)
    df = load_results(tmp_path)
    assert list(df.columns[: len(CONTRACT_COLUMNS)]) == CONTRACT_COLUMNS
    assert "run_json" in df.columns
    assert len(df) == TINY_RUNS
    assert df.attrs == {"campaign": "tiny", "baseline": "schedutil"}
    assert load_manifest(tmp_path)["baseline"] == "schedutil"
    # Campaign order: platform, benchmark, param, config, iteration.
    runs = campaign.runs()
    assert list(df["run_key"]) == [r.run_key for r in runs]
    assert list(df["param"]) == ["threads=1"] * 4 + ["threads=2"] * 4
    assert list(df["iteration"]) == [1, 2] * 4
    assert set(df["metric_name"]) == {"mean_response"}
    assert set(df["better"]) == {"lower"}
    for row in df.itertuples():
        result = json.loads(row.run_json)
        assert result["seed"] == row.seed
        assert result["metric"]["value"] == row.metric_value
        assert result["energy_j"] == row.energy_j


def test_a_stored_run_is_what_simulate_returns(tmp_path):
    # Nominal: the run simulates the shipped preset and the spec as written.
    run = tiny(nominal=True).runs()[-1]
    run_quietly(tiny(nominal=True), tmp_path)
    row = load_results(tmp_path).iloc[-1]
    direct = dvfslab.simulate(SMALL, run.governor, run.workload, run.duration_s, run.seed)
    assert row["metric_value"] == direct.metric.value
    assert row["energy_j"] == direct.energy_j


def test_rerun_is_all_cache_hits(tmp_path):
    run_quietly(tiny(), tmp_path)
    stamps = {p.name: p.stat().st_mtime_ns for p in run_files(tmp_path)}
    again = run_quietly(tiny(), tmp_path, jobs=2)
    assert (again.cached, again.executed, again.workers) == (TINY_RUNS, 0, 0)
    assert {p.name: p.stat().st_mtime_ns for p in run_files(tmp_path)} == stamps


def test_growing_a_campaign_runs_only_the_new_runs(tmp_path):
    # Nominal: more iterations would otherwise redraw every model variant.
    run_quietly(tiny(nominal=True), tmp_path)
    grown = tiny(nominal=True, iterations=3, configs={**TINY["configs"], "powersave": "powersave"})
    summary = run_quietly(grown, tmp_path)
    assert (summary.total, summary.cached, summary.executed) == (18, TINY_RUNS, 10)
    assert len(load_results(tmp_path)) == 18


def test_runs_the_campaign_no_longer_has_are_left_out(tmp_path):
    run_quietly(tiny(nominal=True), tmp_path)
    run_quietly(tiny(nominal=True, iterations=1), tmp_path)
    assert len(run_files(tmp_path)) == TINY_RUNS
    assert list(load_results(tmp_path)["iteration"]) == [1] * 4


def test_leftover_temporary_files_are_ignored_then_removed(tmp_path):
    run_quietly(tiny(iterations=1), tmp_path)
    leftover = tmp_path / "runs" / ".0123abcd.parquet.999.ffff.tmp"
    leftover.write_bytes(b"PAR1 half a file")
    assert len(load_results(tmp_path)) == 4
    run_quietly(tiny(), tmp_path)
    assert not leftover.exists()
    assert len(load_results(tmp_path)) == TINY_RUNS


def test_one_writer_at_a_time(tmp_path):
    run_quietly(tiny(iterations=1), tmp_path)
    with locked(tmp_path), pytest.raises(ConfigError, match="being written by another"):
        run_quietly(tiny(), tmp_path)


def test_refuses_a_directory_that_is_not_a_store(tmp_path):
    (tmp_path / "thesis.tex").write_text("precious")
    with pytest.raises(ConfigError, match="not a results directory"):
        run_quietly(tiny(), tmp_path)
    with pytest.raises(ConfigError, match="not a campaign's results directory"):
        load_results(tmp_path)


@pytest.mark.skipif(default_jobs() < 2, reason="needs two CPUs")
def test_a_two_core_machine_runs_two_workers(tmp_path):
    # Enough runs (48, a few seconds) that the second worker has started before the first
    # has taken them all, even on a loaded machine.
    campaign = campaign_from_dict(campaign_doc(SLOW, iterations=12), source="slow.toml")
    summary = run_campaign(campaign, tmp_path, progress=False)  # default jobs: every CPU
    assert summary.backend == "local"
    assert summary.workers == min(default_jobs(), 16)
    pids = set(load_results(tmp_path)["worker_pid"])
    assert len(pids) == summary.workers
    assert os.getpid() not in pids


def test_resume_after_sigkill_stores_each_run_exactly_once(tmp_path):
    path = write_campaign(tmp_path / "slow.toml", SLOW)
    out = tmp_path / "out"
    total = len(campaign_from_dict(SLOW, source="slow").runs())
    command = [sys.executable, "-m", "dvfslab", "campaign", "run", str(path), "--out", str(out)]
    proc = subprocess.Popen([*command, "--jobs", "2"], stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while len(run_files(out)) < 5:
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        assert time.monotonic() < deadline
        time.sleep(0.005)
    proc.kill()  # SIGKILL, to the campaign process alone
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    stored = finished_keys(out)
    assert 5 <= len(stored) < total, "the campaign should have been killed half-way"
    killed_workers = set(load_results(out)["worker_pid"])
    assert len(load_results(out)) == len(stored)
    # Its report says what it lacks.
    report = subprocess.run(
        [sys.executable, "-m", "dvfslab", "campaign", "report", str(out), "--format", "json"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert report.returncode == 0, report.stderr
    assert f"incomplete: {len(stored)} of {total} runs finished" in report.stderr
    counts = json.loads(report.stdout)["runs"]
    assert (counts["finished"], counts["expected"]) == (len(stored), total)
    assert counts["incomplete"]

    rerun = subprocess.run(command, capture_output=True, text=True, check=False, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    assert f"{total} runs in {out}: {len(stored)} already stored, {total - len(stored)} run" in (
        rerun.stdout
    )
    df = load_results(out)
    assert len(df) == total
    assert df["run_key"].is_unique
    assert set(df["run_key"]) == {r.run_key for r in campaign_from_dict(SLOW, source="s").runs()}
    assert len(run_files(out)) == total
    assert not list((out / "runs").glob(".*"))
    # The killed campaign's workers noticed and exited.
    for pid in killed_workers:
        _wait_gone(pid)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_ray_runs_the_same_tasks(tmp_path):
    # Ray is a dev dependency: this runs against a local, in-process Ray instance.
    summary = run_campaign(tiny(), tmp_path, ray_address="local", progress=False)
    assert (summary.backend, summary.executed) == ("ray", TINY_RUNS)
    df = load_results(tmp_path)
    assert len(df) == TINY_RUNS
    assert df["run_key"].is_unique
    assert os.getpid() not in set(df["worker_pid"])
    # The same results as local workers give.
    local = tmp_path / "local"
    run_quietly(tiny(), local)
    assert list(load_results(local)["metric_value"]) == list(df["metric_value"])


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_a_campaign_on_a_multi_process_ray_cluster_gives_the_local_results(tmp_path):
    # A head node and a second node, each its own raylet and worker processes, reached by the
    # head's address as `--ray HOST:PORT` reaches a cluster started with `ray start --head`.
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    try:
        cluster.add_node(num_cpus=1)
        summary = run_campaign(
            tiny(), tmp_path / "ray", ray_address=cluster.address, progress=False
        )
    finally:
        cluster.shutdown()
    assert (summary.backend, summary.executed, summary.workers) == ("ray", TINY_RUNS, 2)
    run_quietly(tiny(), tmp_path / "local")
    on_ray, local = (load_results(tmp_path / d).set_index("run_key") for d in ("ray", "local"))
    assert os.getpid() not in set(on_ray["worker_pid"])
    # Every run's whole result, its wall time aside, is the one this process computes.
    assert sorted(on_ray.index) == sorted(local.index)
    for key in local.index:
        ray_json, local_json = (json.loads(df.at[key, "run_json"]) for df in (on_ray, local))
        ray_json.pop("wall_time_s")
        local_json.pop("wall_time_s")
        assert ray_json == local_json, key


def test_a_ray_client_address_without_ray_client_is_a_config_error(tmp_path, monkeypatch):
    import socket

    from dvfslab.campaign.runner import check_ray

    monkeypatch.setitem(sys.modules, "grpc", None)  # Ray without its client extra
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        with pytest.raises(ConfigError, match=r"needs Ray Client \(ray\[client\]\): pip install"):
            check_ray(f"ray://127.0.0.1:{port}")


@pytest.mark.parametrize(
    ("address", "says"),
    [
        ("nonsense", "expected auto, local, ray://HOST:PORT"),
        ("127.0.0.1:99999", "expected auto, local, ray://HOST:PORT"),
        ("127.0.0.1:1", "cannot reach 127.0.0.1:1 (Connection refused)"),
        ("ray://127.0.0.1:1", "cannot reach 127.0.0.1:1 (Connection refused)"),
    ],
)
def test_a_bad_ray_address_is_one_error_line_at_once(cli, tmp_path, address, says):
    # Port 1 on this machine: nothing listens, so Ray itself would retry for minutes.
    path = write_campaign(tmp_path / "tiny.toml", campaign_doc())
    started = time.monotonic()
    run = cli("campaign", "run", str(path), "--out", str(tmp_path / "out"), "--ray", address)
    assert time.monotonic() - started < 60
    assert run.code == 1
    assert run.stderr.startswith(f"error: --ray {address}: {says}")
    assert run.stderr.count("\n") == 1, run.stderr
    assert not (tmp_path / "out").exists(), "nothing written before the address is checked"


def test_ray_without_the_ray_package_is_a_config_error(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    with pytest.raises(ConfigError, match=r"^--ray needs the ray package: pip install"):
        run_campaign(tiny(), tmp_path / "out", ray_address="local", progress=False)
    assert not (tmp_path / "out").exists()


def _wait_gone(pid: int, timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while _alive(pid):
        assert time.monotonic() < deadline, f"worker {pid} outlived its campaign"
        time.sleep(0.05)


def _alive(pid: int) -> bool:
    """Running, not a zombie (an orphan's zombie lingers where nothing reaps it)."""
    stat = Path(f"/proc/{pid}/stat")
    if not stat.parent.parent.exists():  # no procfs: ask the kernel
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    try:
        state = stat.read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def test_a_failed_run_stops_the_campaign_and_keeps_the_finished_ones(tmp_path, monkeypatch):
    from dvfslab import _core

    campaign = tiny()
    doomed = campaign.runs()[5]
    simulate = _core.simulate

    def failing(*args, **options):
        if options["seed"] == doomed.seed:
            raise dvfslab.SimulationError("the model diverged")
        return simulate(*args, **options)

    monkeypatch.setattr(_core, "simulate", failing)
    with pytest.raises(dvfslab.SimulationError) as e:
        run_quietly(campaign, tmp_path)
    assert str(e.value) == (
        f"campaign tiny: run failed ({doomed.describe()}; seed {doomed.seed}): "
        "SimulationError: the model diverged"
    )
    assert len(finished_keys(tmp_path)) == 5
    monkeypatch.setattr(_core, "simulate", simulate)
    again = run_quietly(campaign, tmp_path)
    assert (again.cached, again.executed) == (5, TINY_RUNS - 5)


def test_a_store_killed_before_its_manifest_is_still_a_store(tmp_path):
    (tmp_path / "runs").mkdir()
    (tmp_path / ".lock").touch()
    assert run_quietly(tiny(), tmp_path).executed == TINY_RUNS


def test_progress_without_a_terminal_is_a_line_now_and_then():
    out = io.StringIO()
    meter = Progress("demo", total=4, cached=1, stream=out, interval_s=0)
    with meter.shown():
        for _ in range(3):
            meter.advance()
    lines = out.getvalue().splitlines()
    assert lines[0] == "demo: 4 runs, 1 already stored, 3 to run"
    assert lines[1].startswith("demo: 1/3 runs (33%), 0:00:00 elapsed, ETA 0:00:00")
    assert lines[-1] == "demo: 3/3 runs in 0:00:00"


def test_an_unreadable_run_file_is_named(tmp_path):
    run_quietly(tiny(iterations=1), tmp_path)
    victim = run_files(tmp_path)[2]
    victim.write_bytes(b"not parquet")
    with pytest.raises(dvfslab.DvfsError, match=rf"^{victim}: unreadable run file .*delete it"):
        load_results(tmp_path)


def test_a_run_file_copied_under_another_runs_name_is_refused_then_run_again(cli, tmp_path):
    path = write_campaign(tmp_path / "tiny.toml", campaign_doc())
    out = tmp_path / "out"
    assert cli("campaign", "run", str(path), "--out", str(out), "--quiet").code == 0
    source, victim = run_files(out)[0], run_files(out)[3]
    victim.write_bytes(source.read_bytes())  # one run would count twice, another vanish
    key, claimed = victim.name[: -len(".parquet")], source.name[: -len(".parquet")]
    says = f"holds run {claimed}, not the run its name says (a copied or renamed file)"
    with pytest.raises(dvfslab.DvfsError, match=rf"^{victim}: {re.escape(says)}; delete it"):
        load_results(out)
    report = cli("campaign", "report", str(out))
    assert report.code == 1
    assert report.stderr.startswith(f"error: {victim}: {says}")
    assert key not in finished_keys(out)

    again = cli("campaign", "run", str(path), "--out", str(out), "--quiet")
    assert again.code == 0, again.stderr
    assert (
        again.stderr == f"tiny: {victim}: not a whole run file ({says}); running that run again\n"
    )
    df = load_results(out)
    assert len(df) == TINY_RUNS
    assert set(df["run_key"]) == {r.run_key for r in tiny().runs()}


def test_a_run_file_without_its_key_in_the_metadata_is_judged_by_its_row(tmp_path):
    # Files written before the key was in the metadata: the run_key column stands in.
    import pyarrow.parquet as pq

    run_quietly(tiny(iterations=1), tmp_path)
    files = run_files(tmp_path)
    for path in files:
        table = pq.read_table(path)
        assert table.schema.metadata[b"dvfslab.run_key"] == path.name[: -len(".parquet")].encode()
        pq.write_table(table.replace_schema_metadata({}), path)
    assert len(load_results(tmp_path)) == 4
    files[1].write_bytes(files[0].read_bytes())
    with pytest.raises(dvfslab.DvfsError, match=rf"^{files[1]}: holds run "):
        load_results(tmp_path)


def test_a_report_of_a_half_written_store_says_what_it_lacks(cli, tmp_path):
    run_quietly(tiny(), tmp_path)
    runs = tiny().runs()
    for run in (runs[0], runs[5]):  # schedutil threads=1 iteration 1, performance threads=2
        (tmp_path / "runs" / f"{run.run_key}.parquet").unlink()
    cells = (
        f"{SMALL} periodic {runs[0].config} {runs[0].param} (1 of 2), "
        f"{SMALL} periodic {runs[5].config} {runs[5].param} (1 of 2)"
    )
    line = f"incomplete: 6 of 8 runs finished; 2 cells lack runs: {cells}"

    text = cli("campaign", "report", str(tmp_path))
    assert text.code == 0, text.stderr
    assert text.stderr == (
        f"warning: {tmp_path}: {line}; `dvfslab campaign run` again runs the rest\n"
    )
    assert text.stdout.startswith(line + "\n\n")
    markdown = cli("campaign", "report", str(tmp_path), "--format", "markdown")
    assert markdown.stdout.startswith(f"**{line}**\n")
    html = tmp_path.parent / f"{tmp_path.name}.html"
    assert cli("campaign", "report", str(tmp_path), "--html", str(html)).code == 0
    assert f"<b>{line}</b>" in html.read_text()
    doc = json.loads(cli("campaign", "report", str(tmp_path), "--format", "json").stdout)
    assert doc["runs"]["finished"] == 6
    assert doc["runs"]["expected"] == 8
    assert [
        (c["config"], c["param"], c["finished"], c["expected"]) for c in doc["runs"]["incomplete"]
    ] == [
        (runs[0].config, runs[0].param, 1, 2),
        (runs[5].config, runs[5].param, 1, 2),
    ]

    run_quietly(tiny(), tmp_path)  # finished: nothing to say
    whole = cli("campaign", "report", str(tmp_path), "--format", "json")
    assert whole.stderr == ""
    assert json.loads(whole.stdout)["runs"] == {"finished": 8, "expected": 8, "incomplete": []}
    assert "incomplete" not in cli("campaign", "report", str(tmp_path)).stdout


# -- another campaign's store, files that are not whole, killed writers ---------------------


def test_a_store_of_another_campaign_is_refused_unless_forced(cli, tmp_path):
    out = tmp_path / "out"
    tiny_file = write_campaign(tmp_path / "tiny.toml", campaign_doc(iterations=1))
    other = write_campaign(tmp_path / "other.toml", campaign_doc(name="other", iterations=1))
    assert cli("campaign", "run", str(tiny_file), "--out", str(out)).code == 0

    refused = cli("campaign", "run", str(other), "--out", str(out))
    assert refused.code == 1
    assert refused.stderr == (
        f"error: {out} holds the results of campaign tiny, not other: choose another --out, "
        "or add --force to make it campaign other's store\n"
    )
    assert load_manifest(out)["name"] == "tiny"

    forced = cli("campaign", "run", str(other), "--out", str(out), "--force")
    assert forced.code == 0, forced.stderr
    # A run's seed and key do not depend on the campaign's name: every run is reused.
    assert "4 already stored, nothing to run" in forced.stdout
    assert load_results(out).attrs["campaign"] == "other"


def test_a_store_whose_manifest_is_unreadable_is_refused_unless_forced(tmp_path):
    run_quietly(tiny(iterations=1), tmp_path)
    manifest = tmp_path / "campaign.json"
    manifest.write_text(manifest.read_text()[:100])  # cut short
    with pytest.raises(ConfigError, match=r"cannot tell which campaign .* add --force"):
        run_quietly(tiny(iterations=1), tmp_path)
    again = run_quietly(tiny(iterations=1), tmp_path, force=True)
    assert (again.cached, again.executed) == (4, 0)
    assert load_manifest(tmp_path)["name"] == "tiny"


def test_a_run_file_that_is_not_whole_is_run_again_and_named(cli, tmp_path):
    path = write_campaign(tmp_path / "tiny.toml", campaign_doc())
    out = tmp_path / "out"
    assert cli("campaign", "run", str(path), "--out", str(out), "--quiet").code == 0
    cut, garbage = run_files(out)[1], run_files(out)[4]
    cut.write_bytes(cut.read_bytes()[:1000])  # a copy that stopped half-way
    garbage.write_text("not a run")
    assert finished_keys(out) == {p.name[: -len(".parquet")] for p in run_files(out)} - {
        cut.name[: -len(".parquet")],
        garbage.name[: -len(".parquet")],
    }

    again = cli("campaign", "run", str(path), "--out", str(out), "--quiet")
    assert again.code == 0, again.stderr
    assert again.stderr.splitlines() == [
        f"tiny: {cut}: not a whole run file (cut short at 1000 bytes); running that run again",
        f"tiny: {garbage}: not a whole run file (not a Parquet file); running that run again",
    ]
    assert f"{TINY_RUNS - 2} already stored, 2 run" in again.stdout
    assert len(load_results(out)) == TINY_RUNS


KILLED_WRITER = """
import sys, time
from dvfslab._files import replace_atomically

def write(tmp):
    open(tmp, "w").write("half a trace")
    print("writing", flush=True)
    time.sleep(60)

replace_atomically(sys.argv[1], write)
"""


def test_a_killed_writers_temporary_file_goes_with_the_next_write(cli, tmp_path):
    target = tmp_path / "trace.json"
    writer = subprocess.Popen(
        [sys.executable, "-c", KILLED_WRITER, str(target)], stdout=subprocess.PIPE, text=True
    )
    assert writer.stdout is not None
    assert writer.stdout.readline() == "writing\n"
    writer.kill()
    writer.wait()
    (leftover,) = tmp_path.iterdir()
    assert leftover.name.startswith(".trace.json.")
    assert leftover.name.endswith(".tmp")
    # A writer still alive keeps its temporary file.
    alive = tmp_path / f".trace.json.{os.getpid()}.0000.tmp"
    alive.write_text("being written")

    run = cli(
        "run",
        "-p",
        SMALL,
        "-g",
        "performance",
        "-w",
        "cpu-bound",
        "--duration",
        "0.05",
        "--trace",
        str(target),
    )
    assert run.code == 0, run.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [alive.name, "trace.json"]
    assert json.loads(target.read_text())["traceEvents"]


def test_every_write_is_flushed_to_disk(tmp_path, monkeypatch):
    flushed: list[str] = []
    fsync = os.fsync

    def recording_fsync(fd: int) -> None:
        flushed.append(os.readlink(f"/proc/self/fd/{fd}"))
        fsync(fd)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    result = dvfslab.simulate(SMALL, "performance", "cpu-bound", 0.05, timeline=True)
    result.write_timeline(tmp_path / "t.csv")
    run_quietly(tiny(iterations=1), tmp_path / "store")
    names = [Path(p).name for p in flushed]
    # Each file under its temporary name, then its directory after the rename.
    assert any(n.startswith(".t.csv.") for n in names)
    assert any(n.startswith(".campaign.json.") for n in names)
    assert sum(n.startswith(".") and ".parquet." in n for n in names) == 4
    assert names.count(tmp_path.name) >= 1
    assert names.count("runs") == 4


def test_a_full_disk_is_an_error_naming_the_file(tmp_path, monkeypatch, capsys):
    import errno

    from dvfslab.cli.main import main

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    out = tmp_path / "run.json"
    args = ["run", "-p", SMALL, "-g", "performance", "-w", "cpu-bound", "--duration", "0.01"]
    assert main([*args, "--trace", str(out)]) == 1
    assert capsys.readouterr().err == f"error: {out}: No space left on device\n"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_ray_auto_without_a_cluster_says_what_to_do(tmp_path, monkeypatch):
    import ray

    def no_cluster(**options):
        raise ConnectionError(
            "Could not find any running Ray instance. Please specify the one to connect to by "
            "setting `--address` flag or `RAY_ADDRESS` environment variable."
        )

    monkeypatch.setattr(ray, "init", no_cluster)
    with pytest.raises(ConfigError) as e:
        run_campaign(tiny(), tmp_path, ray_address="auto", progress=False)
    assert str(e.value).startswith("--ray auto: no Ray cluster is running on this machine")
    assert "--ray local" in str(e.value)
    assert "--address" not in str(e.value)


def test_the_documented_duckdb_query_groups_by_platform_and_benchmark(
    tmp_path, capsys, monkeypatch
):
    import duckdb

    doc = (Path(__file__).parents[1] / "docs" / "campaign-format.md").read_text(encoding="utf-8")
    (snippet,) = re.findall(r"```python\n(import duckdb\n.*?)```", doc, re.S)
    (query,) = re.findall(r'"""(.*?)"""', snippet, re.S)
    run_quietly(tiny(platforms=[SMALL, "pixel6"]), tmp_path / "results" / "example")

    # The snippet as a user runs it, from the folder that holds results/.
    monkeypatch.chdir(tmp_path)
    exec(snippet, {})
    assert "pixel6" in capsys.readouterr().out
    table = duckdb.sql(query).df()
    # One row per (platform, benchmark, config, param), each the mean of that cell's runs.
    cell = ["platform", "benchmark", "config", "param"]
    expected = (
        load_results(tmp_path / "results" / "example")
        .groupby(cell)["metric_value"]
        .agg(["mean", "count"])
        .reset_index()
    )
    assert len(table) == len(expected) == 2 * 2 * 2
    merged = table.merge(expected, on=cell)
    assert len(merged) == len(expected)
    assert list(merged["mean_x"]) == pytest.approx(list(merged["mean_y"]), rel=1e-12)
    assert (merged["runs"] == merged["count"]).all()
    assert set(merged["runs"]) == {2}
