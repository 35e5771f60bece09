//! Workload models: each builds the task programs of a benchmark and computes the benchmark's
//! own metric from what the run recorded. Adding a model means one file with an `INFO` and
//! one line in [`REGISTRY`].

mod apache;
mod cpu_bound;
mod dbench4;
mod disk;
pub mod estimates;
mod ffmpeg;
mod file_read;
mod fio;
mod freq_response;
mod gitsource;
mod hackbench;
mod iozone;
mod kernbench;
pub mod kthreads;
mod loadfile;
mod measure;
mod nas;
mod netperf;
mod periodic;
mod pgbench;
mod pieces;
mod pipe_test;
mod postmark;
mod process;
pub mod rtapp;
mod sample;
mod spawn;
mod specpower;
mod speedometer;
mod step_load;
mod storage;
mod tbench;
mod uibench;
mod ycsb_redis;

use std::rc::Rc;

use crate::engine::TimeNs;
use crate::error::{Result, SimError};
use crate::hw::platform::Platform;
use crate::sched::task::{Amount, Op};
pub use crate::sched::task::{SchedPolicy, TaskAttrs};
use crate::spec::{Knob, KnobValues, Spec};

/// A task to create when the run starts.
#[derive(Clone, Debug)]
pub struct TaskSpec {
    pub name: String,
    pub program: Rc<[Op]>,
    pub start_ns: TimeNs,
    pub attrs: TaskAttrs,
    /// Started in a session of its own, not the benchmark command's (a daemon): with task
    /// groups, in a group of its own.
    pub own_session: bool,
}

