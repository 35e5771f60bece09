"""Governors written in Python (dvfslab.Governor): called like the built-in ones, their requests
applied by the same cpufreq code."""

from __future__ import annotations

from pathlib import Path

import pytest

import dvfslab
from dvfslab import ConfigError, SimulationError

WORKLOAD = "periodic:threads=4"
PIXEL6_LITTLE = [
    300000,
    574000,
    738000,
    930000,
    1098000,
    1197000,
    1328000,
    1401000,
    1598000,
    1704000,
    1803000,
]


class Fixed(dvfslab.Governor):
    """Always the table entry at `index`."""

    index = 3

    def update(self, policy):
        return policy.table_khz[self.index]


class Threshold(dvfslab.Governor):
    trigger = "scheduler"
    rate_limit_us = 5000

    def update(self, policy):
        return policy.max_khz if max(policy.util_avg) > 300 else policy.min_khz


def test_the_requested_frequency_is_what_every_cpu_of_the_policy_runs():
    r = dvfslab.simulate("pixel6", Fixed(), "cpu-bound:threads=8", duration_s=0.5, explain=True)
    freqs = r.df_cpus_time_in_freq()
    little = freqs[freqs["cpu"] < 4]
    # From the first sampling period on, the LITTLE cluster runs its fourth entry only.
    ran = little.groupby("freq_khz")["time_s"].sum()
    assert ran.idxmax() == 930000
    assert ran[930000] / ran.sum() > 0.95
    decisions = r.df_decisions()
    assert set(decisions[decisions["policy"] == 0]["resolved_khz"]) == {930000}
    assert r.governor == "Fixed"
    # --explain keeps what the governor saw, at each policy's busiest CPU.
    inputs = ["cur_khz", "util_avg_max", "util_est_max", "nr_running_max", "busy_share_max"]
    assert set(inputs) <= set(decisions.columns)
    late = decisions[decisions["time_s"] > 0.1]
    assert (late["busy_share_max"] > 0.9).all()  # 8 CPU-bound threads on 8 CPUs
    assert (late["util_avg_max"] <= 1024).all()


def test_a_request_between_entries_resolves_up_as_for_the_built_in_governors():
    class Between(dvfslab.Governor):
        def update(self, policy):
            return policy.table_khz[1] + 1  # just above an entry: the next one

    r = dvfslab.simulate("pixel6", Between(), "cpu-bound:threads=8", duration_s=0.2, explain=True)
    d = r.df_decisions()
    assert set(d[d["policy"] == 0]["resolved_khz"]) == {PIXEL6_LITTLE[2]}


def test_the_scheduler_trigger_follows_utilisation_within_its_rate_limit():
    busy = dvfslab.simulate(
        "pixel6", Threshold(), "cpu-bound:threads=8", duration_s=1, explain=True
    )
    idle = dvfslab.simulate("pixel6", Threshold(), "periodic:threads=1,run_us=100", duration_s=1)
    assert (
        busy.df_cpus_summary()["avg_freq_khz"].min() > idle.df_cpus_summary()["avg_freq_khz"].max()
    )
    d = busy.df_decisions()
    changes = d[d.groupby("policy")["resolved_khz"].diff() != 0]
    times = changes.groupby("policy")["time_s"].apply(lambda t: t.diff().min())
    assert (times.dropna() >= 0.005 - 1e-9).all()  # never two changes within rate_limit_us


def test_each_policy_gets_its_own_copy_and_the_same_seed_the_same_result():
    class Counting(dvfslab.Governor):
        calls = 0

        def start(self, policy):
            self.cpus = list(policy.cpus)

        def update(self, policy):
            self.calls += 1
            assert policy.cpus == self.cpus
            return None

    gov = Counting()
    r1 = dvfslab.simulate("pixel6", gov, "periodic:threads=4", duration_s=0.3, seed=5)
    r2 = dvfslab.simulate("pixel6", gov, "periodic:threads=4", duration_s=0.3, seed=5)
    assert gov.calls == 0  # the caller's instance is left as it was
    assert (r1.metric, r1.energy_j) == (r2.metric, r2.energy_j)


