//! Running a built governor file: a copy of its library loaded for one run, the policies set
//! up in it as the cpufreq core sets them up, and the calls the shim makes into the running
//! simulation (`struct dvfslab_host`, shim/dvfslab_abi.h).
//!
//! A call into the library happens only inside a [`Governor`] method, with that method's
//! [`PolicyCtx`]: the context is lent to the shim for the call (`HostState::current`) and
//! taken back after, so every answer the governor reads comes from the simulation at that
//! moment. A panic inside a callback is caught there: it never unwinds through C.

use std::cell::RefCell;
use std::ffi::{c_char, c_int, c_long, c_uint, c_ulonglong, c_void, CStr, CString};
use std::path::Path;
use std::rc::Rc;

use super::KernelGovernor;
use crate::error::SimError;
use crate::governor::{Governor, PolicyCtx, Relation, UpdateFlags};
use crate::hw::driver::Driver;
use crate::kernel::KernelVersion;
use crate::machine::Machine;

/// The layout of shim/dvfslab_abi.h this side speaks (DVFSLAB_ABI).
pub(super) const ABI: u32 = 1;

/// struct dvfslab_signals.
#[repr(C)]
#[derive(Default)]
struct Signals {
    util_avg: u64,
    util_est: u64,
    runnable_avg: u64,
    cap_orig: u64,
    idle_calls: u64,
    uclamp_min: u64,
    uclamp_max: u64,
    rt_runnable: c_int,
    uclamp_used: c_int,
}

/// struct dvfslab_host.
#[repr(C)]
struct Host {
    ctx: *mut c_void,
    signals: extern "C" fn(*mut c_void, c_int, *mut Signals),
    target: extern "C" fn(*mut c_void, c_uint, c_uint) -> c_uint,
    resolve: extern "C" fn(*mut c_void, c_uint) -> c_uint,
    log: extern "C" fn(*mut c_void, c_int, *const c_char),
    arm_timer: extern "C" fn(*mut c_void, c_ulonglong),
    now_ns: extern "C" fn(*mut c_void) -> c_ulonglong,
    cpu_times: extern "C" fn(*mut c_void, c_int, *mut c_ulonglong, *mut c_ulonglong),
}

/// struct dvfslab_policy_desc.
#[repr(C)]
struct PolicyDesc {
    ncpus: c_int,
    cpus: *const c_int,
    min_khz: c_uint,
    max_khz: c_uint,
    cur_khz: c_uint,
    cpuinfo_min_khz: c_uint,
    cpuinfo_max_khz: c_uint,
    transition_latency_ns: c_uint,
    transition_delay_us: c_uint,
    freq_ref_khz: c_uint,
    fast_switch_possible: c_int,
    dvfs_possible_from_any_cpu: c_int,
    driver_flags: c_uint,
    table_khz: *const c_uint,
    table_len: c_int,
}

/// CPUFREQ_NEED_UPDATE_LIMITS and CPUFREQ_HAVE_GOVERNOR_PER_POLICY (include/linux/cpufreq.h).
const CPUFREQ_NEED_UPDATE_LIMITS: c_uint = 1 << 0;
const CPUFREQ_HAVE_GOVERNOR_PER_POLICY: c_uint = 1 << 3;
/// SCHED_CPUFREQ_IOWAIT.
const SCHED_CPUFREQ_IOWAIT: c_uint = 1;

/// The driver's flags the governor files test: intel_cpufreq asks to be called on every limits
/// update (5.10+); cpufreq-dt and scmi give each policy its own governor tunables.
fn driver_flags(driver: Driver, kernel: KernelVersion) -> c_uint {
    match driver {
        Driver::IntelCpufreq if kernel >= KernelVersion(5, 10, 0) => CPUFREQ_NEED_UPDATE_LIMITS,
        Driver::CpufreqDt | Driver::Scmi => CPUFREQ_HAVE_GOVERNOR_PER_POLICY,
        _ => 0,
    }
}