impl TaskSpec {
    /// A nice-0 CFS task, runnable anywhere, started at time zero.
    pub fn new(name: impl Into<String>, program: Rc<[Op]>) -> TaskSpec {
        TaskSpec { name: name.into(), program, start_ns: 0, attrs: TaskAttrs::default(), own_session: false }
    }
    /// First wake-up at `ns` instead of time zero.
    pub fn start_at(mut self, ns: TimeNs) -> TaskSpec {
        self.start_ns = ns;
        self
    }
    /// Restrict the task to these CPUs (sched_setaffinity).
    pub fn pinned(mut self, cpus: Vec<usize>) -> TaskSpec {
        self.attrs.affinity = Some(cpus.into());
        self
    }
    /// Offset the channel ids of the program (see [`TaskAttrs::channel_base`]).
    pub fn channel_base(mut self, base: u32) -> TaskSpec {
        self.attrs.channel_base = base;
        self
    }
    pub fn policy(mut self, policy: SchedPolicy) -> TaskSpec {
        self.attrs.policy = policy;
        self
    }
    /// The nice value of a fair task (-20..19; setpriority).
    pub fn nice(mut self, nice: i8) -> TaskSpec {
        self.attrs.nice = nice;
        self
    }
    /// uclamp requests (0..1024); stored for placement and frequency selection.
    pub fn uclamp(mut self, min: Option<u32>, max: Option<u32>) -> TaskSpec {
        self.attrs.uclamp_min = min;
        self.attrs.uclamp_max = max;
        self
    }
    /// A daemon of its own session, not the benchmark command's ([`TaskSpec::own_session`]).
    pub fn own_session(mut self) -> TaskSpec {
        self.own_session = true;
        self
    }
    /// A task of the machine rather than the benchmark (see [`TaskAttrs::background`]).
    pub fn background(mut self) -> TaskSpec {
        self.attrs.background = true;
        self
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Better {
    Higher,
    Lower,
}

impl Better {
    pub fn as_str(self) -> &'static str {
        match self {
            Better::Higher => "higher",
            Better::Lower => "lower",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Metric {
    pub name: String,
    pub value: f64,
    pub unit: String,
    pub better: Better,
}

/// What a run recorded for the workload's metric.
#[derive(Clone, Debug, Default)]
pub struct RunStats {
    pub sim_time_ns: TimeNs,
    /// `Mark::Add` totals, by counter.
    pub counters: Vec<u64>,
    /// Interval durations (`Mark::Start` to `Mark::End`), by slot.
    pub latencies_ns: Vec<Vec<u64>>,
    /// Response time of every periodic activation (activation to `Mark::ActivationDone`).
    pub responses_ns: Vec<u64>,
    /// Work completed by all tasks, in cycles at base frequency.
    pub work_done: f64,
    /// Energy of all packages over the run (J), for benchmarks judged on energy.
    pub energy_j: f64,
    /// Average frequency while busy over all CPUs (kHz): base · ΣAPERF / ΣMPERF.
    pub busy_avg_khz: f64,
    /// When a frequency domain first ran its highest frequency with one active core (ns).
    pub time_to_top_ns: Option<u64>,
    /// Work done during the warm-up, left out of `work_done`.
    pub work_done_before_warmup: f64,
}

/// An I/O device: up to `queue_depth` requests in service at once, the rest wait in FIFO order.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceSpec {
    pub name: String,
    pub queue_depth: u32,
    pub service: Service,
    pub completion: Completion,
}

/// Which CPU a device's completions run on, and so which CPU wakes the task that waited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Completion {
    /// Each CPU has its own queue and interrupt (NVMe under blk-mq): a completion interrupts
    /// the CPU that submitted the request, and the waiting task is woken locally.
    Submitter,
    /// One interrupt line (AHCI SATA, a virtio-blk disk's single queue), taken by `cpu` (the
    /// platform's last CPU when it has fewer): the block layer (`rq_affinity` 1, the default)
    /// completes a request there when that CPU shares the submitter's last-level cache, and
    /// sends it to the submitter by IPI otherwise. That CPU then wakes the task from outside
    /// its CPU, a remote governor callback that intel_pstate ignores, iowait flag included.
    /// `coalesced`: the device raises its interrupt only once it has no request left in
    /// service, so a request that completes while another is still served waits for that one
    /// and both end in the same softirq (`Sim::io_complete`; a KVM guest's virtio disk).
    Line { cpu: usize, coalesced: bool },
}

impl Completion {
    /// The CPU a single-line device's interrupt is taken by on a machine of `ncpus` CPUs.
    pub fn line_cpu(self, ncpus: usize) -> Option<usize> {
        match self {
            Completion::Submitter => None,
            Completion::Line { cpu, .. } => Some(cpu.min(ncpus.saturating_sub(1))),
        }
    }
}

/// How a device serves its requests, and who sleeps on it in iowait.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Service {
    /// Each request on its own, up to `queue_depth` at once; its submitter sleeps on it
    /// (io_schedule) and wakes with the iowait flag.
    Queued,
    /// As `Queued`, but the submitter waits for a kernel worker to serve the request, in a
    /// plain sleep, and wakes without the flag (an XFS transaction waiting for log space
    /// while xfsaild writes metadata back).
    Waited,
    /// Group commit, a journal or WAL flush that serves every waiter at once: one commit runs
    /// at a time, whatever `queue_depth` says, and every request made meanwhile joins the next.
    /// With `leader_iowait` the task whose request a commit serves sleeps on the device itself
    /// and wakes with the iowait flag (a PostgreSQL backend in fdatasync); the others wait for
    /// the commit outside io_schedule. Without it nobody does: a filesystem's log force (the
    /// XFS log) has a kernel worker write the log while every caller waits for the commit.
    GroupCommit { leader_iowait: bool },
}

pub trait Workload {
    fn tasks(&self, plat: &Platform) -> Vec<TaskSpec>;
    /// Programs that `Op::Spawn` starts, by index.
    fn programs(&self, _plat: &Platform) -> Vec<Rc<[Op]>> {
        Vec::new()
    }
    /// The I/O devices that `Op::Io` addresses, by index.
    fn devices(&self) -> Vec<DeviceSpec> {
        Vec::new()
    }
    /// How long a run lasts when the user does not say.
    fn default_duration_ns(&self) -> TimeNs;
    fn metric(&self, stats: &RunStats) -> Metric;
    /// How many of the benchmark's own operations the measured interval completed, counted
    /// as the benchmark counts them (loadfile operations, transactions, messages, commands):
    /// the denominator of per-operation statistics (`dvfslab model check`). None where the
    /// benchmark has no such count.
    fn operations(&self, _stats: &RunStats) -> Option<Operations> {
        None
    }
}

/// A count of a benchmark's operations, and what one operation is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Operations {
    pub count: u64,
    pub unit: &'static str,
}