def test_an_exception_in_user_code_stops_the_run_with_its_time_and_traceback():
    class Boom(dvfslab.Governor):
        sampling_ms = 5

        def update(self, policy):
            if policy.now_s > 0.1:
                raise RuntimeError("boom")

    with pytest.raises(SimulationError, match=r"raised at 0\.105000 s simulated") as e:
        dvfslab.simulate("pixel6", Boom(), "periodic:threads=4", duration_s=2)
    assert isinstance(e.value.__cause__, RuntimeError)
    assert e.value.__cause__.__traceback__ is not None

    class Wrong(dvfslab.Governor):
        def update(self, policy):
            return "fast"

    with pytest.raises(SimulationError) as e:
        dvfslab.simulate("pixel6", Wrong(), "periodic:threads=4", duration_s=1)
    assert "frequency in kHz (a number) or None, got 'fast'" in str(e.value.__cause__)

    class NotANumber(dvfslab.Governor):
        def update(self, policy):
            return float("nan")

    with pytest.raises(SimulationError) as e:
        dvfslab.simulate("pixel6", NotANumber(), "periodic:threads=4", duration_s=1)
    assert "expected a positive frequency" in str(e.value.__cause__)


def test_a_spec_names_the_class_its_tunables_and_the_system_keys(tmp_path, monkeypatch):
    module = tmp_path / "mygovs.py"
    module.write_text(
        "import dvfslab\n"
        "class Fixed(dvfslab.Governor):\n"
        "    index = 1\n"
        "    def update(self, policy):\n"
        "        return policy.table_khz[self.index]\n"
    )
    spec = f"python:{module}:Fixed,index=2,kernel=6.8"
    r = dvfslab.simulate("pixel6", spec, "cpu-bound:threads=8", duration_s=0.2, explain=True)
    d = r.df_decisions()
    assert set(d[d["policy"] == 0]["resolved_khz"]) == {PIXEL6_LITTLE[2]}
    assert r.governor == spec
    monkeypatch.chdir(tmp_path)
    by_module = dvfslab.simulate(
        "pixel6", "python:mygovs:Fixed,index=2,kernel=6.8", "cpu-bound:threads=8", duration_s=0.2
    )
    assert by_module.energy_j == r.energy_j
    for bad, message in [
        ("python:mygovs:Nope", "has no dvfslab.Governor subclass 'Nope'"),
        ("python:mygovs:Fixed,speed=3", "speed: not a tunable of Fixed"),
        ("python:mygovs:Fixed,index=two", "index: expected int, got 'two'"),
        ("python:nosuchmodule:Fixed", "cannot import nosuchmodule"),
        ("python:Fixed", "expected python:MODULE:CLASS"),
    ]:
        with pytest.raises(ConfigError, match=message):
            dvfslab.simulate("pixel6", bad, "cpu-bound:threads=1", duration_s=0.1)


def test_compare_runs_a_python_governor_beside_a_built_in_one(tmp_path, capsys):
    from dvfslab.cli.main import main

    module = Path(__file__)
    spec = f"python:{module}:Fixed,index=10"
    args = ["compare", "-p", "pixel6", "-g", "schedutil", "-g", spec, "-w", "cpu-bound:threads=2"]
    assert main([*args, "--duration", "0.3", "--iterations", "1"]) == 0
    assert spec in capsys.readouterr().out


