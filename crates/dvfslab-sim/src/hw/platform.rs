//! Platform presets: the JSON format of `docs/platform-format.md`, its validation, and the
//! machine it describes laid out as CPUs, cores, frequency domains, policies and packages.

use serde::Deserialize;

use crate::error::{Result, SimError};

pub const SCHEMA: &str = "dvfslab-platform/1";

// ---------------------------------------------------------------------------------------------
// The file format (serde). `deny_unknown_fields` everywhere: a misspelt field is an error.
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlatformFile {
    pub schema: String,
    pub id: String,
    pub name: String,
    pub description: String,
    pub vendor: Vendor,
    /// Hardware P-states (Intel HWP): what intel_pstate's `algorithm=hwp` needs.
    #[serde(default)]
    pub hwp: bool,
    pub topology: TopologyFile,
    pub clusters: Vec<ClusterFile>,
    pub package_power: PackagePowerFile,
    pub rapl: RaplFile,
    pub defaults: DefaultsFile,
    /// x86 CPUID family and model (decimal): what model-specific kernel rules key on.
    #[serde(default)]
    pub cpuid: Option<CpuIdFile>,
    /// The firmware's ACPI `_CPC` performance capabilities; None when the firmware has no `_CPC`.
    #[serde(default)]
    pub cppc: Option<CppcFile>,
    /// The machine's own background activity, whatever the workload; None = none.
    #[serde(default)]
    pub background: Option<BackgroundFile>,
    /// A virtual machine's cost of waking one of its halted vCPUs; None on bare metal.
    #[serde(default)]
    pub vcpu_wake: Option<VcpuWakeFile>,
    /// What the kernel's own switching costs on this machine; None: nothing of its own, the
    /// workloads' per-operation costs include it as they were fitted.
    #[serde(default)]
    pub sched_costs: Option<SchedCostsFile>,
    /// A guest kernel that keeps a woken task on the vCPU it last ran on while that vCPU has
    /// room for it; None: the kernel's own wake-up placement alone.
    #[serde(default)]
    pub vcpu_pack: Option<VcpuPackFile>,
    /// What instructions that trap to a virtual machine's hypervisor cost its guest; None on
    /// bare metal, where they cost a few hundred cycles at most.
    #[serde(default)]
    pub vm_exits: Option<VmExitsFile>,
    #[serde(default)]
    pub notes: Vec<String>,
    #[serde(default)]
    pub sources: Vec<serde_json::Value>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Vendor {
    Intel,
    Amd,
    Arm,
    Ibm,
}

/// x86 CPUID identification (family as the kernel's `x86`, model as `x86_model`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct CpuIdFile {
    pub family: u32,
    pub model: u32,
}

/// ACPI CPPC performance capabilities (`_CPC`), in the firmware's abstract performance units.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct CppcFile {
    /// HighestPerformance as the register/`_CPC` reports it.
    pub highest_perf: u32,
    /// NominalPerformance: the highest sustained level, which acpi-cpufreq's top `_PSS` entry is.
    pub nominal_perf: u32,
    /// Whether HighestPerformance differs between cores (AMD "preferred cores").
    #[serde(default)]
    pub preferred_cores: bool,
}

/// What a guest pays when a wake-up sends an IPI to one of its vCPUs that halted in an idle
/// state (HLT traps to the host, which deschedules the vCPU's thread): the host must run that
/// thread again before the guest sees the interrupt. A hypervisor's property, not an idle
/// state's: the guest's idle-state table still says what the guest's cpuidle reads.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct VcpuWakeFile {
    /// From the IPI's send to the halted vCPU taking it (the guest logs `sched_wakeup` there
    /// when the wake-up went through the target's wake list).
    pub ipi_us: f64,
    /// From the IPI's handler to the woken task running: the guest leaving its idle loop,
    /// whose tick restart reprograms the timer through the host.
    #[serde(default)]
    pub resume_us: f64,
    /// The waker's own time sending the IPI (a VM exit on the APIC write), added to the task
    /// current on the waker's CPU.
    #[serde(default)]
    pub send_us: f64,
    /// From a wake-up that preempts the task running on another vCPU to that task's switch:
    /// the reschedule IPI's way through the host to a vCPU that is running, not halted. The
    /// waker pays `send_us` for it as for any IPI.
    #[serde(default)]
    pub resched_us: f64,
    /// How long a vCPU that went idle runs its idle path before it halts (0: at once). A
    /// wake-up in that time finds the idle task polling its flags: the waker sets them and
    /// sends no IPI (`send_call_function_single_ipi`, `set_nr_if_polling`), and the idle loop
    /// takes the wake list itself, logging the wake-up outside any interrupt.
    #[serde(default)]
    pub halt_after_us: f64,
    /// From the vCPU going idle to the logging of a wake-up taken before it halted (within
    /// `halt_after_us`), the woken task running just after: the rest of the idle path and the
    /// way out of it.
    #[serde(default)]
    pub polled_wake_us: f64,
}

/// The time a CPU spends on switching tasks rather than on the tasks' own work. A simulated
/// task's work is its program's; without these, a context switch takes no time, and each
/// workload's per-operation cost includes the switches of the regime it was fitted in. With
/// them, a workload that switches more than its fit did (or less) pays for it.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct SchedCostsFile {
    /// A context switch (`__schedule`'s pick, `context_switch` with the address-space and
    /// register-state switch, the way back to the task), in cycles at the CPU's frequency,
    /// spent by the task switched in before it runs its own work.
    #[serde(default)]
    pub switch_cycles: f64,
    /// A task whose wake-up ran on another CPU than the one it runs on (a task or interrupt
    /// there woke it, or the wake-up moved it) is this much longer in its first run after it:
    /// the data its waker wrote and the scheduler state try_to_wake_up touched move to its
    /// CPU's caches (µs; memory latency, which the core's frequency does not change).
    #[serde(default)]
    pub remote_wake_us: f64,
}

/// Instructions a guest's processes execute that trap to the hypervisor: the guest's task
/// waits for the host to emulate them, its CPU busy and its own work not advancing, however
/// fast the vCPU's clock runs.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct VmExitsFile {
    /// One CPUID instruction (µs). The C library runs dozens at every program's start to
    /// learn the CPU's features and caches (`kernel::EXEC_STARTUP_CPUIDS`).
    pub cpuid_us: f64,
}

/// Placement in a guest whose kernel carries a vCPU packing change that mainline Linux does not
/// have (booted with `sched_vcpu_pack=`): before the kernel's own placement, a task goes to a
/// vCPU that is already running something and has room for it, sparing the IPI that would wake
/// a halted vCPU. Two forms, one per kind of evidence (docs/platform-format.md): the rule read
/// in a build's machine code (`flags` and `util_limit_pct`), or one inferred from recordings of
/// builds not read (`margin_pct`, `idle_takeover_us`).
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct VcpuPackFile {
    /// Read: `sched_vcpu_pack`, the placements that pack ([`VcpuPack`]'s bits), 0–15.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flags: Option<u32>,
    /// Read: a vCPU has room while its CFS utilisation, plus the task's when the task last ran
    /// elsewhere, stays below this percent of its capacity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub util_limit_pct: Option<f64>,
    /// Inferred: a woken task stays on its previous vCPU while that vCPU's utilisation and the
    /// task's own fit under its capacity less this margin (percent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub margin_pct: Option<f64>,
    /// Inferred: how long (µs) a task's previous vCPU must have been idle for an interrupt on
    /// another, idle vCPU to take the task there; none: never.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_takeover_us: Option<f64>,
}

/// A preset's vCPU packing, in the form its evidence gives.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum VcpuPack {
    /// The rule read in the guest kernel (`sim/vcpu_pack.rs`).
    Read { flags: u32, util_limit_pct: f64 },
    /// The rule inferred from a guest's recordings: a woken task stays on its previous vCPU,
    /// busy or not, while it has room, unless an interrupt on an idle vCPU wakes it after its
    /// own vCPU has idled longer than the takeover; a new task starts on the forking vCPU
    /// while it has room.
    Inferred { margin_pct: f64, idle_takeover_us: Option<f64> },
}