impl Operations {
    /// Counter `counter` of `stats` as `unit`s.
    pub fn counted(stats: &RunStats, counter: u16, unit: &'static str) -> Option<Operations> {
        Some(Operations { count: stats.counters.get(counter as usize).copied().unwrap_or(0), unit })
    }
}

pub struct WorkloadInfo {
    pub name: &'static str,
    pub description: &'static str,
    pub metric: &'static str,
    pub unit: &'static str,
    pub better: Better,
    pub knobs: &'static [Knob],
    pub build: fn(&KnobValues) -> Box<dyn Workload>,
}

pub const REGISTRY: &[&WorkloadInfo] = &[
    &cpu_bound::INFO,
    &periodic::INFO,
    &tbench::INFO,
    &dbench4::INFO,
    &netperf::INFO,
    &hackbench::INFO,
    &pipe_test::INFO,
    &pgbench::INFO,
    &apache::INFO,
    &kernbench::INFO,
    &gitsource::INFO,
    &spawn::INFO,
    &nas::INFO,
    &fio::INFO,
    &iozone::INFO,
    &ycsb_redis::INFO,
    &ffmpeg::INFO,
    &file_read::SEQ_INFO,
    &file_read::RANDOM_INFO,
    &specpower::INFO,
    &freq_response::INFO,
    &step_load::INFO,
    &postmark::INFO,
    &speedometer::INFO,
    &uibench::INFO,
];

/// Parse a workload spec string into a model; text starting with `{` is an rt-app file.
pub fn parse(text: &str) -> Result<(Spec, Box<dyn Workload>)> {
    if text.trim_start().starts_with('{') {
        let rtapp = rtapp::RtApp::parse(text, "rt-app")?;
        return Ok((Spec { name: "rt-app".into(), params: Vec::new() }, Box::new(rtapp)));
    }
    let spec = Spec::parse(text, "workload")?;
    let info = REGISTRY.iter().copied().find(|w| w.name == spec.name).ok_or_else(|| {
        let known: Vec<&str> = REGISTRY.iter().map(|w| w.name).collect();
        SimError::config("workload", &spec.name, format!("unknown workload (known: {})", known.join(", ")))
    })?;
    let mut knobs = info.knobs.to_vec();
    knobs.extend_from_slice(COMMON_KNOBS);
    let (values, _) = KnobValues::resolve(&spec, &knobs, "workload", &[])?;
    Ok((spec, (info.build)(&values)))
}