def test_a_campaign_reruns_a_python_governor_whose_module_changed(tmp_path):
    from dvfslab.campaign import campaign_from_dict

    module = tmp_path / "edited.py"
    body = "import dvfslab\nclass G(dvfslab.Governor):\n    def update(self, policy):\n"
    body += "        return {}\n"
    module.write_text(body.format("policy.max_khz"))
    doc = {
        "name": "t",
        "platforms": ["pixel6"],
        "configs": {"g": f"python:{module}:G"},
        "baseline": "g",
        "benchmarks": {"b": "cpu-bound:threads=1"},
    }
    before = [r.run_key for r in campaign_from_dict(doc, source="t.toml").runs()]
    module.write_text(body.format("policy.min_khz"))
    after = [r.run_key for r in campaign_from_dict(doc, source="t.toml").runs()]
    assert before != after


def test_the_digest_of_a_governor_reads_its_module_without_running_it(tmp_path, monkeypatch):
    from dvfslab.governors import source_digest

    marker = tmp_path / "ran"
    (tmp_path / "sideeffect.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    monkeypatch.chdir(tmp_path)
    by_name = source_digest("python:sideeffect:G")
    by_path = source_digest(f"python:{tmp_path / 'sideeffect.py'}:G")
    assert by_name == by_path
    assert not marker.exists()
    with pytest.raises(ConfigError, match="no source file for nosuchmodule"):
        source_digest("python:nosuchmodule:G")


class Counting(dvfslab.Governor):
    """The same frequency at every call, counting the calls (in a list shared by the copies)."""

    trigger = "scheduler"
    rate_limit_us = 5000
    calls: list = []  # noqa: RUF012 (shared by the per-policy copies on purpose)

    def update(self, policy):
        self.calls.append((policy.cpus[0], policy.now_s))
        return policy.table_khz[2]


def test_the_rate_limit_counts_from_the_last_change_of_frequency_as_schedutils():
    calls = Counting.calls  # a class attribute: not copied with each policy's instance
    calls.clear()
    dvfslab.simulate("pixel6", Counting(), "cpu-bound:threads=8", duration_s=0.2)
    # The frequency never changes after the first request: every utilisation change (each
    # 4-ms tick here) calls update, where counting from the last call would wait 5 ms.
    for policy in (0, 4, 6):
        times = [t for p, t in calls if p == policy]
        gaps = [b - a for a, b in zip(times, times[1:])]
        assert min(gaps) < 0.005
        assert len(times) > 0.2 / 0.005 + 1


def test_a_float_or_out_of_table_frequency_resolves_to_the_table_as_cpufreq_does():
    class Floats(dvfslab.Governor):
        def update(self, policy):
            if policy.now_s < 0.1:
                return policy.table_khz[1] + 0.5  # between entries: the next one up
            return float(policy.table_khz[3])

    r = dvfslab.simulate("pixel6", Floats(), "cpu-bound:threads=8", duration_s=0.2, explain=True)
    d = r.df_decisions()
    little = d[d["policy"] == 0]
    assert list(little["resolved_khz"].unique()) == [PIXEL6_LITTLE[2], PIXEL6_LITTLE[3]]

    class Hertz(dvfslab.Governor):
        def update(self, policy):
            return 10**9  # Hz by mistake

    with pytest.warns(RuntimeWarning, match="above the hardware's highest frequency") as said:
        r = dvfslab.simulate("pixel6", Hertz(), "cpu-bound:threads=8", duration_s=0.2, explain=True)
    assert len([w for w in said if "highest" in str(w.message)]) == 1  # once a run
    d = r.df_decisions()
    assert (d["resolved_khz"] == d["max_khz"]).all()  # clamped to the policy's maximum


def test_a_governor_object_takes_tunables_and_system_keys(tmp_path):
    module = tmp_path / "objs.py"
    module.write_text(
        "import dvfslab\n"
        "class Fixed(dvfslab.Governor):\n"
        "    index = 1\n"
        "    def update(self, policy):\n"
        "        return policy.table_khz[self.index]\n"
    )
    by_spec = dvfslab.simulate(
        "pixel6", f"python:{module}:Fixed,index=2,kernel=5.10,hz=1000", WORKLOAD, duration_s=0.2
    )
    gov = Fixed(index=2, kernel="5.10", hz=1000)
    by_object = dvfslab.simulate("pixel6", gov, WORKLOAD, duration_s=0.2)
    assert by_object.energy_j == by_spec.energy_j
    assert by_object.energy_j != dvfslab.simulate("pixel6", Fixed(index=2), WORKLOAD, 0.2).energy_j
    with pytest.raises(ConfigError, match="speed: not a tunable of Fixed"):
        Fixed(speed=3)


def test_eas_is_off_under_a_python_governor_as_in_linux_and_eas_1_warns():
    with pytest.warns(RuntimeWarning, match="eas=1: EAS is off under a Python governor"):
        on = dvfslab.simulate("pixel6", Fixed(eas=1), WORKLOAD, duration_s=0.2)
    with pytest.warns(RuntimeWarning, match="schedutil:eas=0"):
        dvfslab.simulate("pixel6", f"python:{Path(__file__)}:Fixed,eas=1", WORKLOAD, 0.2)
    off = dvfslab.simulate("pixel6", Fixed(eas=0), WORKLOAD, duration_s=0.2)
    assert on.energy_j == off.energy_j  # the same placement: EAS off in both


# -- mistakes: one `error:` line naming the governor and what is wrong ------------------------

MISTAKES = """
import dvfslab, threading

class Fixed(dvfslab.Governor):
    def update(self, policy):
        return policy.table_khz[0]

class Tiny(Fixed):
    sampling_ms = 1e-9

class Args(Fixed):
    def __init__(self, x):
        self.x = x

class Uncopyable(Fixed):
    def __init__(self):
        self.lock = threading.Lock()

class Bool(Fixed):
    def update(self, policy):
        return True

class Nan(Fixed):
    def update(self, policy):
        return float("nan")

class Raises(Fixed):
    def update(self, policy):
        raise RuntimeError("the lookup table is empty")
"""


@pytest.fixture
def mistakes(tmp_path: Path) -> Path:
    (tmp_path / "mistakes.py").write_text(MISTAKES)
    (tmp_path / "syntax.py").write_text("import dvfslab\nclass X(dvfslab.Governor:\n    pass\n")
    (tmp_path / "exits.py").write_text("import sys\nsys.exit(3)\n")
    (tmp_path / "raises.py").write_text("raise KeyError('config')\n")
    return tmp_path


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("mistakes.py:Fixed,sampling_ms=0", "sampling_ms: expected a number of ms >= 1e-06 (1 ns)"),
        ("mistakes.py:Fixed,sampling_ms=nan", "sampling_ms: expected a number of ms >= 1e-06"),
        ("mistakes.py:Tiny", "sampling_ms: expected a number of ms >= 1e-06 (1 ns), got 1e-09"),
        ("mistakes.py:Fixed,rate_limit_us=-1", "rate_limit_us: expected a number of us >= 0"),
        ("mistakes.py:Fixed,trigger=bogus", "trigger: expected 'sampling' or 'scheduler'"),
        ("mistakes.py:Fixed,__dict__=1", "__dict__: not a tunable of Fixed"),
        ("syntax.py:X", "syntax.py, line 2: "),
        ("exits.py:X", "exits.py called sys.exit(3); a governor module"),
        ("raises.py:X", "raises.py raised KeyError: 'config'"),
        ("mistakes.py:Args", "Args() raised TypeError: "),
        ("mistakes.py:Uncopyable", "the instance cannot be copied (TypeError: cannot pickle"),
    ],
)
def test_a_bad_governor_module_or_setting_is_one_error_line(mistakes, capsys, spec, says):
    from dvfslab.cli.main import main

    spec = f"python:{mistakes}/{spec}"
    code = main(["run", "-p", "pixel6", "-g", spec, "-w", "cpu-bound", "--duration", "0.01"])
    err = capsys.readouterr().err
    assert code == 1, err
    assert err.startswith(f"error: governor '{spec}': "), err
    assert err.count("\n") == 1, err
    assert says in err