impl VcpuPackFile {
    /// The packing the fields describe (validated at load: one form or the other).
    pub fn rule(&self) -> VcpuPack {
        match (self.flags, self.util_limit_pct) {
            (Some(flags), Some(util_limit_pct)) => VcpuPack::Read { flags, util_limit_pct },
            _ => VcpuPack::Inferred {
                margin_pct: self.margin_pct.unwrap_or(100.0),
                idle_takeover_us: self.idle_takeover_us,
            },
        }
    }
}

impl VcpuPack {
    /// A wake-up from an interrupt taken by an idle vCPU runs the task there.
    pub const IRQ_ON_IDLE: u32 = 1;
    /// A synchronous wake-up runs the task on its waker's vCPU when that has room.
    pub const SYNC_WAKE: u32 = 2;
    /// Any wake-up runs the task on a busy vCPU with room: its previous one, its waker's,
    /// then the others in order.
    pub const WAKE: u32 = 4;
    /// A new task (fork) or an exec'ing one stays on its parent's or its own vCPU when that
    /// has room.
    pub const NEW_TASK: u32 = 8;

    /// Whether the read rule packs the placements of `bit`.
    pub fn packs(&self, bit: u32) -> bool {
        matches!(self, VcpuPack::Read { flags, .. } if flags & bit != 0)
    }

    /// The read rule's utilisation test: util · 100 < limit · capacity.
    pub fn util_fits(&self, util: u64, capacity: u64) -> bool {
        match *self {
            VcpuPack::Read { util_limit_pct, .. } => (util as f64) * 100.0 < util_limit_pct * capacity as f64,
            VcpuPack::Inferred { .. } => false,
        }
    }

    /// The inferred rule's room for a task of utilisation `task_util` on a vCPU of capacity
    /// `capacity` at utilisation `cpu_util`: cpu_util + task_util ≤ capacity × (100 − margin)/100,
    /// none at a margin of 100%.
    pub fn has_room(&self, cpu_util: u64, task_util: u64, capacity: u64) -> bool {
        let VcpuPack::Inferred { margin_pct, .. } = *self else { return false };
        let room = capacity as f64 * (100.0 - margin_pct) / 100.0;
        room > 0.0 && (cpu_util + task_util) as f64 <= room
    }

    /// The inferred rule: whether an interrupt on an idle vCPU takes a task whose previous
    /// vCPU has been idle for `prev_idle_ns`.
    pub fn idle_takeover(&self, prev_idle_ns: u64) -> bool {
        matches!(*self, VcpuPack::Inferred { idle_takeover_us: Some(us), .. } if prev_idle_ns as f64 > us * 1000.0)
    }
}

impl SchedCostsFile {
    /// [`SchedCostsFile::remote_wake_us`] in ns.
    pub fn remote_wake_ns(&self) -> u64 {
        (self.remote_wake_us * 1000.0).round() as u64
    }
}

impl VcpuWakeFile {
    fn ns(us: f64) -> u64 {
        (us * 1000.0).round() as u64
    }

    /// [`VcpuWakeFile::ipi_us`] in ns.
    pub fn ipi_ns(&self) -> u64 {
        Self::ns(self.ipi_us)
    }

    /// [`VcpuWakeFile::resume_us`] in ns.
    pub fn resume_ns(&self) -> u64 {
        Self::ns(self.resume_us)
    }

    /// [`VcpuWakeFile::send_us`] in ns.
    pub fn send_ns(&self) -> u64 {
        Self::ns(self.send_us)
    }

    /// [`VcpuWakeFile::resched_us`] in ns.
    pub fn resched_ns(&self) -> u64 {
        Self::ns(self.resched_us)
    }

    /// [`VcpuWakeFile::halt_after_us`] in ns.
    pub fn halt_after_ns(&self) -> u64 {
        Self::ns(self.halt_after_us)
    }