/// What the shim's calls reach: the policy context lent for the current call, and what the
/// governor said.
struct HostState {
    /// A `*mut &mut dyn PolicyCtx` while a call into the library runs, else null.
    current: *mut c_void,
    /// The governor's messages (pr_err, pr_warn, WARN), level and text.
    messages: Vec<(c_int, String)>,
    /// A WARN, or a callback that failed: the run stops with it.
    failure: Option<String>,
}

/// The context lent for the current call, if any.
///
/// # Safety
/// `state` is the `HostState` of a live [`Loaded`]; its `current`, when not null, points at a
/// `&mut dyn PolicyCtx` that outlives the call into the library (see [`Loaded::call`]).
unsafe fn lent<'a>(state: *mut c_void) -> (&'a mut HostState, Option<&'a mut dyn PolicyCtx>) {
    let state = &mut *(state as *mut HostState);
    let ctx = (state.current as *mut &mut dyn PolicyCtx).as_mut().map(|c| &mut **c);
    (state, ctx)
}

/// Run a callback's body; a panic becomes the run's failure and `fallback` the answer.
fn guarded<T>(state: *mut c_void, fallback: T, body: impl FnOnce() -> T) -> T {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)) {
        Ok(v) => v,
        Err(_) => {
            // SAFETY: as in `lent`; only the failure is written.
            let s = unsafe { &mut *(state as *mut HostState) };
            s.failure.get_or_insert_with(|| "internal error in a kernel governor callback".to_string());
            fallback
        }
    }
}

extern "C" fn host_signals(state: *mut c_void, cpu: c_int, out: *mut Signals) {
    guarded(state, (), || {
        // SAFETY: the shim passes its own `host->ctx` and a valid `out`.
        let (_, ctx) = unsafe { lent(state) };
        let out = unsafe { &mut *out };
        *out = Signals { cap_orig: 1024, uclamp_max: 1024, ..Signals::default() };
        let Some(ctx) = ctx else { return };
        let Ok(cpu) = usize::try_from(cpu) else { return };
        if cpu >= ctx.facts().machine.plat.ncpus() {
            return;
        }
        let s = ctx.cpu_signals(cpu);
        let (uclamp_min, uclamp_max) = s.uclamp.unwrap_or((0, 1024));
        *out = Signals {
            util_avg: s.util_avg,
            util_est: s.util_est,
            runnable_avg: s.runnable_avg,
            cap_orig: s.cap_orig,
            idle_calls: s.idle_calls,
            uclamp_min,
            uclamp_max,
            rt_runnable: s.rt_runnable as c_int,
            uclamp_used: s.uclamp.is_some() as c_int,
        };
    })
}

extern "C" fn host_target(state: *mut c_void, khz: c_uint, relation: c_uint) -> c_uint {
    guarded(state, khz, || {
        // SAFETY: the shim passes its own `host->ctx`.
        let (_, ctx) = unsafe { lent(state) };
        let Some(ctx) = ctx else { return khz };
        let relation = match relation {
            1 => Relation::H,
            2 => Relation::C,
            _ => Relation::L,
        };
        ctx.request_khz(khz, relation);
        ctx.cur_khz()
    })
}

extern "C" fn host_resolve(state: *mut c_void, khz: c_uint) -> c_uint {
    guarded(state, khz, || {
        // SAFETY: the shim passes its own `host->ctx`.
        let (_, ctx) = unsafe { lent(state) };
        ctx.map_or(khz, |ctx| ctx.resolve_freq(khz))
    })
}

extern "C" fn host_log(state: *mut c_void, level: c_int, text: *const c_char) {
    guarded(state, (), || {
        // SAFETY: the shim passes its own `host->ctx` and a NUL-terminated text.
        let (s, _) = unsafe { lent(state) };
        let text = unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned();
        if text.starts_with("WARNING at ") {
            s.failure.get_or_insert_with(|| text.clone());
        }
        s.messages.push((level, text));
    })
}