@pytest.mark.parametrize(
    ("cls", "cause"),
    [
        (
            "Bool",
            "TypeError: update() must return a frequency in kHz (a number) or None, got True "
            "(a bool)",
        ),
        ("Nan", "ValueError: update() returned NaN kHz: expected a positive frequency"),
        ("Raises", "RuntimeError: the lookup table is empty"),
    ],
)
def test_the_error_of_a_governor_that_raised_says_why(mistakes, capsys, cls, cause):
    from dvfslab.cli.main import main

    spec = f"python:{mistakes}/mistakes.py:{cls}"
    code = main(["run", "-p", "pixel6", "-g", spec, "-w", "cpu-bound", "--duration", "0.05"])
    assert code == 1
    assert capsys.readouterr().err == (
        f"error: the governor raised at 0.010000 s simulated: {cause}\n"
    )


def test_an_instance_with_a_period_below_1_ns_is_refused_before_the_run():
    tiny = Fixed()
    tiny.sampling_ms = 1e-7
    with pytest.raises(ConfigError, match=r"'Fixed': sampling_ms: .*got 1e-07"):
        dvfslab.simulate("pixel6", tiny, "cpu-bound", duration_s=0.01)
    # Past the Python checks, the simulator refuses it too rather than call update() forever.
    from dvfslab import _core
    from dvfslab.platforms import load_platform

    with pytest.raises(ValueError, match="sampling_ms must be at least 1e-06"):
        _core.simulate(
            *load_platform("pixel6"),
            "performance",
            "cpu-bound",
            duration_ns=10**7,
            python_governor=("Fixed", tiny),
        )