/// Knobs every workload spec accepts besides its own.
pub const COMMON_KNOBS: &[Knob] = &[
    Knob::new(
        "warmup_ms",
        "ms",
        0.0,
        0.0,
        1e7,
        "leading interval left out of the metric, energy and per-CPU figures (the benchmark's warm-up)",
    ),
    Knob::new(
        "kthread_hz",
        "Hz",
        0.0,
        0.0,
        10_000.0,
        "background kernel-thread wake-ups per second on every CPU (kworkers, RCU, timers), added to the \
         platform's own background; 0 = none",
    ),
    Knob::new("kthread_us", "us", 20.0, 1.0, 10_000.0, "work of each background wake-up, as time at base frequency"),
    Knob::new(
        "phase_us",
        "us",
        0.0,
        0.0,
        1e7,
        "each task the workload starts with begins after a delay drawn uniformly in [0, phase_us) from the run's \
         seed, as a real machine's tasks never start together; 0 = all at their start",
    ),
    Knob::new(
        "work_jitter_pct",
        "%",
        0.0,
        0.0,
        90.0,
        "the work of every run segment of the workload's tasks is multiplied by a factor drawn uniformly in \
         [1 - p/100, 1 + p/100] from the run's seed (requests never cost quite the same); 0 = none",
    ),
    Knob::new(
        "autogroup",
        "",
        0.0,
        0.0,
        1.0,
        "1: task groups as autogroup makes them (kernel.sched_autogroup_enabled=1): one per session, the \
         benchmark's tasks in its command's, a daemon it talks to and a task that calls setsid in their own, \
         the machine's kernel threads outside them; modelled for kernels 6.14 to 6.18; 0 = no task groups",
    ),
    Knob::new(
        "cpumask",
        "mask",
        0.0,
        0.0,
        9_007_199_254_740_991.0,
        "the CPUs the workload's tasks may run on, as taskset's mask (bit i: CPU i; 2 = CPU 1, 6 = CPUs 1 and 2), \
         inherited by the tasks they fork; 0 = every CPU",
    ),
];

/// What a workload spec's common knobs ask for; the defaults for rt-app files, workloads
/// built in code (empty spec) and specs without them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Common {
    pub warmup_ns: u64,
    pub kthread_hz: f64,
    pub kthread_us: f64,
    /// Start phases of the workload's first tasks: delays uniform in `[0, phase_ns)`.
    pub phase_ns: f64,
    /// Work jitter: every run segment's work times a factor uniform in `[1 - j, 1 + j]`.
    pub work_jitter: f64,
    /// taskset's mask of the CPUs the workload's tasks may use (bit i: CPU i); 0 = every CPU.
    pub cpumask: u64,
    /// The workload's tasks share a task group (`sched/group.rs`).
    pub autogroup: bool,
}

impl Common {
    /// The CPUs of `cpumask` on a platform of `ncpus` CPUs, none when every CPU is allowed.
    /// A mask naming a CPU the platform does not have, or none at all, is refused (taskset
    /// refuses a mask without an online CPU).
    pub fn allowed_cpus(&self, ncpus: usize) -> Result<Option<Vec<usize>>> {
        if self.cpumask == 0 {
            return Ok(None);
        }
        if ncpus < 64 && self.cpumask >> ncpus != 0 {
            return Err(SimError::config(
                "workload",
                "cpumask",
                format!("{:#x} names a CPU beyond the platform's {ncpus} (CPUs 0 to {})", self.cpumask, ncpus - 1),
            ));
        }
        Ok(Some((0..ncpus.min(64)).filter(|&c| self.cpumask >> c & 1 == 1).collect()))
    }
}

/// The common knobs of workload spec `text`.
pub fn common(text: &str) -> Result<Common> {
    let text = text.trim_start();
    let params = if text.is_empty() || text.starts_with('{') {
        Vec::new()
    } else {
        let spec = Spec::parse(text, "workload")?;
        spec.params.into_iter().filter(|(k, _)| COMMON_KNOBS.iter().any(|c| c.name == k)).collect()
    };
    let (values, _) = KnobValues::resolve(&Spec { name: "workload".into(), params }, COMMON_KNOBS, "workload", &[])?;
    Ok(Common {
        warmup_ns: (values.get("warmup_ms") * 1e6) as u64,
        kthread_hz: values.get("kthread_hz"),
        kthread_us: values.get("kthread_us"),
        phase_ns: values.get("phase_us") * 1000.0,
        work_jitter: values.get("work_jitter_pct") / 100.0,
        cpumask: cpumask(values.get("cpumask"))?,
        autogroup: autogroup(values.get("autogroup"))?,
    })
}