extern "C" fn host_arm_timer(state: *mut c_void, delay_ns: c_ulonglong) {
    guarded(state, (), || {
        // SAFETY: the shim passes its own `host->ctx`.
        if let (_, Some(ctx)) = unsafe { lent(state) } {
            ctx.arm_timer(delay_ns);
        }
    })
}

extern "C" fn host_now_ns(state: *mut c_void) -> c_ulonglong {
    guarded(state, 0, || {
        // SAFETY: the shim passes its own `host->ctx`.
        let (_, ctx) = unsafe { lent(state) };
        ctx.map_or(0, |ctx| ctx.now_ns())
    })
}

extern "C" fn host_cpu_times(state: *mut c_void, cpu: c_int, busy: *mut c_ulonglong, iowait: *mut c_ulonglong) {
    guarded(state, (), || {
        // SAFETY: the shim passes its own `host->ctx` and valid outputs.
        let (_, ctx) = unsafe { lent(state) };
        let (b, w) = match (ctx, usize::try_from(cpu)) {
            (Some(ctx), Ok(cpu)) => (ctx.cpu_busy_ns(cpu), ctx.cpu_iowait_ns(cpu)),
            _ => (0, 0),
        };
        unsafe {
            *busy = b;
            *iowait = w;
        }
    })
}

/// sugov_effective_cpu_perf(cpu, actual, min, max).
type EffectivePerf =
    unsafe extern "C" fn(c_int, std::ffi::c_ulong, std::ffi::c_ulong, std::ffi::c_ulong) -> std::ffi::c_ulong;

/// The library's entry points (shim.c), valid while its [`Loaded`] lives.
struct Api {
    set_host: unsafe extern "C" fn(*const Host, c_int, c_ulonglong),
    set_cpus: unsafe extern "C" fn(c_int),
    governor_name: unsafe extern "C" fn() -> *const c_char,
    policy_init: unsafe extern "C" fn(c_int, *const PolicyDesc) -> c_int,
    policy_start: unsafe extern "C" fn(c_int) -> c_int,
    policy_limits: unsafe extern "C" fn(c_int),
    policy_exit: unsafe extern "C" fn(c_int),
    policy_sync: unsafe extern "C" fn(c_int, c_uint, c_uint, c_uint),
    update: unsafe extern "C" fn(c_int, c_ulonglong, c_uint, c_int),
    attr_names: unsafe extern "C" fn(c_int, *mut c_char, c_int) -> c_int,
    attr_store: unsafe extern "C" fn(c_int, *const c_char, *const c_char) -> c_long,
    /// sugov_effective_cpu_perf, where the file exports it (6.8+): EAS's view of the headroom.
    effective_perf: Option<EffectivePerf>,
}

/// One loaded copy of a governor library, with the policies set up in it.
struct Loaded {
    api: Api,
    host: Box<Host>,
    state: *mut HostState,
    initialised: Vec<c_int>,
    /// Last: the library is unloaded after everything that points into it.
    _library: libloading::Library,
}