# -- every input a built-in governor reads: copies of schedutil and ondemand ------------------

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _examples():
    import importlib.util

    spec = importlib.util.spec_from_file_location("schedutil_example", EXAMPLES / "schedutil.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _decisions(result, raw=True):
    df = result.df_decisions()
    columns = ["time_s", "policy", "resolved_khz", *(["raw_khz"] if raw else [])]
    return [tuple(row) for row in df[columns].itertuples(index=False)]


# uibench with uclamp_min=512 (uclamp), fio (I/O wake-ups), hackbench (runnable_avg above
# util_avg), periodic (the busy hold): pixel6 at the default kernel, EAS on.
COPY_WORKLOADS = ["uibench:uclamp_min=512", "fio", "hackbench", "periodic:threads=4"]


@pytest.mark.parametrize("workload", COPY_WORKLOADS)
def test_a_python_schedutil_decides_as_the_built_in_one_with_eas_on(workload):
    ex = _examples()
    ours = dvfslab.simulate("pixel6", ex.Schedutil(), workload, duration_s=1, explain=True)
    theirs = dvfslab.simulate("pixel6", "schedutil", workload, duration_s=1, explain=True)
    assert len(_decisions(theirs)) > 10
    assert _decisions(ours) == _decisions(theirs)
    assert ours.energy_j == theirs.energy_j
    assert ours.metric == theirs.metric


def test_the_copy_of_schedutil_needs_runnable_avg_uclamp_and_eas():
    """Each input changes the decisions where it matters: the copy matches for its inputs."""
    ex = _examples()

    class NoRunnable(ex.Schedutil):
        def update(self, policy):
            return super().update(_Without(policy, runnable_avg=[0] * len(policy.cpus)))

    class NoUclamp(ex.Schedutil):
        def update(self, policy):
            return super().update(_Without(policy, uclamp=[None] * len(policy.cpus)))

    def run(gov, workload):
        return dvfslab.simulate("pixel6", gov, workload, duration_s=1, explain=True)

    built_in = {w: _decisions(run("schedutil", w)) for w in ("hackbench", "uibench:uclamp_min=512")}
    assert _decisions(run(NoRunnable(), "hackbench")) != built_in["hackbench"]
    assert (
        _decisions(run(NoUclamp(), "uibench:uclamp_min=512")) != built_in["uibench:uclamp_min=512"]
    )
    # Without the declaration, EAS is off and the placement (so the decisions) differ.
    plain = run(ex.Schedutil(enables=()), "uibench:uclamp_min=512")
    assert _decisions(plain) != built_in["uibench:uclamp_min=512"]
    assert plain.energy_j == run("schedutil:eas=0", "uibench:uclamp_min=512").energy_j


class _Without:
    """A policy with some attributes replaced."""

    def __init__(self, policy, **replaced):
        self._policy, self._replaced = policy, replaced

    def __getattr__(self, name):
        return self._replaced.get(name, getattr(self._policy, name))


@pytest.mark.parametrize("workload", COPY_WORKLOADS)
def test_a_python_ondemand_decides_as_the_built_in_one(workload):
    ex = _examples()
    ours = dvfslab.simulate("pixel6", ex.Ondemand(), workload, duration_s=1, explain=True)
    theirs = dvfslab.simulate("pixel6", "ondemand", workload, duration_s=1, explain=True)
    # The built-in logs the proportional frequency before the table; the copy returns the entry.
    assert len(_decisions(theirs)) > 10
    assert _decisions(ours, raw=False) == _decisions(theirs, raw=False)
    assert ours.energy_j == theirs.energy_j


@pytest.mark.parametrize("workload", ["periodic:threads=4", "hackbench", "fio"])
def test_the_copies_decide_as_the_built_in_ones_on_intel_cpufreq_with_one_cpu_a_policy(workload):
    """skylake: intel_cpufreq resolves no request to a table entry (`resolve_khz` keeps the
    kHz), and each policy has one CPU, so schedutil's busy hold acts."""
    ex = _examples()
    for ours, theirs, raw in (
        (ex.Schedutil(), "schedutil", True),
        (ex.Ondemand(), "ondemand:io_is_busy=0", False),  # the copy counts I/O wait as idle
    ):
        a = dvfslab.simulate("skylake-e3-1240v5", ours, workload, duration_s=0.5, explain=True)
        b = dvfslab.simulate("skylake-e3-1240v5", theirs, workload, duration_s=0.5, explain=True)
        assert _decisions(a, raw) == _decisions(b, raw), theirs
        assert a.energy_j == b.energy_j


def test_the_copy_of_schedutil_needs_the_busy_hold_and_the_drivers_resolution():
    ex = _examples()

    class NoHold(ex.Schedutil):
        def update(self, policy):
            self.saved_idle_calls = [-1] * len(policy.cpus)  # never "no idle since"
            return super().update(policy)

    class TableAlways(ex.Schedutil):
        def update(self, policy):
            return super().update(_Without(policy, resolve_khz=_table_entry(policy)))

    def run(gov):
        return dvfslab.simulate("skylake-e3-1240v5", gov, "periodic:threads=4", 0.5, explain=True)

    built_in = _decisions(run("schedutil"))
    assert _decisions(run(NoHold())) != built_in
    assert _decisions(run(TableAlways())) != built_in


def _table_entry(policy):
    def resolve(khz):
        khz = min(max(khz, policy.min_khz), policy.max_khz)
        return next(f for f in policy.table_khz if f >= khz)

    return resolve


def test_a_schedutil_variant_must_declare_both_eas_and_fast_switch():
    ex = _examples()
    with pytest.raises(ConfigError, match=r"enables: expected \(\) or \('eas', 'fast_switch'\)"):
        dvfslab.simulate("pixel6", ex.Schedutil(enables=("eas",)), WORKLOAD, 0.1)
    spec = f"python:{EXAMPLES / 'schedutil.py'}:Schedutil,enables=eas+fast_switch,eas=0"
    off = dvfslab.simulate("pixel6", spec, "uibench:uclamp_min=512", 1)
    assert (
        off.energy_j
        == dvfslab.simulate("pixel6", "schedutil:eas=0", "uibench:uclamp_min=512", 1).energy_j
    )


def test_resolve_khz_is_the_drivers_resolution():
    seen = {}

    class Look(dvfslab.Governor):
        def update(self, policy):
            if policy.index == 0:
                seen[policy.driver] = [policy.resolve_khz(k) for k in (1, 849_316, 10**9)]
            return None

    dvfslab.simulate("skylake-e3-1240v5", Look(), WORKLOAD, 0.05)
    dvfslab.simulate("pixel6", Look(), WORKLOAD, 0.05)
    # intel_cpufreq keeps the kHz within the limits; cpufreq-dt rounds up to its table.
    assert seen["intel_cpufreq"] == [800_000, 849_316, 3_900_000]
    assert seen["cpufreq-dt"] == [PIXEL6_LITTLE[0], 930_000, PIXEL6_LITTLE[-1]]


def test_a_governor_reads_tasks_energy_time_in_state_and_the_other_policies():
    class Looking(dvfslab.Governor):
        trigger = "sampling"
        sampling_ms = 5

        def start(self, policy):
            self.seen = []

        def update(self, policy):
            self.seen.append(policy)
            seen_by_policy[policy.index] = self.seen
            return policy.table_khz[1]

    seen_by_policy: dict[int, list] = {}
    r = dvfslab.simulate("pixel6", Looking(), "periodic:threads=4", duration_s=0.2)
    assert sorted(seen_by_policy) == [0, 1, 2]
    for index, calls in seen_by_policy.items():
        last = calls[-1]
        assert list(last.policies_cpus[index]) == last.cpus
        assert len(last.policies_cur_khz) == 3
        assert last.policies_cur_khz[index] == last.cur_khz
        # Time in state adds up to the time since the start, each at a table entry.
        assert sum(last.time_in_state_s.values()) == pytest.approx(last.now_s)
        assert set(last.time_in_state_s) <= set(last.table_khz)
        # Energy only grows; the policies' sum stays below the run's (the uncore is apart).
        energies = [p.energy_j for p in calls]
        assert energies == sorted(energies)
        assert energies[-1] > 0
        for j, tasks in enumerate(last.tasks):
            assert len(tasks) == last.nr_running[j]
            assert [t.running for t in tasks][:1] in ([], [True])
            # The run-queue's util_est is its tasks' sum.
            assert sum(t.util_est for t in tasks) == last.util_est[j]
        # Busy time since the start: never more than the time, never falling.
        assert all(0 <= b <= last.now_ns for b in last.busy_ns)
        assert all(a <= b for p, q in zip(calls, calls[1:]) for a, b in zip(p.busy_ns, q.busy_ns))
    assert sum(calls[-1].energy_j for calls in seen_by_policy.values()) < r.energy_j


def test_a_governor_arms_its_own_timer():
    class Ticking(dvfslab.Governor):
        trigger = "scheduler"

        def start(self, policy):
            self.times = []
            policy.arm_timer(3)

        def update(self, policy):
            if policy.cpu is None:
                self.times.append(policy.now_ns)
                times[policy.index] = self.times
                policy.arm_timer(7 if len(self.times) % 2 else 3)
            return None

    times: dict[int, list[int]] = {}
    dvfslab.simulate("pixel6", Ticking(), "periodic:threads=4", duration_s=0.1)
    assert times[0][:4] == [3_000_000, 10_000_000, 13_000_000, 20_000_000]

    class Bad(dvfslab.Governor):
        def update(self, policy):
            policy.arm_timer(0)

    with pytest.raises(SimulationError, match=r"arm_timer\(0\)"):
        dvfslab.simulate("pixel6", Bad(), WORKLOAD, 0.1)