    /// [`VcpuWakeFile::polled_wake_us`] in ns.
    pub fn polled_wake_ns(&self) -> u64 {
        Self::ns(self.polled_wake_us)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CpuNumbering {
    SmtLast,
    SmtConsecutive,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LlcScope {
    Package,
    Cluster,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TopologyFile {
    pub packages: u32,
    pub threads_per_core: u32,
    pub smt_throughput: f64,
    pub cpu_numbering: CpuNumbering,
    pub numa_nodes_per_package: u32,
    pub llc: LlcScope,
    #[serde(default)]
    pub llc_cores: Option<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    Core,
    Cluster,
    Package,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PolicyScope {
    Cpu,
    Domain,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VoltageScope {
    Domain,
    Package,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterFile {
    pub id: String,
    pub cores_per_package: u32,
    /// The Linux CPU numbers of this cluster's CPUs, in core order (package 0's cores first),
    /// where they are not the ones `topology.cpu_numbering` gives: Linux numbers the boot CPU 0
    /// and the others in device-tree order (of_parse_and_init_cpus, arch/arm64/kernel/smp.c),
    /// so a board that boots on a LITTLE core of its second cluster numbers that core 0.
    /// Single-threaded cores only.
    #[serde(default)]
    pub cpus: Option<Vec<u32>>,
    pub capacity_dmips_mhz: u32,
    pub frequency: FrequencyFile,
    pub power: CorePowerFile,
    pub idle_states: Vec<IdleStateFile>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FrequencyFile {
    pub domain_scope: Scope,
    pub policy_scope: PolicyScope,
    pub voltage_scope: VoltageScope,
    pub min_khz: u32,
    pub base_khz: u32,
    pub max_khz: u32,
    pub pstates_khz: Vec<u32>,
    pub turbo_khz_by_active_cores: Option<Vec<u32>>,
    pub vf_curve: Vec<(u32, f64)>,
    pub transition_latency_ns: std::collections::BTreeMap<String, Option<u64>>,
    pub hw_switch_us: f64,
    /// Extra transition time per mV the supply must rise before a higher frequency can run
    /// (a voltage ramp); 0 when the voltage settles within `hw_switch_us`.
    #[serde(default)]
    pub voltage_ramp_us_per_mv: f64,
    /// The package controller (PCU, SMU) re-evaluates turbo limits on this grid (µs) rather
    /// than at every C-state change; 0 = at once.
    #[serde(default)]
    pub pcu_interval_us: f64,
    /// The hardware starts a requested frequency change only at the next slot of this grid
    /// (µs), then takes `hw_switch_us`; 0 = at once (measured: 500 µs on Haswell-EP, 1 ms on
    /// Rome).
    #[serde(default)]
    pub request_grid_us: f64,
    /// How long the domain's cores execute nothing when its frequency changes (µs): the clock
    /// stops while the PLL relocks, up or down and whatever the cause; 0 = no halt.
    #[serde(default)]
    pub switch_halt_us: f64,
    /// Whether a CPU in a power-gated idle state still holds its domain at its request. Intel:
    /// no, only active CPUs vote; AMD Rome: yes, an idle (even offline) hardware thread keeps
    /// its core at its request (Schöne et al. 2021, section V-A).
    #[serde(default)]
    pub power_gated_cpus_vote: bool,
}

impl FrequencyFile {
    /// Where `khz` lies in the cluster's range, 0 at `min_khz` to 1 at `max_khz`: the uncore
    /// clock's level when it follows the cores (uncore frequency scaling).
    pub fn level_of(&self, khz: u32) -> f64 {
        let span = self.max_khz.saturating_sub(self.min_khz).max(1) as f64;
        (khz.saturating_sub(self.min_khz) as f64 / span).min(1.0)
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CorePowerFile {
    pub c_eff_nf: f64,
    pub v_ref_mv: f64,
    pub p_leak_ref_mw: f64,
    pub activity: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IdlePower {
    /// The idle loop spins in C0 (cpuidle's poll state): the clock runs, MPERF counts, and a
    /// wake-up costs nothing.
    Polling,
    ClockGated,
    LowVoltage,
    PowerGated,
}

#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct IdleStateFile {
    pub name: String,
    /// The exit latency the kernel's table declares (cpuidle's `latency`, from intel_idle's
    /// tables, ACPI `_CST` or the device tree): the idle governor chooses by it, and it is the
    /// hardware's wake cost too unless `wake_latency_us` says otherwise.
    pub exit_latency_us: f64,
    /// The declared target residency (cpuidle's `residency`); the governor alone reads it.
    pub target_residency_us: f64,
    pub power: IdlePower,
    /// What leaving this state costs the simulated hardware, where it differs from the declared
    /// exit latency (tables give the worst case). Default: `exit_latency_us`. Usually written
    /// as `{"value", "range", "source"}`.
    #[serde(default)]
    pub wake_latency_us: Option<f64>,
    /// The wake cost while the core's package stays awake. Vendors' tables give the worst
    /// case, out of the package's own idle state (Intel: 128 µs from package C6 against 41 µs
    /// from core C6 on Ice Lake-SP; AMD Rome: 400 µs in `_CST`, 20-25 µs measured).
    /// Default: the wake cost above.
    #[serde(default)]
    pub exit_latency_pkg_awake_us: Option<f64>,
}

/// An idle state's latencies in the simulator's unit (see [`Platform::idle_timing`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IdleTiming {
    pub exit_ns: u64,
    pub target_residency_ns: u64,
}

impl IdleStateFile {
    /// The exit latency the OS sees, in the simulator's unit (ns).
    pub fn exit_ns(&self) -> u64 {
        (self.exit_latency_us * 1000.0) as u64
    }

    /// How long the hardware takes to leave this state: the wake cost while the package is
    /// awake, where one is given, else the state's wake cost, else the declared exit latency.
    pub fn hardware_exit_ns(&self, package_awake: bool) -> u64 {
        match (self.exit_latency_pkg_awake_us, self.wake_latency_us) {
            (Some(us), _) if package_awake => (us * 1000.0) as u64,
            (_, Some(us)) => (us * 1000.0) as u64,
            _ => self.exit_ns(),
        }
    }

    /// The target residency in ns.
    pub fn target_residency_ns(&self) -> u64 {
        (self.target_residency_us * 1000.0) as u64
    }

    /// Its latencies in ns, as [`Platform::idle_timing`] keeps them.
    pub fn timing(&self) -> IdleTiming {
        IdleTiming { exit_ns: self.exit_ns(), target_residency_ns: self.target_residency_ns() }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PackagePowerFile {
    pub p_uncore_active_w: f64,
    /// Extra uncore power at the top of its clock range, which follows the fastest active
    /// core (uncore frequency scaling); 0 for a fixed uncore clock.
    #[serde(default)]
    pub p_uncore_dyn_w: f64,
    pub p_pkg_idle_w: f64,
    pub power_limit_w: Option<f64>,
    pub smt_activity_gain: f64,
    /// Whose idleness lets a package into its package C-state.
    #[serde(default)]
    pub idle_scope: IdleScope,
}

/// Which cores must all be power-gated before a package idles.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IdleScope {
    /// Its own (Intel: each package enters its C-state alone).
    #[default]
    Package,
    /// Every core of the system: AMD Rome's packages idle only together ("all threads of all
    /// packages must be in the deepest sleep state", Schöne et al. 2021).
    System,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RaplFile {
    pub energy_unit_uj: f64,
    pub counter_bits: u32,
}

/// What else runs on the machine whatever the workload (its daemons, the kernel's timer-driven
/// threads): wake-ups per second on every CPU, each running `kthread_us` at base frequency.
/// Runs add the workload's own `kthread_hz` to it (docs/platform-format.md).
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BackgroundFile {
    pub kthread_hz: f64,
    pub kthread_us: f64,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DefaultsFile {
    pub driver: String,
    pub hz: u32,
}

// ---------------------------------------------------------------------------------------------
// The machine, laid out.
// ---------------------------------------------------------------------------------------------

/// One logical CPU and where it sits.
#[derive(Debug, Clone)]
pub struct CpuTopo {
    pub package: usize,
    pub cluster: usize,
    /// Global core index.
    pub core: usize,
    pub thread: usize,
    pub llc: usize,
    pub numa: usize,
    pub domain: usize,
    pub policy: usize,
    /// `arch_scale_cpu_capacity`: 1024 for the biggest CPU at its max frequency.
    pub cap_orig: u64,
}

#[derive(Debug, Clone)]
pub struct CoreTopo {
    pub package: usize,
    pub cluster: usize,
    pub domain: usize,
    pub cpus: Vec<usize>,
}

/// A set of cores that share one clock.
#[derive(Debug, Clone)]
pub struct DomainTopo {
    pub package: usize,
    pub cluster: usize,
    pub cores: Vec<usize>,
    pub cpus: Vec<usize>,
    pub policies: Vec<usize>,
}

/// A cpufreq policy: the CPUs a governor instance decides for.
#[derive(Debug, Clone)]
pub struct PolicyTopo {
    pub domain: usize,
    pub cluster: usize,
    pub cpus: Vec<usize>,
}

#[derive(Debug, Clone)]
pub struct PackageTopo {
    pub cores: Vec<usize>,
    pub cpus: Vec<usize>,
    pub domains: Vec<usize>,
}

#[derive(Debug, Clone)]
pub struct Platform {
    pub file: PlatformFile,
    pub cpus: Vec<CpuTopo>,
    pub cores: Vec<CoreTopo>,
    pub domains: Vec<DomainTopo>,
    pub policies: Vec<PolicyTopo>,
    pub packages: Vec<PackageTopo>,
    pub llcs: Vec<Vec<usize>>,
    /// Highest frequency each cluster can run when `n` cores of its package are active, after
    /// turbo bins and the package power limit: `turbo_limit_khz[cluster][n-1]`.
    pub turbo_limit_khz: Vec<Vec<u32>>,
    /// Each cluster's idle states' latencies in ns, `idle_timing[cluster][state]`, converted
    /// once: menu compares them with its prediction at every idle entry.
    pub idle_timing: Vec<Vec<IdleTiming>>,
    /// The constants the preset declares uncertain, in document order (docs/platform-format.md,
    /// "Uncertain constants").
    pub uncertain: Vec<Uncertain>,
}

/// A numeric field written as `{"value": v, "range": [lo, hi], "source": "..."}`: the model uses
/// `value`; a model variant may draw the constant anywhere in `range`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Uncertain {
    /// JSON Pointer (RFC 6901) of the field, e.g. `/clusters/0/power/c_eff_nf`.
    pub path: String,
    pub value: f64,
    pub range: [f64; 2],
    pub source: String,
    /// `value` is written as a JSON integer: draws must be whole numbers, since the field may be
    /// an integer one.
    pub integer: bool,
}

impl Platform {
    /// Parse and validate a preset. `source` names the file in errors.
    pub fn from_json(text: &str, source: &str) -> Result<Platform> {
        // A key written twice is an error, as the typed parse makes it; the generic pass below
        // would keep the last silently.
        let de = &mut serde_json::Deserializer::from_str(text);
        serde_path_to_error::deserialize::<_, NoDuplicateKeys>(de).map_err(|e| {
            let path = e.path().to_string();
            let field = if path == "." { "(document)".to_string() } else { path };
            SimError::config(source, field, format!("{}", e.into_inner()))
        })?;
        let mut doc: serde_json::Value =
            serde_json::from_str(text).map_err(|e| SimError::config(source, "(document)", format!("{e}")))?;
        let mut uncertain = Vec::new();
        take_uncertain(&mut doc, &mut String::new(), &mut uncertain, source)?;
        let file: PlatformFile = serde_path_to_error::deserialize(doc).map_err(|e| {
            let path = e.path().to_string();
            let inner = e.into_inner();
            let field = if path == "." { "(document)".to_string() } else { path };
            SimError::config(source, field, format!("{inner}"))
        })?;
        validate(&file, source)?;
        let mut plat = layout(file);
        plat.uncertain = uncertain;
        Ok(plat)
    }

    pub fn id(&self) -> &str {
        &self.file.id
    }

    pub fn ncpus(&self) -> usize {
        self.cpus.len()
    }

    pub fn cluster(&self, idx: usize) -> &ClusterFile {
        &self.file.clusters[idx]
    }

    pub fn cluster_of_cpu(&self, cpu: usize) -> &ClusterFile {
        &self.file.clusters[self.cpus[cpu].cluster]
    }

    /// The latencies of `cpu`'s idle states, in ns.
    pub fn idle_timing_of_cpu(&self, cpu: usize) -> &[IdleTiming] {
        &self.idle_timing[self.cpus[cpu].cluster]
    }

    /// Voltage (mV) the cluster needs at `khz`, linear between the curve's points.
    pub fn voltage_mv(&self, cluster: usize, khz: u32) -> f64 {
        interpolate_voltage(&self.file.clusters[cluster].frequency.vf_curve, khz)
    }

    /// Reported transition latency for `driver`, if the platform knows it (None = unknown).
    pub fn transition_latency_ns(&self, cluster: usize, driver: &str) -> Option<u64> {
        self.file.clusters[cluster].frequency.transition_latency_ns.get(driver).copied().flatten()
    }

    /// Every frequency the hardware may run on this cluster: the P-states plus the turbo limits.
    pub fn hardware_freqs_khz(&self, cluster: usize) -> Vec<u32> {
        let f = &self.file.clusters[cluster].frequency;
        let mut all: Vec<u32> = f.pstates_khz.clone();
        all.extend(self.turbo_limit_khz[cluster].iter().copied());
        all.sort_unstable();
        all.dedup();
        all
    }
}

/// Any JSON document in which no object names a key twice.
struct NoDuplicateKeys;

impl<'de> Deserialize<'de> for NoDuplicateKeys {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_any(NoDuplicateKeysVisitor)
    }
}

struct NoDuplicateKeysVisitor;

impl<'de> serde::de::Visitor<'de> for NoDuplicateKeysVisitor {
    type Value = NoDuplicateKeys;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> std::result::Result<NoDuplicateKeys, E> {
        Ok(NoDuplicateKeys)
    }
    fn visit_i64<E>(self, _: i64) -> std::result::Result<NoDuplicateKeys, E> {
        Ok(NoDuplicateKeys)
    }
    fn visit_u64<E>(self, _: u64) -> std::result::Result<NoDuplicateKeys, E> {
        Ok(NoDuplicateKeys)
    }
    fn visit_f64<E>(self, _: f64) -> std::result::Result<NoDuplicateKeys, E> {
        Ok(NoDuplicateKeys)
    }
    fn visit_str<E>(self, _: &str) -> std::result::Result<NoDuplicateKeys, E> {
        Ok(NoDuplicateKeys)
    }
    fn visit_unit<E>(self) -> std::result::Result<NoDuplicateKeys, E> {
        Ok(NoDuplicateKeys)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<NoDuplicateKeys, A::Error> {
        while seq.next_element::<NoDuplicateKeys>()?.is_some() {}
        Ok(NoDuplicateKeys)
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> std::result::Result<NoDuplicateKeys, A::Error> {
        let mut seen = std::collections::HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !seen.insert(key.clone()) {
                return Err(serde::de::Error::custom(format!("duplicate field `{key}`")));
            }
            map.next_value::<NoDuplicateKeys>()?;
        }
        Ok(NoDuplicateKeys)
    }
}

/// Replace every declared constant under `v` (an object with `value` and `range`) by its value,
/// collecting it with its JSON Pointer path; `path` is the pointer of `v`.
fn take_uncertain(v: &mut serde_json::Value, path: &mut String, out: &mut Vec<Uncertain>, source: &str) -> Result<()> {
    use serde_json::Value;
    match v {
        Value::Object(map) if map.contains_key("value") && map.contains_key("range") => {
            let declared = parse_uncertain(map, path).map_err(|msg| SimError::config(source, path.clone(), msg))?;
            *v = map["value"].clone();
            out.push(declared);
        }
        Value::Object(map) => {
            for (key, child) in map.iter_mut() {
                let len = path.len();
                // RFC 6901 escaping: `~` first, then `/`.
                path.push('/');
                path.push_str(&key.replace('~', "~0").replace('/', "~1"));
                take_uncertain(child, path, out, source)?;
                path.truncate(len);
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter_mut().enumerate() {
                let len = path.len();
                path.push_str(&format!("/{i}"));
                take_uncertain(child, path, out, source)?;
                path.truncate(len);
            }
        }
        _ => {}
    }
    Ok(())
}

fn parse_uncertain(
    map: &serde_json::Map<String, serde_json::Value>,
    path: &str,
) -> std::result::Result<Uncertain, String> {
    const FORM: &str = r#"{"value": number, "range": [lo, hi], "source": "text"}"#;
    if let Some(key) = map.keys().find(|k| !["value", "range", "source"].contains(&k.as_str())) {
        return Err(format!("unknown key {key:?} in a declared constant (expected {FORM})"));
    }
    let number = map["value"].as_number().ok_or_else(|| format!("\"value\" must be a number (expected {FORM})"))?;
    let value = number.as_f64().ok_or_else(|| "\"value\" is not a finite number".to_string())?;
    let range = match map["range"].as_array().map(|r| r.iter().map(|x| x.as_f64()).collect::<Vec<_>>()) {
        Some(r) if r.len() == 2 && r.iter().all(Option::is_some) => [r[0].unwrap(), r[1].unwrap()],
        _ => return Err(format!("\"range\" must be two numbers [lo, hi] (expected {FORM})")),
    };
    let [lo, hi] = range;
    if lo >= hi {
        return Err(format!("\"range\" [{lo}, {hi}] must have lo < hi"));
    }
    if !(lo..=hi).contains(&value) {
        return Err(format!("\"value\" {value} is outside its range [{lo}, {hi}]"));
    }
    let source = match map.get("source").and_then(|s| s.as_str()) {
        Some(s) if !s.trim().is_empty() => s.to_string(),
        _ => {
            return Err(format!(
                "\"source\" must be a non-empty string saying where the value and range come from (expected {FORM})"
            ))
        }
    };
    Ok(Uncertain { path: path.to_string(), value, range, source, integer: number.is_i64() || number.is_u64() })
}

fn interpolate_voltage(curve: &[(u32, f64)], khz: u32) -> f64 {
    let first = curve[0];
    if khz <= first.0 {
        return first.1;
    }
    for w in curve.windows(2) {
        let ((f0, v0), (f1, v1)) = (w[0], w[1]);
        if khz <= f1 {
            let t = (khz - f0) as f64 / (f1 - f0).max(1) as f64;
            return v0 + t * (v1 - v0);
        }
    }
    curve[curve.len() - 1].1
}

/// The most logical CPUs a platform may have: far above today's largest machines, and a bound
/// on the per-CPU state a run allocates.
pub const MAX_CPUS: usize = 16_384;

fn validate(f: &PlatformFile, source: &str) -> Result<()> {
    let err = |field: &str, msg: String| Err(SimError::config(source, field, msg));
    if f.schema != SCHEMA {
        return err("schema", format!("expected \"{SCHEMA}\", got \"{}\"", f.schema));
    }
    if f.id.is_empty() {
        return err("id", "must not be empty".into());
    }
    let t = &f.topology;
    if t.packages == 0 || t.packages > 64 {
        return err("topology.packages", format!("expected 1..64, got {}", t.packages));
    }
    if t.threads_per_core == 0 || t.threads_per_core > 8 {
        return err("topology.threads_per_core", format!("expected 1..8, got {}", t.threads_per_core));
    }
    if !(1.0..=8.0).contains(&t.smt_throughput) {
        return err("topology.smt_throughput", format!("expected 1.0..8.0, got {}", t.smt_throughput));
    }
    if t.numa_nodes_per_package == 0 {
        return err("topology.numa_nodes_per_package", "expected at least 1".into());
    }
    if t.llc_cores == Some(0) {
        return err("topology.llc_cores", "expected at least 1 or null".into());
    }
    if f.clusters.is_empty() {
        return err("clusters", "expected at least one cluster".into());
    }
    for (i, c) in f.clusters.iter().enumerate() {
        let at = |field: &str| format!("clusters[{i}].{field}");
        if c.cores_per_package == 0 {
            return err(&at("cores_per_package"), "expected at least 1".into());
        }
        if c.capacity_dmips_mhz == 0 || c.capacity_dmips_mhz > 4096 {
            return err(&at("capacity_dmips_mhz"), format!("expected 1..4096, got {}", c.capacity_dmips_mhz));
        }
        let q = &c.frequency;
        if !(q.min_khz > 0 && q.min_khz <= q.base_khz && q.base_khz <= q.max_khz) {
            return err(
                &at("frequency"),
                format!(
                    "expected 0 < min_khz <= base_khz <= max_khz, got {} / {} / {}",
                    q.min_khz, q.base_khz, q.max_khz
                ),
            );
        }
        if q.pstates_khz.is_empty() || q.pstates_khz.windows(2).any(|w| w[0] >= w[1]) {
            return err(&at("frequency.pstates_khz"), "expected a non-empty strictly ascending list".into());
        }
        if let Some(&bad) = q.pstates_khz.iter().find(|&&p| p < q.min_khz || p > q.max_khz) {
            return err(&at("frequency.pstates_khz"), format!("{bad} kHz is outside [min_khz, max_khz]"));
        }
        if let Some(bins) = &q.turbo_khz_by_active_cores {
            if bins.len() != c.cores_per_package as usize {
                return err(
                    &at("frequency.turbo_khz_by_active_cores"),
                    format!("expected {} entries (one per active-core count), got {}", c.cores_per_package, bins.len()),
                );
            }
            if let Some(&bad) = bins.iter().find(|&&b| b < q.base_khz || b > q.max_khz) {
                return err(
                    &at("frequency.turbo_khz_by_active_cores"),
                    format!("{bad} kHz is outside [base_khz, max_khz]"),
                );
            }
        }
        if q.vf_curve.is_empty() || q.vf_curve.windows(2).any(|w| w[0].0 >= w[1].0) {
            return err(&at("frequency.vf_curve"), "expected a non-empty list of [khz, mv] ascending in khz".into());
        }
        if q.vf_curve[0].0 > q.min_khz || q.vf_curve[q.vf_curve.len() - 1].0 < q.max_khz {
            return err(&at("frequency.vf_curve"), "must cover min_khz..max_khz".into());
        }
        if q.vf_curve.iter().any(|&(_, mv)| !(100.0..=2000.0).contains(&mv)) {
            return err(&at("frequency.vf_curve"), "voltages must be within 100..2000 mV".into());
        }
        if !(0.0..=100_000.0).contains(&q.pcu_interval_us) {
            return err(&at("frequency.pcu_interval_us"), format!("expected 0..100000, got {}", q.pcu_interval_us));
        }
        if !(0.0..=1_000.0).contains(&q.voltage_ramp_us_per_mv) {
            return err(
                &at("frequency.voltage_ramp_us_per_mv"),
                format!("expected 0..1000, got {}", q.voltage_ramp_us_per_mv),
            );
        }
        if !(0.0..=100_000.0).contains(&q.request_grid_us) {
            return err(&at("frequency.request_grid_us"), format!("expected 0..100000, got {}", q.request_grid_us));
        }
        if !(0.0..=1_000.0).contains(&q.switch_halt_us) {
            return err(&at("frequency.switch_halt_us"), format!("expected 0..1000, got {}", q.switch_halt_us));
        }
        if !(0.0..=100_000.0).contains(&q.hw_switch_us) {
            return err(&at("frequency.hw_switch_us"), format!("expected 0..100000, got {}", q.hw_switch_us));
        }
        let p = &c.power;
        // Bounds far outside any real core (a few nF, tens of W), so that the power model's
        // integer arithmetic (the DT Energy Model's µW per OPP) cannot overflow.
        for (name, v, lo, hi) in [
            ("c_eff_nf", p.c_eff_nf, 0.0, 100.0),
            ("v_ref_mv", p.v_ref_mv, 100.0, 2_000.0),
            ("activity", p.activity, 0.0, 2.0),
        ] {
            if !(v > lo && v <= hi) {
                return err(&at(&format!("power.{name}")), format!("expected a number in ({lo}, {hi}], got {v}"));
            }
        }
        if !(0.0..=1_000_000.0).contains(&p.p_leak_ref_mw) {
            return err(&at("power.p_leak_ref_mw"), format!("expected 0..1000000, got {}", p.p_leak_ref_mw));
        }
        if c.idle_states.is_empty() {
            // A CPU with nothing to run sits in one of these states; C1 at least always exists.
            return err(&at("idle_states"), "expected at least one idle state (e.g. C1)".into());
        }
        for (j, s) in c.idle_states.iter().enumerate() {
            if s.exit_latency_us < 0.0 || s.target_residency_us < 0.0 {
                return err(&at(&format!("idle_states[{j}]")), "latencies must be >= 0".into());
            }
            if let Some(wake) = s.wake_latency_us {
                if !(wake >= 0.0 && wake.is_finite()) {
                    return err(
                        &at(&format!("idle_states[{j}].wake_latency_us")),
                        format!("expected >= 0, got {wake}"),
                    );
                }
            }
            let wake = s.wake_latency_us.unwrap_or(s.exit_latency_us);
            if let Some(awake) = s.exit_latency_pkg_awake_us {
                if !(0.0..=wake).contains(&awake) {
                    let what = if s.wake_latency_us.is_some() { "wake_latency_us" } else { "exit_latency_us" };
                    return err(
                        &at(&format!("idle_states[{j}].exit_latency_pkg_awake_us")),
                        format!("expected 0..{what} ({wake}), got {awake}"),
                    );
                }
            }
            if s.power == IdlePower::Polling
                && (j > 0 || s.exit_latency_us > 0.0 || s.wake_latency_us.unwrap_or(0.0) > 0.0)
            {
                return err(
                    &at(&format!("idle_states[{j}].power")),
                    "a polling state must be the first, with exit_latency_us 0 (and no wake_latency_us)".into(),
                );
            }
        }
    }
    let cores_per_package: u64 = f.clusters.iter().map(|c| c.cores_per_package as u64).sum();
    let ncpus = t.packages as u64 * cores_per_package * t.threads_per_core as u64;
    if ncpus > MAX_CPUS as u64 {
        return err(
            "clusters",
            format!("{ncpus} CPUs in all (packages × cores_per_package × threads_per_core); at most {MAX_CPUS}"),
        );
    }
    if let Err((field, msg)) = validate_cpu_ids(f, ncpus as usize) {
        return err(&field, msg);
    }
    let pp = &f.package_power;
    for (name, w) in [
        ("p_uncore_active_w", pp.p_uncore_active_w),
        ("p_pkg_idle_w", pp.p_pkg_idle_w),
        ("p_uncore_dyn_w", pp.p_uncore_dyn_w),
    ] {
        if !(0.0..=100_000.0).contains(&w) {
            return err(&format!("package_power.{name}"), format!("expected 0..100000 W, got {w}"));
        }
    }
    if let Some(pl) = pp.power_limit_w {
        if pl <= pp.p_uncore_active_w {
            return err(
                "package_power.power_limit_w",
                format!("{pl} W leaves no budget above the uncore's {} W", pp.p_uncore_active_w),
            );
        }
    }
    if !(1.0..=2.0).contains(&pp.smt_activity_gain) {
        return err("package_power.smt_activity_gain", format!("expected 1.0..2.0, got {}", pp.smt_activity_gain));
    }
    let unit_ok = f.rapl.energy_unit_uj > 0.0 && f.rapl.energy_unit_uj <= 1e9;
    if !unit_ok || !(8..=64).contains(&f.rapl.counter_bits) {
        return err("rapl", "expected energy_unit_uj in (0, 1e9] and counter_bits in 8..64".into());
    }
    if let Some(v) = &f.vcpu_wake {
        for (name, us) in [
            ("ipi_us", v.ipi_us),
            ("resume_us", v.resume_us),
            ("send_us", v.send_us),
            ("resched_us", v.resched_us),
            ("halt_after_us", v.halt_after_us),
            ("polled_wake_us", v.polled_wake_us),
        ] {
            if !(0.0..=10_000.0).contains(&us) {
                return err(&format!("vcpu_wake.{name}"), format!("expected 0..10000 µs, got {us}"));
            }
        }
    }
    if let Some(c) = &f.sched_costs {
        if !(0.0..=1e6).contains(&c.switch_cycles) {
            return err("sched_costs.switch_cycles", format!("expected 0..1000000 cycles, got {}", c.switch_cycles));
        }
        if !(0.0..=10_000.0).contains(&c.remote_wake_us) {
            return err("sched_costs.remote_wake_us", format!("expected 0..10000 µs, got {}", c.remote_wake_us));
        }
    }
    if let Some(v) = &f.vm_exits {
        if !(0.0..=10_000.0).contains(&v.cpuid_us) {
            return err("vm_exits.cpuid_us", format!("expected 0..10000 µs, got {}", v.cpuid_us));
        }
    }
    if let Some(p) = &f.vcpu_pack {
        match (p.flags, p.util_limit_pct, p.margin_pct) {
            (Some(flags), Some(limit), None) if p.idle_takeover_us.is_none() => {
                if flags > 15 {
                    return err("vcpu_pack.flags", format!("expected a bit mask 0..15, got {flags}"));
                }
                if !(0.0..=100.0).contains(&limit) {
                    return err("vcpu_pack.util_limit_pct", format!("expected 0..100 percent, got {limit}"));
                }
            }
            (None, None, Some(margin)) => {
                if !(0.0..=100.0).contains(&margin) {
                    return err("vcpu_pack.margin_pct", format!("expected 0..100 percent, got {margin}"));
                }
                if let Some(us) = p.idle_takeover_us.filter(|us| !(0.0..=1_000_000.0).contains(us)) {
                    return err("vcpu_pack.idle_takeover_us", format!("expected 0..1000000 µs, got {us}"));
                }
            }
            _ => {
                return err(
                    "vcpu_pack",
                    "expected either flags and util_limit_pct (a rule read in the kernel) or margin_pct \
                     with an optional idle_takeover_us (a rule inferred from recordings), not both"
                        .into(),
                )
            }
        }
    }
    if let Some(c) = &f.cppc {
        if !(1..=1_000_000).contains(&c.nominal_perf) || !(1..=1_000_000).contains(&c.highest_perf) {
            return err("cppc", "expected highest_perf and nominal_perf in 1..1000000".into());
        }
    }
    if let Some(b) = &f.background {
        if !(0.0..=10_000.0).contains(&b.kthread_hz) {
            return err(
                "background.kthread_hz",
                format!("expected 0..10000 wake-ups per second, got {}", b.kthread_hz),
            );
        }
        if !(1.0..=10_000.0).contains(&b.kthread_us) {
            return err("background.kthread_us", format!("expected 1..10000 µs, got {}", b.kthread_us));
        }
    }
    if ![100, 250, 300, 1000].contains(&f.defaults.hz) {
        return err("defaults.hz", format!("expected 100, 250, 300 or 1000, got {}", f.defaults.hz));
    }
    Ok(())
}

/// Explicit cluster CPU numbers (`clusters[i].cpus`) must cover the cluster's cores, and every
/// CPU must get a distinct number below the CPU count.
fn validate_cpu_ids(f: &PlatformFile, ncpus: usize) -> std::result::Result<(), (String, String)> {
    let explicit = f.clusters.iter().enumerate().filter_map(|(i, c)| c.cpus.as_ref().map(|ids| (i, c, ids)));
    for (i, c, ids) in explicit {
        let at = format!("clusters[{i}].cpus");
        if f.topology.threads_per_core != 1 {
            return Err((at, "explicit CPU numbers need threads_per_core 1".into()));
        }
        let want = f.topology.packages as usize * c.cores_per_package as usize;
        if ids.len() != want {
            return Err((at, format!("expected {want} CPU numbers (packages × cores_per_package), got {}", ids.len())));
        }
    }
    let mut seen = vec![false; ncpus];
    for id in cpu_ids(f) {
        match seen.get_mut(id) {
            Some(s) if !*s => *s = true,
            _ => return Err(("clusters".into(), format!("CPU number {id} is out of range or given twice"))),
        }
    }
    Ok(())
}

/// The Linux CPU number of every CPU, by core (packages, then clusters, then cores in order)
/// and thread: a cluster's explicit `cpus`, else `topology.cpu_numbering`.
fn cpu_ids(f: &PlatformFile) -> Vec<usize> {
    let t = &f.topology;
    let (tpc, npkg) = (t.threads_per_core as usize, t.packages as usize);
    let ncores = npkg * f.clusters.iter().map(|c| c.cores_per_package as usize).sum::<usize>();
    let scheme = |core: usize, thread: usize| match t.cpu_numbering {
        CpuNumbering::SmtLast => thread * ncores + core,
        CpuNumbering::SmtConsecutive => core * tpc + thread,
    };
    let mut ids = Vec::with_capacity(ncores * tpc);
    let mut core = 0;
    for pkg in 0..npkg {
        for c in &f.clusters {
            for k in 0..c.cores_per_package as usize {
                match &c.cpus {
                    Some(list) => ids.push(list[pkg * c.cores_per_package as usize + k] as usize),
                    None => ids.extend((0..tpc).map(|th| scheme(core, th))),
                }
                core += 1;
            }
        }
    }
    ids
}

fn layout(file: PlatformFile) -> Platform {
    let t = file.topology.clone();
    let tpc = t.threads_per_core as usize;
    let npkg = t.packages as usize;
    let cores_per_pkg: usize = file.clusters.iter().map(|c| c.cores_per_package as usize).sum();
    let ncores = npkg * cores_per_pkg;
    let ncpus = ncores * tpc;
    let max_dmips =
        file.clusters.iter().map(|c| c.capacity_dmips_mhz as u64 * c.frequency.max_khz as u64).max().unwrap_or(1);

    let mut cores = Vec::with_capacity(ncores);
    let mut cpus: Vec<Option<CpuTopo>> = vec![None; ncpus];
    let mut domains: Vec<DomainTopo> = Vec::new();
    let mut policies: Vec<PolicyTopo> = Vec::new();
    let mut packages: Vec<PackageTopo> =
        (0..npkg).map(|_| PackageTopo { cores: vec![], cpus: vec![], domains: vec![] }).collect();
    let mut llcs: Vec<Vec<usize>> = Vec::new();

    let all_ids = cpu_ids(&file);
    let cpu_id = |core: usize, thread: usize| all_ids[core * tpc + thread];

    for pkg in 0..npkg {
        let mut pkg_llc: Option<usize> = None;
        let mut pkg_domain: Option<usize> = None;
        for (ci, cl) in file.clusters.iter().enumerate() {
            let mut cluster_llc: Option<usize> = None;
            let mut cluster_domain: Option<usize> = None;
            let cap = (cl.capacity_dmips_mhz as u64 * cl.frequency.max_khz as u64 * 1024 / max_dmips).max(1);
            for k in 0..cl.cores_per_package as usize {
                let core = cores.len();
                // LLC group of this core.
                let llc = match (t.llc, t.llc_cores) {
                    (_, Some(n)) if k % n as usize != 0 => llcs.len() - 1,
                    (_, Some(_)) => {
                        llcs.push(vec![]);
                        llcs.len() - 1
                    }
                    (LlcScope::Package, None) => *pkg_llc.get_or_insert_with(|| {
                        llcs.push(vec![]);
                        llcs.len() - 1
                    }),
                    (LlcScope::Cluster, None) => *cluster_llc.get_or_insert_with(|| {
                        llcs.push(vec![]);
                        llcs.len() - 1
                    }),
                };
                let mut new_domain = || {
                    domains.push(DomainTopo {
                        package: pkg,
                        cluster: ci,
                        cores: vec![],
                        cpus: vec![],
                        policies: vec![],
                    });
                    packages[pkg].domains.push(domains.len() - 1);
                    domains.len() - 1
                };
                let domain = match cl.frequency.domain_scope {
                    Scope::Core => new_domain(),
                    Scope::Cluster => *cluster_domain.get_or_insert_with(&mut new_domain),
                    Scope::Package => *pkg_domain.get_or_insert_with(&mut new_domain),
                };
                domains[domain].cores.push(core);
                let numa = pkg * t.numa_nodes_per_package as usize
                    + k * t.numa_nodes_per_package as usize / cl.cores_per_package as usize;
                let ids: Vec<usize> = (0..tpc).map(|th| cpu_id(core, th)).collect();
                for (th, &id) in ids.iter().enumerate() {
                    cpus[id] = Some(CpuTopo {
                        package: pkg,
                        cluster: ci,
                        core,
                        thread: th,
                        llc,
                        numa,
                        domain,
                        policy: usize::MAX,
                        cap_orig: cap,
                    });
                    llcs[llc].push(id);
                    domains[domain].cpus.push(id);
                    packages[pkg].cpus.push(id);
                }
                packages[pkg].cores.push(core);
                cores.push(CoreTopo { package: pkg, cluster: ci, domain, cpus: ids });
            }
        }
    }
    let mut cpus: Vec<CpuTopo> = cpus.into_iter().map(|c| c.expect("every CPU id is laid out")).collect();
    for d in domains.iter_mut() {
        d.cpus.sort_unstable();
    }
    for l in llcs.iter_mut() {
        l.sort_unstable();
    }
    for p in packages.iter_mut() {
        p.cpus.sort_unstable();
    }
    // Policies: one per CPU or one per domain, numbered in CPU order like cpufreq's policyN.
    for cpu in 0..ncpus {
        if cpus[cpu].policy != usize::MAX {
            continue;
        }
        let d = cpus[cpu].domain;
        let members = match file.clusters[cpus[cpu].cluster].frequency.policy_scope {
            PolicyScope::Cpu => vec![cpu],
            PolicyScope::Domain => domains[d].cpus.clone(),
        };
        let id = policies.len();
        for &m in &members {
            cpus[m].policy = id;
        }
        domains[d].policies.push(id);
        policies.push(PolicyTopo { domain: d, cluster: cpus[cpu].cluster, cpus: members });
    }
    let turbo_limit_khz = file.clusters.iter().map(|c| turbo_limits(&file, c)).collect();
    let idle_timing = file.clusters.iter().map(|c| c.idle_states.iter().map(IdleStateFile::timing).collect()).collect();
    Platform {
        file,
        cpus,
        cores,
        domains,
        policies,
        packages,
        llcs,
        turbo_limit_khz,
        idle_timing,
        uncertain: Vec::new(),
    }
}

/// Highest sustained frequency with `n` active cores: the turbo bin (or `max_khz` when the part
/// boosts without bins), lowered until `n` busy cores at typical activity fit the package power
/// limit. This is the steady state of the package power controller (RAPL PL1, AMD PPT); its
/// time constant is not modelled.
fn turbo_limits(file: &PlatformFile, c: &ClusterFile) -> Vec<u32> {
    let q = &c.frequency;
    let pp = &file.package_power;
    let n_cores = c.cores_per_package as usize;
    let voltage = |khz: u32| interpolate_voltage(&q.vf_curve, khz);
    let core_w = |khz: u32| c.power.busy_w(khz, voltage(khz), c.power.activity);
    // The uncore clock follows the cores' (uncore frequency scaling).
    let uncore_w = |khz: u32| pp.uncore_w(Some(q.level_of(khz)));
    // Candidate hardware frequencies: the P-state grid plus every curve point and bin.
    let mut grid: Vec<u32> = q.pstates_khz.clone();
    grid.extend(q.vf_curve.iter().map(|p| p.0).filter(|&f| f >= q.min_khz && f <= q.max_khz));
    if let Some(b) = &q.turbo_khz_by_active_cores {
        grid.extend(b.iter().copied());
    }
    grid.push(q.max_khz);
    grid.sort_unstable();
    grid.dedup();
    (1..=n_cores)
        .map(|n| {
            let ceiling = match &q.turbo_khz_by_active_cores {
                Some(bins) => bins[n - 1],
                None => q.max_khz,
            };
            match pp.power_limit_w {
                None => ceiling,
                Some(limit) => grid
                    .iter()
                    .copied()
                    .filter(|&f| f <= ceiling)
                    .filter(|&f| f <= q.base_khz || uncore_w(f) + n as f64 * core_w(f) <= limit)
                    .max()
                    .unwrap_or(q.base_khz),
            }
        })
        .collect()
}

/// A shipped preset by its id, for unit tests that build a part of the simulator alone.
#[cfg(test)]
pub(crate) fn test_preset(id: &str) -> Platform {
    let path = format!("{}/../../python/dvfslab/data/platforms/{id}.json", env!("CARGO_MANIFEST_DIR"));
    Platform::from_json(&std::fs::read_to_string(&path).unwrap(), id).unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn preset(id: &str) -> Platform {
        test_preset(id)
    }

    fn cpus_of_cluster(p: &Platform, cluster: &str) -> Vec<usize> {
        (0..p.ncpus()).filter(|&c| p.cluster(p.cpus[c].cluster).id == cluster).collect()
    }

    #[test]
    fn juno_r2_numbers_its_boot_a53_cpu0_then_the_device_tree_order() {
        // arm64 of_parse_and_init_cpus (arch/arm64/kernel/smp.c) gives the boot CPU (A53_0 on
        // Juno) logical id 0 and the others ids in DT order: A72_0, A72_1, A53_1..3.
        let p = preset("juno-r2");
        assert_eq!(cpus_of_cluster(&p, "big"), vec![1, 2]);
        assert_eq!(cpus_of_cluster(&p, "little"), vec![0, 3, 4, 5]);
        // The big cluster's policy covers its CPUs; policies follow CPU order (policy0 = CPU 0's).
        assert_eq!(p.policies[p.cpus[1].policy].cpus, vec![1, 2]);
        assert_eq!(p.cpus[0].policy, 0);
        assert_eq!(p.llcs[p.cpus[1].llc], vec![1, 2]);
    }

    #[test]
    fn two_socket_smt_machines_number_first_threads_socket_by_socket_then_siblings() {
        // x86 enumerates thread 0 of every core of socket 0, then of socket 1, then the second
        // threads in the same order (2 x 12 cores: 0-11, 12-23, siblings 24-35, 36-47).
        let p = preset("haswell-e5-2670v3-2s");
        let at = |c: usize| (p.cpus[c].package, p.cpus[c].thread);
        assert_eq!((at(0), at(11), at(12), at(23)), ((0, 0), (0, 0), (1, 0), (1, 0)));
        assert_eq!((at(24), at(36), at(47)), ((0, 1), (1, 1), (1, 1)));
        assert_eq!(p.cores[p.cpus[5].core].cpus, vec![5, 29]);
        // POWER8 numbers a core's 8 threads consecutively.
        let p = preset("power8-powernv");
        assert_eq!(p.cores[p.cpus[8].core].cpus, (8..16).collect::<Vec<_>>());
        assert_eq!(p.cpus[80].package, 1);
    }

    #[test]
    fn explicit_cpu_numbers_must_cover_each_cpu_once() {
        let path = format!("{}/../../python/dvfslab/data/platforms/juno-r2.json", env!("CARGO_MANIFEST_DIR"));
        let mut v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        v["clusters"][0]["cpus"] = serde_json::json!([0, 2]);
        let e = Platform::from_json(&v.to_string(), "x").unwrap_err().to_string();
        assert!(e.contains("CPU number 0 is out of range or given twice"), "{e}");
        v["clusters"][0]["cpus"] = serde_json::json!([1]);
        let e = Platform::from_json(&v.to_string(), "x").unwrap_err().to_string();
        assert!(e.contains("clusters[0].cpus") && e.contains("expected 2 CPU numbers"), "{e}");
    }

    /// Juno with its big cluster's `c_eff_nf` and first idle state's exit latency written as
    /// declared constants (`c_eff` and `exit` are the raw JSON put in their place).
    fn juno_declaring(c_eff: serde_json::Value, exit: serde_json::Value) -> Result<Platform> {
        let path = format!("{}/../../python/dvfslab/data/platforms/juno-r2.json", env!("CARGO_MANIFEST_DIR"));
        let mut v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        // The preset's own declared constants, as plain numbers: only the two below are declared.
        take_uncertain(&mut v, &mut String::new(), &mut Vec::new(), "juno-r2").unwrap();
        v["clusters"][0]["power"]["c_eff_nf"] = c_eff;
        v["clusters"][0]["idle_states"][0]["exit_latency_us"] = exit;
        Platform::from_json(&v.to_string(), "box.json")
    }

    /// Skylake with its C6 (state 4, declared 85 µs) given `fields` instead of its wake costs.
    fn skylake_c6_with(fields: serde_json::Value) -> Result<Platform> {
        let path = format!("{}/../../python/dvfslab/data/platforms/skylake-e3-1240v5.json", env!("CARGO_MANIFEST_DIR"));
        let mut v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let c6 = v["clusters"][0]["idle_states"][4].as_object_mut().unwrap();
        c6.remove("wake_latency_us");
        c6.remove("exit_latency_pkg_awake_us");
        for (k, x) in fields.as_object().unwrap() {
            v["clusters"][0]["idle_states"][4][k] = x.clone();
        }
        Platform::from_json(&v.to_string(), "box.json")
    }

    /// The governor reads the declared exit latency; the hardware pays the wake cost, and with
    /// the package awake the package-awake one.
    #[test]
    fn the_wake_cost_is_the_hardwares_and_the_declared_latency_the_governors() {
        let c6 = |p: &Platform| p.file.clusters[0].idle_states[4].clone();
        let plain = skylake_c6_with(serde_json::json!({})).unwrap();
        assert_eq!((c6(&plain).hardware_exit_ns(false), c6(&plain).hardware_exit_ns(true)), (85_000, 85_000));
        let wake = serde_json::json!({"value": 30, "range": [20, 85], "source": "a measurement"});
        let p = skylake_c6_with(serde_json::json!({"wake_latency_us": wake})).unwrap();
        assert_eq!(p.idle_timing_of_cpu(0)[4].exit_ns, 85_000);
        assert_eq!((c6(&p).hardware_exit_ns(false), c6(&p).hardware_exit_ns(true)), (30_000, 30_000));
        assert!(p.uncertain.iter().any(|u| u.path == "/clusters/0/idle_states/4/wake_latency_us" && u.value == 30.0));
        let both =
            skylake_c6_with(serde_json::json!({"wake_latency_us": 30, "exit_latency_pkg_awake_us": 20})).unwrap();
        assert_eq!((c6(&both).hardware_exit_ns(false), c6(&both).hardware_exit_ns(true)), (30_000, 20_000));
    }

    #[test]
    fn a_bad_wake_cost_names_its_field() {
        let e = skylake_c6_with(serde_json::json!({"wake_latency_us": -1})).unwrap_err().to_string();
        assert!(e.contains("box.json") && e.contains("idle_states[4].wake_latency_us") && e.contains(">= 0"), "{e}");
        let e = skylake_c6_with(serde_json::json!({"wake_latency_us": 30, "exit_latency_pkg_awake_us": 40}))
            .unwrap_err()
            .to_string();
        assert!(e.contains("exit_latency_pkg_awake_us") && e.contains("0..wake_latency_us (30)"), "{e}");
    }

    /// The Intel presets declare intel_idle's worst cases (what menu reads) and charge less:
    /// a power-gated state's exit with the package awake below the exit out of a sleeping
    /// package, both below the table; C1 and C1E charge the table.
    #[test]
    fn intel_presets_charge_below_their_declared_exit_latencies() {
        for id in ["skylake-e3-1240v5", "haswell-e5-2670v3-2s", "broadwell-e5-2698v4-2s", "i7-2600k"] {
            let p = preset(id);
            let states = &p.file.clusters[0].idle_states;
            for (s, timing) in states.iter().zip(p.idle_timing_of_cpu(0)) {
                assert_eq!(timing.exit_ns, s.exit_ns(), "{id} {}", s.name);
                let (awake, asleep) = (s.hardware_exit_ns(true), s.hardware_exit_ns(false));
                if s.power == IdlePower::PowerGated {
                    assert!(awake < asleep && asleep < s.exit_ns(), "{id} {}: {awake} {asleep}", s.name);
                } else {
                    assert_eq!((awake, asleep), (s.exit_ns(), s.exit_ns()), "{id} {}", s.name);
                }
            }
            // Any draw within the declared ranges keeps the package-awake cost at most the other.
            for u in p.uncertain.iter().filter(|u| u.path.ends_with("/exit_latency_pkg_awake_us")) {
                let wake = u.path.replace("exit_latency_pkg_awake_us", "wake_latency_us");
                let w = p.uncertain.iter().find(|v| v.path == wake).unwrap();
                assert!(u.range[1] <= w.range[0], "{id} {}", u.path);
            }
        }
        // Skylake's C6: 85 µs declared, 44.2 µs with the package awake, 63.8 µs out of PC6+.
        let c6 = &preset("skylake-e3-1240v5").file.clusters[0].idle_states[4];
        assert_eq!((c6.hardware_exit_ns(true), c6.hardware_exit_ns(false)), (44_200, 63_800));
    }

    #[test]
    fn a_key_written_twice_is_an_error_naming_it() {
        let path = format!("{}/../../python/dvfslab/data/platforms/juno-r2.json", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).unwrap();
        let twice = text.replacen('{', "{\"name\": \"again\",", 1);
        assert_ne!(twice, text);
        let e = Platform::from_json(&twice, "box.json").unwrap_err().to_string();
        assert!(e.contains("box.json") && e.contains("duplicate field `name`"), "{e}");
    }

    #[test]
    fn declared_constants_are_used_at_their_value_and_listed_in_document_order() {
        let p = juno_declaring(
            serde_json::json!({"value": 0.5, "range": [0.4, 0.6], "source": "fit"}),
            serde_json::json!({"value": 40, "range": [20, 80], "source": "table"}),
        )
        .unwrap();
        assert_eq!(p.file.clusters[0].power.c_eff_nf, 0.5);
        assert_eq!(p.file.clusters[0].idle_states[0].exit_latency_us, 40.0);
        let paths: Vec<_> = p.uncertain.iter().map(|u| (u.path.as_str(), u.integer)).collect();
        assert_eq!(paths, [("/clusters/0/power/c_eff_nf", false), ("/clusters/0/idle_states/0/exit_latency_us", true)]);
        assert_eq!((p.uncertain[0].value, p.uncertain[0].range), (0.5, [0.4, 0.6]));
        assert_eq!(p.uncertain[1].source, "table");
    }

    #[test]
    fn a_malformed_declared_constant_names_the_file_the_path_and_what_was_expected() {
        let exit = serde_json::json!(40);
        let cases = [
            (serde_json::json!({"value": "x", "range": [0, 1], "source": "s"}), "must be a number"),
            (serde_json::json!({"value": 0.5, "range": [0.4], "source": "s"}), "two numbers"),
            (serde_json::json!({"value": 0.5, "range": [0.4, "a"], "source": "s"}), "two numbers"),
            (serde_json::json!({"value": 0.5, "range": [0.6, 0.6], "source": "s"}), "lo < hi"),
            (serde_json::json!({"value": 0.7, "range": [0.4, 0.6], "source": "s"}), "outside its range"),
            (serde_json::json!({"value": 0.5, "range": [0.4, 0.6]}), "\"source\" must be a non-empty"),
            (serde_json::json!({"value": 0.5, "range": [0.4, 0.6], "source": " "}), "\"source\" must be a non-empty"),
            (
                serde_json::json!({"value": 0.5, "range": [0.4, 0.6], "source": "s", "unit": "nF"}),
                "unknown key \"unit\"",
            ),
        ];
        for (c_eff, expected) in cases {
            let e = juno_declaring(c_eff, exit.clone()).unwrap_err().to_string();
            assert!(e.starts_with("box.json: /clusters/0/power/c_eff_nf: ") && e.contains(expected), "{e}");
        }
    }

    #[test]
    fn plain_numbers_declare_nothing() {
        let p = juno_declaring(serde_json::json!(0.5), serde_json::json!(40)).unwrap();
        assert!(p.uncertain.is_empty());
    }
}