/// Copies loaded so far by this process, to name each copy apart.
static COPIES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl Loaded {
    /// A fresh copy of `library` (its statics the new run's alone): the file is copied and
    /// the copy loaded, since loading one path twice gives the same statics.
    fn load(library: &Path, invariant: bool, tick_ns: u64, ncpus: usize) -> Result<Loaded, String> {
        let n = COPIES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let copy = std::env::temp_dir().join(format!("dvfslab-governor-{}-{n}.so", std::process::id()));
        std::fs::copy(library, &copy).map_err(|e| format!("cannot copy {}: {e}", library.display()))?;
        // SAFETY: the library was built by `compile::build` from the shim and a governor file;
        // loading runs no code of the file's (it has no constructors).
        let loaded = unsafe {
            libloading::os::unix::Library::open(
                Some(&copy),
                libloading::os::unix::RTLD_NOW | libloading::os::unix::RTLD_LOCAL,
            )
        };
        let _ = std::fs::remove_file(&copy);
        let lib: libloading::Library = loaded.map_err(|e| format!("cannot load {}: {e}", library.display()))?.into();
        macro_rules! entry {
            ($name:literal) => {
                // SAFETY: the shim defines each entry point with the type `Api` gives it.
                *unsafe { lib.get(concat!($name, "\0").as_bytes()) }.map_err(|e| {
                    format!("{} lacks {}: {e} (a library of another dvfslab?)", library.display(), $name)
                })?
            };
        }
        // SAFETY: as above.
        let abi: unsafe extern "C" fn() -> c_int = entry!("dvfslab_abi");
        if unsafe { abi() } as u32 != ABI {
            return Err(format!("{} was built for another dvfslab (shim ABI mismatch)", library.display()));
        }
        let api = Api {
            set_host: entry!("dvfslab_set_host"),
            set_cpus: entry!("dvfslab_set_cpus"),
            governor_name: entry!("dvfslab_governor_name"),
            policy_init: entry!("dvfslab_policy_init"),
            policy_start: entry!("dvfslab_policy_start"),
            policy_limits: entry!("dvfslab_policy_limits"),
            policy_exit: entry!("dvfslab_policy_exit"),
            policy_sync: entry!("dvfslab_policy_sync"),
            update: entry!("dvfslab_update"),
            attr_names: entry!("dvfslab_attr_names"),
            attr_store: entry!("dvfslab_attr_store"),
            // SAFETY: the governor file defines it with this type where it exports it.
            effective_perf: unsafe { lib.get(b"sugov_effective_cpu_perf\0") }.ok().map(|s| *s),
        };
        let state =
            Box::into_raw(Box::new(HostState { current: std::ptr::null_mut(), messages: Vec::new(), failure: None }));
        let host = Box::new(Host {
            ctx: state as *mut c_void,
            signals: host_signals,
            target: host_target,
            resolve: host_resolve,
            log: host_log,
            arm_timer: host_arm_timer,
            now_ns: host_now_ns,
            cpu_times: host_cpu_times,
        });
        // SAFETY: `host` lives as long as the library (both in the returned `Loaded`).
        unsafe {
            (api.set_host)(&*host, invariant as c_int, tick_ns);
            (api.set_cpus)(ncpus as c_int);
        }
        Ok(Loaded { api, host, state, initialised: Vec::new(), _library: lib })
    }

    /// Call into the library with `ctx` lent to the shim for the call.
    fn call<R>(&mut self, ctx: Option<&mut dyn PolicyCtx>, f: impl FnOnce(&Api) -> R) -> R {
        let mut held: Option<&mut dyn PolicyCtx> = ctx;
        // SAFETY: `state` is ours; `current` points at `held`'s reference only during `f`.
        unsafe {
            (*self.state).current = match held.as_mut() {
                Some(c) => c as *mut &mut dyn PolicyCtx as *mut c_void,
                None => std::ptr::null_mut(),
            };
        }
        let out = f(&self.api);
        // SAFETY: as above.
        unsafe { (*self.state).current = std::ptr::null_mut() };
        out
    }

    fn name(&self) -> String {
        // SAFETY: the shim returns the registered governor's NUL-terminated name.
        unsafe { CStr::from_ptr((self.api.governor_name)()) }.to_string_lossy().into_owned()
    }

    /// A failure the governor reported since the last look (a WARN), with its messages.
    fn take_failure(&mut self) -> Option<String> {
        // SAFETY: `state` is ours and no call is running.
        unsafe { (*self.state).failure.take() }
    }

    /// The governor's messages so far, one a line.
    fn messages(&self) -> String {
        // SAFETY: as above.
        let messages = unsafe { &(*self.state).messages };
        messages.iter().map(|(_, t)| t.as_str()).collect::<Vec<_>>().join("\n")
    }

    /// cpufreq's governor init of policy `p`, described by `desc`: the error code as text.
    fn init(&mut self, ctx: Option<&mut dyn PolicyCtx>, p: usize, desc: &PolicyDesc) -> Result<(), String> {
        // SAFETY: `desc` and its arrays live through the call.
        let ret = self.call(ctx, |api| unsafe { (api.policy_init)(p as c_int, desc) });
        if ret != 0 {
            return Err(format!("the governor's init failed ({}){}", errno_text(-ret), self.said()));
        }
        self.initialised.push(p as c_int);
        Ok(())
    }

    /// Write `value` to policy `p`'s sysfs tunable `name`.
    fn store(&mut self, ctx: Option<&mut dyn PolicyCtx>, p: usize, name: &str, value: &str) -> Result<(), String> {
        let (Ok(cname), Ok(cvalue)) = (CString::new(name), CString::new(value)) else {
            return Err("a tunable's name and value cannot hold a NUL byte".to_string());
        };
        // SAFETY: both strings live through the call.
        let ret = self.call(ctx, |api| unsafe { (api.attr_store)(p as c_int, cname.as_ptr(), cvalue.as_ptr()) });
        match ret {
            r if r >= 0 => Ok(()),
            r if -r == libc_errno::ENOENT as c_long || -r == libc_errno::ENODEV as c_long => {
                let known = self.attr_names(p);
                Err(format!(
                    "not a tunable of this governor (its sysfs tunables: {}; system keys: {})",
                    if known.is_empty() { "none".to_string() } else { known },
                    crate::governor::SYSTEM_KNOBS
                        .iter()
                        .map(|k| k.name)
                        .chain(crate::governor::SYSTEM_TEXT_KEYS.iter().map(|(k, _)| *k))
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            }
            r if -r == libc_errno::EACCES as c_long => Err("a read-only tunable".to_string()),
            r => Err(format!("the governor refused '{value}' ({}){}", errno_text(-r as c_int), self.said())),
        }
    }

    fn attr_names(&mut self, p: usize) -> String {
        let mut buf = vec![0 as c_char; 4096];
        // SAFETY: `buf` has the length passed.
        self.call(None, |api| unsafe { (api.attr_names)(p as c_int, buf.as_mut_ptr(), buf.len() as c_int) });
        // SAFETY: the shim NUL-terminates within the buffer.
        unsafe { CStr::from_ptr(buf.as_ptr()) }.to_string_lossy().into_owned()
    }

    /// The governor's messages, after ": " (empty if it said nothing).
    fn said(&self) -> String {
        let m = self.messages();
        if m.is_empty() {
            String::new()
        } else {
            format!(": {m}")
        }
    }
}

impl Drop for Loaded {
    fn drop(&mut self) {
        for p in std::mem::take(&mut self.initialised) {
            // SAFETY: `p` was initialised in this library, which is still loaded.
            self.call(None, |api| unsafe { (api.policy_exit)(p) });
        }
        // SAFETY: allocated in `load` and no longer reachable from the library after exit.
        drop(unsafe { Box::from_raw(self.state) });
        let _ = &self.host;
    }
}

/// The errno values the shim returns (Linux's numbers, as the kernel's).
mod libc_errno {
    pub const ENOENT: i32 = 2;
    pub const EACCES: i32 = 13;
    pub const ENODEV: i32 = 19;
}

/// An errno as its name, where it is a common one.
fn errno_text(errno: c_int) -> String {
    let name = match errno {
        1 => "EPERM",
        12 => "ENOMEM",
        16 => "EBUSY",
        22 => "EINVAL",
        34 => "ERANGE",
        _ => "",
    };
    if name.is_empty() {
        format!("error {}", -errno)
    } else {
        format!("-{name}")
    }
}

/// The description of a policy the core hands its governor's init (`cpufreq_policy` as
/// cpufreq_online fills it), from the machine.
struct DescData {
    cpus: Vec<c_int>,
    table: Vec<c_uint>,
    desc: PolicyDesc,
}

fn describe(machine: &Machine, policy: usize, limits: (u32, u32, u32), invariant: bool) -> DescData {
    let facts = crate::governor::core::PolicyFacts {
        machine,
        policy,
        limits: &crate::governor::core::Policy {
            min_khz: limits.0,
            max_khz: limits.1,
            cur_khz: limits.2,
            timer_token: 0,
        },
        invariant,
    };
    let cpus: Vec<c_int> = facts.cpus().iter().map(|&c| c as c_int).collect();
    let table: Vec<c_uint> = facts.table_khz().to_vec();
    let (cpuinfo_min, _, _) = facts.cpuinfo_khz();
    let (vendor, _) = facts.cpu_identity();
    // arch_scale_freq_ref: arm64 keeps each CPU's cpuinfo.max_freq (capacity_freq_ref, 6.8+);
    // x86 and POWER have none.
    let freq_ref = if matches!(vendor, crate::hw::platform::Vendor::Arm) { facts.cpuinfo_max_khz() } else { 0 };
    let desc = PolicyDesc {
        ncpus: cpus.len() as c_int,
        cpus: std::ptr::null(),
        min_khz: limits.0,
        max_khz: limits.1,
        cur_khz: limits.2,
        cpuinfo_min_khz: cpuinfo_min.min(table[0]),
        cpuinfo_max_khz: facts.cpuinfo_max_khz(),
        transition_latency_ns: facts.transition_latency_ns().map_or(u32::MAX, |ns| ns.min(u32::MAX as u64) as u32),
        transition_delay_us: facts.default_transition_delay_us().min(u32::MAX as u64) as c_uint,
        freq_ref_khz: freq_ref,
        fast_switch_possible: 1,
        dvfs_possible_from_any_cpu: machine.driver.dvfs_possible_from_any_cpu() as c_int,
        driver_flags: driver_flags(machine.driver, machine.kernel),
        table_khz: std::ptr::null(),
        table_len: table.len() as c_int,
    };
    DescData { cpus, table, desc }
}

impl DescData {
    fn desc(&self) -> PolicyDesc {
        PolicyDesc { cpus: self.cpus.as_ptr(), table_khz: self.table.as_ptr(), ..self.desc }
    }
}

impl Clone for PolicyDesc {
    fn clone(&self) -> Self {
        *self
    }
}
impl Copy for PolicyDesc {}

/// Load `library` once to check a spec: the governor's name, and that each tunable the spec
/// writes exists and takes its value (on a one-CPU policy set up for the check). Errors are
/// (the key, the message).
pub(super) fn probe(
    library: &Path,
    writes: &[(String, String)],
    policy_writes: &[(usize, String, String)],
) -> Result<String, (String, String)> {
    let mut loaded = Loaded::load(library, true, 4_000_000, 1).map_err(|m| ("path".to_string(), m))?;
    let name = loaded.name();
    let cpus = [0 as c_int];
    let table = [1_000_000 as c_uint, 2_000_000];
    let desc = PolicyDesc {
        ncpus: 1,
        cpus: cpus.as_ptr(),
        min_khz: table[0],
        max_khz: table[1],
        cur_khz: table[0],
        cpuinfo_min_khz: table[0],
        cpuinfo_max_khz: table[1],
        transition_latency_ns: 0,
        transition_delay_us: 1000,
        freq_ref_khz: 0,
        fast_switch_possible: 1,
        dvfs_possible_from_any_cpu: 0,
        driver_flags: CPUFREQ_HAVE_GOVERNOR_PER_POLICY,
        table_khz: table.as_ptr(),
        table_len: table.len() as c_int,
    };
    loaded.init(None, 0, &desc).map_err(|m| ("path".to_string(), m))?;
    for (key, value) in writes {
        loaded.store(None, 0, key, value).map_err(|m| (key.clone(), m))?;
    }
    for (cpu, key, value) in policy_writes {
        loaded.store(None, 0, key, value).map_err(|m| (format!("policy{cpu}.{key}"), m))?;
    }
    Ok(name)
}

/// One governor per policy of `machine`, sharing one fresh copy of the source's library.
pub(super) fn governors(source: &KernelGovernor, machine: &Machine) -> Vec<Box<dyn Governor>> {
    let loaded = Loaded::load(&source.library, machine.invariant, machine.tick_ns, machine.plat.ncpus());
    let effective_perf = loaded.as_ref().ok().and_then(|l| l.api.effective_perf);
    let shared = Rc::new(RefCell::new(loaded));
    (0..machine.plat.policies.len())
        .map(|p| {
            let first_cpu = machine.plat.policies[p].cpus[0];
            let mut writes: Vec<(String, String, String)> =
                source.writes.iter().map(|(k, v)| (k.clone(), v.clone(), k.clone())).collect();
            writes.extend(
                source
                    .policy_writes
                    .iter()
                    .filter(|(cpu, _, _)| *cpu == first_cpu)
                    .map(|(cpu, k, v)| (k.clone(), v.clone(), format!("policy{cpu}.{k}"))),
            );
            Box::new(KernelPolicy {
                shared: shared.clone(),
                policy: p,
                first_cpu,
                writes,
                per_policy: source.policy_writes.iter().any(|(cpu, _, _)| *cpu == first_cpu),
                started: false,
                running: false,
                effective_perf,
                schedutil: source.name == "schedutil",
                kernel: source.version,
                file: source.file.display().to_string(),
            }) as Box<dyn Governor>
        })
        .collect()
}

/// One policy's governor: the shared library copy, and the policy's number in it.
struct KernelPolicy {
    shared: Rc<RefCell<Result<Loaded, String>>>,
    policy: usize,
    first_cpu: usize,
    /// sysfs writes at start: (tunable, value, the key as the spec gave it).
    writes: Vec<(String, String, String)>,
    /// The spec writes some of this policy's tunables on their own (`policyN.KEY`).
    per_policy: bool,
    started: bool,
    /// Set up without error: only then does the policy call into the library.
    running: bool,
    /// The file's sugov_effective_cpu_perf, valid while `shared` holds the library.
    effective_perf: Option<EffectivePerf>,
    schedutil: bool,
    kernel: KernelVersion,
    file: String,
}

impl KernelPolicy {
    fn fail(&self, ctx: &mut dyn PolicyCtx, field: &str, message: String) {
        ctx.fail(SimError::config(format!("governor 'kernel:{}'", self.file), field, message));
    }

    /// The policy's governor set up as cpufreq_online does: init, the spec's sysfs writes,
    /// then start and limits (cpufreq_start_governor).
    fn first_start(&mut self, ctx: &mut dyn PolicyCtx) -> Result<(), (String, String)> {
        let mut shared = self.shared.borrow_mut();
        let loaded = shared.as_mut().map_err(|m| ("path".to_string(), m.clone()))?;
        let facts = ctx.facts();
        let data = describe(facts.machine, self.policy, (ctx.min_khz(), ctx.max_khz(), ctx.cur_khz()), ctx.invariant());
        let desc = data.desc();
        loaded.init(Some(ctx), self.policy, &desc).map_err(|m| ("path".to_string(), m))?;
        // Without CPUFREQ_HAVE_GOVERNOR_PER_POLICY a governor keeps one set of tunables for
        // every policy (sugov's and the DBS governors' global tunables).
        if self.per_policy && desc.driver_flags & CPUFREQ_HAVE_GOVERNOR_PER_POLICY == 0 {
            {
                return Err((
                    format!("policy{}", self.first_cpu),
                    "the driver shares one set of governor tunables among its policies (no \
                     CPUFREQ_HAVE_GOVERNOR_PER_POLICY): set the tunable for all"
                        .to_string(),
                ));
            }
        }
        for (name, value, key) in &self.writes {
            loaded.store(Some(ctx), self.policy, name, value).map_err(|m| (key.clone(), m))?;
        }
        // SAFETY: the policy was initialised above.
        let ret = loaded.call(Some(ctx), |api| unsafe { (api.policy_start)(self.policy as c_int) });
        if ret != 0 {
            return Err((
                "path".to_string(),
                format!("the governor's start failed ({}){}", errno_text(-ret), loaded.said()),
            ));
        }
        Ok(())
    }

    /// A failure the governor reported during the last call stops the run.
    fn check(&self, ctx: &mut dyn PolicyCtx) {
        let failure = self.shared.borrow_mut().as_mut().ok().and_then(Loaded::take_failure);
        if let Some(message) = failure {
            self.fail(ctx, "path", message);
        }
    }
}

impl Governor for KernelPolicy {
    fn start(&mut self, ctx: &mut dyn PolicyCtx) {
        if !self.started {
            self.started = true;
            match self.first_start(ctx) {
                Ok(()) => self.running = true,
                Err((field, message)) => self.fail(ctx, &field, message),
            }
        } else if self.running {
            if let Ok(loaded) = self.shared.borrow_mut().as_mut() {
                let (p, cur, min, max) = (self.policy as c_int, ctx.cur_khz(), ctx.min_khz(), ctx.max_khz());
                // SAFETY: the policy was initialised at its first start.
                loaded.call(Some(ctx), |api| unsafe {
                    (api.policy_sync)(p, cur, min, max);
                    (api.policy_limits)(p);
                });
            }
        }
        self.check(ctx);
    }

    fn util_update(&mut self, ctx: &mut dyn PolicyCtx, cpu: usize, flags: UpdateFlags) {
        if !self.running {
            return;
        }
        if ctx.explaining() {
            ctx.explain(&[("cpu", cpu as f64), ("iowait", flags.iowait as u8 as f64)]);
        }
        {
            let mut shared = self.shared.borrow_mut();
            let Ok(loaded) = shared.as_mut() else { return };
            let (p, cur, min, max) = (self.policy as c_int, ctx.cur_khz(), ctx.min_khz(), ctx.max_khz());
            let time = ctx.now_ns();
            let iowait = if flags.iowait { SCHED_CPUFREQ_IOWAIT } else { 0 };
            // SAFETY: the policy was initialised at start; a CPU without a hook is skipped.
            loaded.call(Some(ctx), |api| unsafe {
                (api.policy_sync)(p, cur, min, max);
                (api.update)(cpu as c_int, time, iowait, flags.remote as c_int);
            });
        }
        self.check(ctx);
    }

    fn wants_util_updates(&self) -> bool {
        true
    }

    /// EAS's view of the headroom: 6.8+ calls the governor file's own
    /// sugov_effective_cpu_perf; before, the scheduler's map_util_perf (1.25), whatever the
    /// file does.
    fn dvfs_headroom(&self, actual: u64, _cap: u64) -> Option<u64> {
        if !self.schedutil {
            return None;
        }
        // Read without the shared state: EAS may ask while another policy's call runs.
        match self.effective_perf {
            Some(f) if self.kernel >= KernelVersion(6, 8, 0) => {
                // SAFETY: a pure function of its arguments in the file. (c_ulong is u64 here,
                // not on every target.)
                #[allow(clippy::unnecessary_cast)]
                Some(unsafe { f(self.first_cpu as c_int, actual as _, 0, std::ffi::c_ulong::MAX) } as u64)
            }
            _ => Some(actual + (actual >> 2)),
        }
    }
}