/// The `autogroup` knob: 0 or 1.
fn autogroup(value: f64) -> Result<bool> {
    if value == 0.0 || value == 1.0 {
        Ok(value == 1.0)
    } else {
        Err(SimError::config("workload", "autogroup", format!("{value}: expected 0 or 1")))
    }
}

/// The `cpumask` knob as a mask: a whole number (exact in a 64-bit float).
fn cpumask(value: f64) -> Result<u64> {
    if value.fract() != 0.0 {
        return Err(SimError::config("workload", "cpumask", format!("{value} is not a whole number (a CPU mask)")));
    }
    Ok(value as u64)
}

/// The background kernel threads of a run, as (wake-ups a second per CPU, µs each): the
/// platform's own (`background`, what its daemons and timer-driven kernel threads do whatever
/// runs) plus what the workload spec adds (`kthread_hz`, `kthread_us`), their work the
/// rate-weighted mean of the two.
pub fn background_kthreads(plat: &Platform, common: &Common) -> (f64, f64) {
    let (p_hz, p_us) = plat.file.background.map_or((0.0, 0.0), |b| (b.kthread_hz, b.kthread_us));
    let hz = p_hz + common.kthread_hz;
    if hz <= 0.0 {
        return (0.0, common.kthread_us);
    }
    (hz, (p_hz * p_us + common.kthread_hz * common.kthread_us) / hz)
}

/// Background kernel threads (kworkers, RCU, writeback, timers; docs/model.md), one pinned to
/// each CPU: each wakes `hz` times a second on average and works `us` microseconds at its
/// cluster's base frequency. They wake idle CPUs, take turns with the benchmark's tasks and
/// give menu a next timer, as the real ones do. Their intervals are exponential: the
/// wake-ups of many independent daemons and timers together make a Poisson process, and the
/// recordings' (kvm-guest-2cpu, kernbench) have a coefficient of variation of 1.4–1.5 and a
/// median 0.57 of their mean, where a jittered period (uniform in half to one and a half of
/// the mean: 0.29, 1.0) would preempt a CPU-bound task at regular intervals instead.
///
/// Each starts at its first wake-up, drawn here from `rng` (the run's background stream, not
/// the workload's), so a kernel thread that never wakes within the run changes nothing.
pub fn kthreads(plat: &Platform, hz: f64, us: f64, rng: &mut impl rand::Rng) -> Vec<TaskSpec> {
    if hz <= 0.0 {
        return Vec::new();
    }
    // A wake-up rate so low that its interval is infinite (or beyond u64 ns) never wakes.
    let mean_ns = (1e9 / hz).min(KTHREAD_INTERVAL_MAX_NS);
    let interval = Amount::Exponential(mean_ns);
    (0..plat.ncpus())
        .map(|cpu| {
            let base_khz = plat.cluster_of_cpu(cpu).frequency.base_khz as f64;
            let program: Rc<[Op]> = vec![
                Op::Run { cycles: Amount::Fixed(us * base_khz / 1000.0), mem_frac: 0.0 },
                Op::Sleep { ns: interval },
                Op::Jump { to: 0 },
            ]
            .into();
            let first_wake_ns = interval.draw(rng) as TimeNs;
            TaskSpec::new(format!("kworker/{cpu}"), program).pinned(vec![cpu]).background().start_at(first_wake_ns)
        })
        .collect()
}

/// The longest mean interval between a kernel thread's wake-ups: 10^17 ns, some three years,
/// longer than any run; an exponential draw is at most 37 times its mean (-ln 2^-53), which
/// still fits in the u64 of simulated time.
const KTHREAD_INTERVAL_MAX_NS: f64 = 1e17;

/// Check that every program's jumps, spawns and devices point at something that exists, so a
/// malformed workload is an error before the run rather than a crash during it.
pub fn validate_programs(name: &str, tasks: &[TaskSpec], programs: &[Rc<[Op]>], devices: usize) -> Result<()> {
    let all =
        tasks.iter().map(|t| (t.name.as_str(), &t.program)).chain(programs.iter().map(|p| ("(spawned program)", p)));
    // Tasks of one kind share their program (tbench's clients, thousands of operations each):
    // one check of each is enough, and the first task that has it is the one an error names.
    let mut checked = std::collections::HashSet::new();
    for (task, prog) in all {
        if !checked.insert(prog.as_ptr()) {
            continue;
        }
        let err = |msg: String| Err(SimError::config(format!("workload '{name}'"), task, msg));
        if prog.is_empty() {
            return err("empty program".into());
        }
        for (i, op) in prog.iter().enumerate() {
            match *op {
                Op::Jump { to } if to >= prog.len() => return err(format!("op {i} jumps to {to}, past the end")),
                Op::Poll { empty, .. } if empty >= prog.len() => {
                    return err(format!("op {i} goes on at {empty} when empty, past the end"))
                }
                Op::Repeat { to, .. } if to > i => return err(format!("op {i} repeats from {to}, after itself")),
                Op::Repeat { times: 0, .. } => return err(format!("op {i} repeats zero times")),
                Op::Spawn { program, .. } if program as usize >= programs.len() => {
                    return err(format!("op {i} spawns program {program}, which does not exist"))
                }
                Op::Io { dev, .. }
                | Op::IoEndWork { dev, .. }
                | Op::IoPlugged { dev, .. }
                | Op::IoFlush { dev, .. }
                | Op::IoWriteback { dev, .. }
                    if dev as usize >= devices =>
                {
                    return err(format!("op {i} uses I/O device {dev}, which does not exist"))
                }
                Op::Barrier { n: 0, .. } => return err(format!("op {i}: a barrier needs at least one task")),
                Op::WaitPeriod { period_ns: 0 } => return err(format!("op {i}: period must be > 0")),
                Op::Timer { period_ns: 0, .. } => return err(format!("op {i}: period must be > 0")),
                _ => {}
            }
        }
        // A program must not run off its end: the last operation loops, exits or goes on with
        // the program's next piece.
        if !matches!(prog[prog.len() - 1], Op::Jump { .. } | Op::Exit | Op::Continue(_)) {
            return err("the program must end with a jump, an exit or its next piece".into());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Units of knobs that count things or pick among alternatives: only whole numbers.
    const COUNTS: &[&str] = &[
        "threads",
        "clients",
        "groups",
        "loops",
        "connections",
        "jobs",
        "units",
        "processes",
        "frames",
        "iterations",
        "transactions",
        "files",
        "ops",
        "lines",
        "branches",
        "bytes",
        "bool",
        "choice",
    ];

    #[test]
    fn count_knobs_take_whole_numbers_only() {
        for info in REGISTRY {
            for k in info.knobs {
                assert!(!COUNTS.contains(&k.unit) || k.integer, "{} {} counts {}", info.name, k.name, k.unit);
            }
        }
        for spec in ["cpu-bound:threads=1.5", "periodic:threads=2.5", "fio:jobs=1.5", "uibench:frames=10.5"] {
            let err = parse(spec).err().expect("refused").to_string();
            let (name, field) = spec.split_once(':').and_then(|(n, kv)| Some((n, kv.split_once('=')?.0))).unwrap();
            assert!(err.starts_with(&format!("workload '{name}': {field}: expected a whole number")), "{err}");
        }
    }

    #[test]
    fn defaults_and_choices_lie_in_their_ranges() {
        for info in REGISTRY {
            for k in info.knobs.iter().chain(COMMON_KNOBS) {
                for v in std::iter::once(k.default).chain(k.choices.iter().map(|(_, v)| *v)) {
                    assert!((k.min..=k.max).contains(&v), "{} {}: {v}", info.name, k.name);
                    assert!(!k.integer || v.fract() == 0.0, "{} {}: {v}", info.name, k.name);
                }
                // An uncertain constant's range holds its default and lies within what the
                // knob accepts, so that every value drawn from it is a valid spec.
                if let Some(u) = k.uncertainty {
                    let what = format!("{} {}: range [{}, {}]", info.name, k.name, u.lo, u.hi);
                    assert!(u.lo < u.hi, "{what}");
                    assert!((u.lo..=u.hi).contains(&k.default), "{what}, default {}", k.default);
                    assert!(k.min <= u.lo && u.hi <= k.max, "{what}, knob [{}, {}]", k.min, k.max);
                    assert!(!u.source.trim().is_empty(), "{what}: no source");
                }
            }
        }
    }

    #[test]
    fn no_workload_knob_shares_a_name_with_another_or_a_common_one() {
        for info in REGISTRY {
            let names: Vec<&str> = info.knobs.iter().chain(COMMON_KNOBS).map(|k| k.name).collect();
            for (i, name) in names.iter().enumerate() {
                assert!(!names[..i].contains(name), "{}: knob {name} declared twice", info.name);
            }
        }
    }

    #[test]
    fn the_campaign_workloads_declare_their_costs_uncertain() {
        for name in ["pgbench", "netperf", "tbench", "dbench4", "kernbench", "gitsource"] {
            let info = REGISTRY.iter().find(|w| w.name == name).expect("registered");
            let uncertain = info.knobs.iter().filter(|k| k.uncertainty.is_some()).count();
            assert!(uncertain >= 2, "{name}: {uncertain} uncertain knobs");
        }
        // A cost knob reaches the model: 3 µs more per operation adds 9,000 cycles (at 3 GHz)
        // to each of the client's loadfile lines.
        let plat = crate::hw::platform::Platform::from_json(SKYLAKE_JSON, "skylake-e3-1240v5").unwrap();
        let client_work = |spec: &str| {
            let (_, w) = parse(spec).unwrap();
            let client = w.tasks(&plat)[0].program.clone();
            client
                .iter()
                .filter_map(|op| if let Op::Run { cycles, .. } = op { Some(cycles.mean()) } else { None })
                .sum::<f64>()
        };
        let more = format!("tbench:client_us={}", estimates::tbench::CLIENT_US.default + 3.0);
        let added = client_work(&more) - client_work("tbench");
        let lines = estimates::nbench::LOADFILE_OPS as f64;
        assert!((added / (9000.0 * lines) - 1.0).abs() < 1e-9, "{added} cycles over {lines} lines");
    }

    #[test]
    fn a_runs_background_is_the_platforms_plus_the_workloads() {
        let kvm = Platform::from_json(
            include_str!("../../../../python/dvfslab/data/platforms/kvm-guest-2cpu.json"),
            "kvm-guest-2cpu",
        )
        .unwrap();
        let own = kvm.file.background.expect("the recordings machine declares its background");
        let none = Platform::from_json(SKYLAKE_JSON, "skylake").unwrap();
        assert!(none.file.background.is_none());
        let quiet = common("cpu-bound").unwrap();
        // Without the workload's, the platform's alone; without the platform's, the workload's.
        assert_eq!(background_kthreads(&kvm, &quiet), (own.kthread_hz, own.kthread_us));
        assert_eq!(background_kthreads(&none, &quiet).0, 0.0);
        let busy = common("cpu-bound:kthread_hz=90,kthread_us=10").unwrap();
        assert_eq!(background_kthreads(&none, &busy), (90.0, 10.0));
        // Both: the rates add and each wake-up's work is their rate-weighted mean.
        let (hz, us) = background_kthreads(&kvm, &busy);
        assert_eq!(hz, own.kthread_hz + 90.0);
        assert!((hz * us - (own.kthread_hz * own.kthread_us + 90.0 * 10.0)).abs() < 1e-9, "{us}");
    }

    const SKYLAKE_JSON: &str = include_str!("../../../../python/dvfslab/data/platforms/skylake-e3-1240v5.json");
}
