//! The kernel's own schedutil (`kernel:TREE`, built against the shim) against the built-in
//! one, decision for decision, where a kernel tree is at hand: DVFSLAB_KERNEL_SRC names one
//! or more trees (separated by ':'), each compared at its own version. Without it these tests
//! say so and check nothing: the repository ships no kernel source.

use dvfslab_sim::kernel::KernelVersion;
use dvfslab_sim::observe::Decision;
use dvfslab_sim::{simulate, SimConfig};

use crate::common::preset;

/// The trees DVFSLAB_KERNEL_SRC names, with the version each Makefile gives.
fn trees() -> Vec<(String, String)> {
    let Ok(list) = std::env::var("DVFSLAB_KERNEL_SRC") else {
        eprintln!("not run: DVFSLAB_KERNEL_SRC names no kernel tree");
        return Vec::new();
    };
    list.split(':')
        .filter(|t| !t.is_empty())
        .map(|tree| {
            let makefile = std::fs::read_to_string(format!("{tree}/Makefile")).expect("a kernel tree's Makefile");
            let field = |name: &str| {
                makefile.lines().find_map(|l| {
                    l.split_once('=').filter(|(k, _)| k.trim() == name).map(|(_, v)| v.trim().to_string())
                })
            };
            let (version, patchlevel) = (field("VERSION"), field("PATCHLEVEL"));
            let mut v = format!("{}.{}", version.expect("VERSION"), patchlevel.expect("PATCHLEVEL"));
            // A stable tree is compared with the built-in at its own update, whose backports
            // the built-in follows where it knows them.
            if let Some(sub) = field("SUBLEVEL").filter(|s| !s.is_empty() && s != "0") {
                v = format!("{v}.{sub}");
            }
            (tree.to_string(), v)
        })
        .collect()
}

fn decisions(platform: &str, governor: &str, workload: &str, duration_s: f64, seed: u64) -> Vec<Decision> {
    let cfg = SimConfig {
        governor: governor.into(),
        workload: workload.into(),
        duration_ns: Some((duration_s * 1e9) as u64),
        seed,
        explain: true,
        ..SimConfig::default()
    };
    let r = simulate(&preset(platform), platform, &cfg).unwrap_or_else(|e| panic!("{governor}: {e}"));
    r.decisions.expect("explain was on")
}

/// (time, policy, frequency) of every request that reached the cpufreq core.
fn choices(d: &[Decision]) -> Vec<(u64, usize, u32)> {
    d.iter().map(|d| (d.time_ns, d.policy, d.resolved_khz)).collect()
}

/// The runs compared: presets with one-CPU and shared policies, table and table-less drivers,
/// invariant or not, busy, periodic, I/O-bound and migrating loads.
const CASES: &[(&str, &str, &str)] = &[
    ("skylake-e3-1240v5", "", "periodic:threads=4,run_us=3000,period_us=10000"),
    ("skylake-e3-1240v5", "invariant=0", "periodic:threads=2,run_us=8000,period_us=20000"),
    ("skylake-e3-1240v5", "driver=intel_cpufreq", "hackbench"),
    ("juno-r2", "", "periodic:threads=6,run_us=2000,period_us=16000"),
    ("pixel6", "", "periodic:threads=8,run_us=1500,period_us=12000"),
    ("haswell-e5-2670v3-2s", "rate_limit_us=2000", "tbench:clients=4"),
    ("skylake-e3-1240v5", "", "dbench4:clients=2"),
    ("juno-r0", "", "fio"),
];

/// Whether a tree carries, from a stable release, a later mainline rule about a pending limits
/// update (`need_freq_update`) that the built-in at its version does not: 6.6's "Update
/// next_freq when cpufreq_limits change" (no busy hold while one is pending) without 6.14's "Fix
/// superfluous updates caused by need_freq_update", which the built-in follows in the stable
/// updates that took it (`NEED_FREQ_UPDATE_CLEARED_FIRST_STABLE`) and with which a pending
/// update lasts one evaluation; the built-in has the first from 6.6 and in 6.1.60+ and 6.5.9+.
/// Debian's 6.1.192 and 6.12.118 carry both and are compared on intel_cpufreq.
fn carries_rules_the_built_in_lacks(tree: &str, version: &str) -> bool {
    let text = std::fs::read_to_string(format!("{tree}/kernel/sched/cpufreq_schedutil.c")).unwrap_or_default();
    let v = KernelVersion::parse(version).expect("a modelled version");
    let busy_rule = text.contains("next_f < sg_policy->next_freq &&\n\t    !sg_policy->need_freq_update");
    let cleared = text.contains("!cpufreq_driver_test_flags(CPUFREQ_NEED_UPDATE_LIMITS)")
        || text.contains("if (sg_policy->need_freq_update)\n\t\tsg_policy->need_freq_update = false;");
    v < KernelVersion(6, 6, 0) && busy_rule && !cleared && !matches!((v.0, v.1), (6, 1) | (6, 5))
}

#[test]
fn the_kernels_schedutil_decides_as_the_built_in_one() {
    for (tree, version) in trees() {
        let (mut compared, mut boosted) = (0, 0);
        // Such a tree runs the cases under a driver without the flag (acpi-cpufreq), where
        // both forms decide alike.
        let backported = carries_rules_the_built_in_lacks(&tree, &version);
        if backported {
            eprintln!("{version}: the tree carries 6.6's need_freq_update rule from stable; Intel cases run with acpi-cpufreq");
        }
        for &(platform, keys, workload) in CASES {
            let intel = platform.starts_with("skylake") || platform.starts_with("haswell");
            let keys = match keys {
                k if backported && intel && k.contains("driver=intel_cpufreq") => "driver=acpi-cpufreq".to_string(),
                k if backported && intel && k.is_empty() => "driver=acpi-cpufreq".to_string(),
                k if backported && intel => format!("{k},driver=acpi-cpufreq"),
                k => k.to_string(),
            };
            let sep = if keys.is_empty() { "" } else { "," };
            let kernel = format!("kernel:{tree}{sep}{keys}");
            let builtin = format!("schedutil:kernel={version}{sep}{keys}");
            let ours = choices(&decisions(platform, &builtin, workload, 3.0, 1));
            let kernel_log = decisions(platform, &kernel, workload, 3.0, 1);
            boosted += kernel_log.iter().filter(|d| d.inputs.contains(&("iowait", 1.0))).count();
            let theirs = choices(&kernel_log);
            // Some cases ask rarely at some versions (hackbench under a table driver stays at
            // its top; Juno's periodic load at 6.6 settles in a few requests): the whole set
            // must still compare many.
            assert!(ours.len() > 5, "{platform} {keys} {workload}: only {} decisions", ours.len());
            if let Some(i) = (0..ours.len().max(theirs.len())).find(|&i| ours.get(i) != theirs.get(i)) {
                panic!(
                    "{version} {platform} {keys} {workload}: decision {i} differs: built-in {:?}, kernel {:?}",
                    ours.get(i),
                    theirs.get(i)
                );
            }
            compared += ours.len();
        }
        assert!(compared > 500, "{version}: only {compared} decisions");
        // The set exercises the iowait boost, not only the utilisation path.
        assert!(boosted > 0, "no decision followed an I/O wake-up");
        eprintln!("{version}: {compared} decisions compared, all equal ({boosted} after an I/O wake-up)");
    }
}

/// The project's own small governor file (tests/data/kernel-governors/): highest frequency
/// while a CPU's util is above `up_util`, else lowest.
fn twostep() -> String {
    format!("{}/../../tests/data/kernel-governors/cpufreq_twostep.c", env!("CARGO_MANIFEST_DIR"))
}

fn error_of(platform: &str, governor: &str) -> String {
    let cfg = SimConfig {
        governor: governor.into(),
        workload: "periodic:threads=2".into(),
        duration_ns: Some(100_000_000),
        ..SimConfig::default()
    };
    match simulate(&preset(platform), platform, &cfg) {
        Ok(_) => panic!("{governor} ran"),
        Err(e) => e.to_string(),
    }
}

const HALF_BUSY: &str = "periodic:threads=4,run_us=5000,period_us=10000";

#[test]
fn a_governor_file_runs_and_its_sysfs_tunable_is_written() {
    let spec = format!("kernel:{},kernel=6.1", twostep());
    let d = decisions("skylake-e3-1240v5", &spec, HALF_BUSY, 1.0, 0);
    let mut seen: Vec<u32> = d.iter().map(|d| d.resolved_khz).collect();
    seen.sort_unstable();
    seen.dedup();
    // Only the two ends of the table, each asked for at some point, alternately.
    assert_eq!(seen.len(), 2, "{seen:?}");
    // The file asks only on a change: each policy's requests alternate between them.
    let policies: std::collections::BTreeSet<usize> = d.iter().map(|d| d.policy).collect();
    for p in policies {
        let mine: Vec<u32> = d.iter().filter(|d| d.policy == p).map(|d| d.resolved_khz).collect();
        assert!(mine.windows(2).all(|w| w[0] != w[1]), "policy {p}: {mine:?}");
    }
    assert!(d.len() > 10, "{:?}", choices(&d));
    // up_util=1024: no CPU is ever above it, so every request is the lowest frequency.
    let calm = decisions("skylake-e3-1240v5", &format!("{spec},up_util=1024"), HALF_BUSY, 1.0, 0);
    assert!(!calm.is_empty() && calm.iter().all(|d| d.resolved_khz == seen[0]), "{calm:?}");
}

#[test]
fn a_policy_of_a_per_policy_driver_takes_its_own_tunable() {
    // cpufreq-dt gives each policy its own tunables (CPUFREQ_HAVE_GOVERNOR_PER_POLICY): the
    // policy at CPU 0 never rises, the other still does.
    let spec = format!("kernel:{},kernel=6.1,policy0.up_util=1024", twostep());
    let d = decisions("juno-r2", &spec, "periodic:threads=6,run_us=8000,period_us=10000", 1.0, 0);
    let top = |p: usize| d.iter().filter(|d| d.policy == p).map(|d| d.resolved_khz).max();
    let bottom = |p: usize| d.iter().filter(|d| d.policy == p).map(|d| d.resolved_khz).min();
    assert_eq!(top(0), bottom(0));
    assert!(top(1) > bottom(1), "{:?} {:?}", top(1), bottom(1));
    // acpi-cpufreq shares one set among its policies: a policy's own value is refused.
    let err = error_of("skylake-e3-1240v5", &format!("kernel:{},kernel=6.1,policy0.up_util=1024", twostep()));
    assert!(err.contains("policy0") && err.contains("shares one set"), "{err}");
}

#[test]
fn runs_side_by_side_keep_their_own_governor_state() {
    // Each run loads its own copy of the library: the file's statics (global_tunables) are
    // the run's. Two runs at once with different tunables decide as each does alone.
    let spec = |up: u32| format!("kernel:{},kernel=6.1,up_util={up}", twostep());
    let alone: Vec<_> =
        [200, 900].iter().map(|&u| choices(&decisions("skylake-e3-1240v5", &spec(u), HALF_BUSY, 0.5, 0))).collect();
    let together: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = [200, 900]
            .iter()
            .map(|&u| {
                let spec = spec(u);
                s.spawn(move || choices(&decisions("skylake-e3-1240v5", &spec, HALF_BUSY, 0.5, 0)))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_ne!(alone[0], alone[1]);
    assert_eq!(alone, together);
}

#[test]
fn a_bad_tunable_or_version_is_refused_with_what_to_write() {
    let base = format!("kernel:{}", twostep());
    let err = error_of("skylake-e3-1240v5", &format!("{base},kernel=6.1,down_util=3"));
    assert!(err.contains("down_util: not a tunable") && err.contains("its sysfs tunables: up_util"), "{err}");
    let err = error_of("skylake-e3-1240v5", &format!("{base},kernel=6.1,up_util=5000"));
    assert!(err.contains("up_util: the governor refused '5000' (-EINVAL)"), "{err}");
    let err = error_of("skylake-e3-1240v5", &base);
    assert!(err.contains("kernel: no kernel tree's Makefile") && err.contains("add kernel=X.Y"), "{err}");
    let err = error_of("skylake-e3-1240v5", "kernel:/no/such/cpufreq_schedutil.c,kernel=6.1");
    assert!(err.contains("path: no file /no/such/cpufreq_schedutil.c"), "{err}");
}

/// A copy of the small governor with `edit` applied, in a fresh folder removed when the
/// copy is dropped (a failing test included).
struct Edited {
    file: std::path::PathBuf,
}

impl Drop for Edited {
    fn drop(&mut self) {
        if let Some(dir) = self.file.parent() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

fn edited(name: &str, edit: impl Fn(&str) -> String) -> Edited {
    let dir = std::env::temp_dir().join(format!("dvfslab-kgov-test-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("cpufreq_twostep.c");
    std::fs::write(&file, edit(&std::fs::read_to_string(twostep()).unwrap())).unwrap();
    Edited { file }
}

#[test]
fn a_symbol_the_shim_lacks_is_named_with_its_line() {
    let copy = edited("missing", |s| s.replace("\ttp->next_freq = 0;\n", "\ttp->next_freq = frob_policy(policy);\n"));
    let file = &copy.file;
    let line = std::fs::read_to_string(file).unwrap().lines().position(|l| l.contains("frob_policy")).unwrap() + 1;
    let err = error_of("skylake-e3-1240v5", &format!("kernel:{},kernel=6.1", file.display()));
    assert!(err.contains(&format!("cpufreq_twostep.c:{line}: uses function frob_policy")), "{err}");
    assert!(
        err.contains("which dvfslab's kernel shim does not provide (it covers cpufreq_schedutil.c of Linux"),
        "{err}"
    );
}

#[test]
fn a_compiler_error_is_shown_as_the_compiler_gives_it() {
    let copy = edited("syntax", |s| s.replace("\ttp->next_freq = 0;\n", "\ttp->next_freq = 0\n"));
    let file = &copy.file;
    let err = error_of("skylake-e3-1240v5", &format!("kernel:{},kernel=6.1", file.display()));
    assert!(err.contains("did not compile against dvfslab's kernel shim"), "{err}");
    assert!(err.contains("cpufreq_twostep.c:") && err.contains("error: expected ';'"), "{err}");
}

/// The runs the DBS governors are compared on.
const DBS_CASES: &[(&str, &str, &str)] = &[
    ("skylake-e3-1240v5", "", "periodic:threads=4,run_us=3000,period_us=10000"),
    ("skylake-e3-1240v5", "sampling_rate=20000", "tbench:clients=2"),
    ("juno-r2", "", "periodic:threads=6,run_us=2000,period_us=16000"),
    ("skylake-e3-1240v5", "io_is_busy=1", "dbench4:clients=2"),
];

#[test]
fn the_kernels_ondemand_decides_as_the_built_in_one() {
    for (tree, version) in trees() {
        for name in ["ondemand"] {
            let file = format!("{tree}/drivers/cpufreq/cpufreq_{name}.c");
            if !std::path::Path::new(&file).is_file() {
                eprintln!("not run: {file} is not in the tree");
                continue;
            }
            let mut compared = 0;
            for (platform, keys, workload) in DBS_CASES {
                let sep = if keys.is_empty() { "" } else { "," };
                let kernel = format!("kernel:{file}{sep}{keys}");
                let builtin = format!("{name}:kernel={version}{sep}{keys}");
                let ours = choices(&decisions(platform, &builtin, workload, 3.0, 1));
                let theirs = choices(&decisions(platform, &kernel, workload, 3.0, 1));
                assert!(ours.len() > 5, "{name} {platform} {workload}: only {} decisions", ours.len());
                if let Some(i) = (0..ours.len().max(theirs.len())).find(|&i| ours.get(i) != theirs.get(i)) {
                    panic!(
                        "{version} {name} {platform} {keys} {workload}: decision {i} differs: built-in {:?}, kernel {:?}",
                        ours.get(i),
                        theirs.get(i)
                    );
                }
                compared += ours.len();
            }
            assert!(compared > 50, "{name}: only {compared} decisions");
            eprintln!("{version} {name}: {compared} decisions compared, all equal");
        }
    }
}

/// conservative runs from the kernel's files with their own tunables (freq_step written
/// through the file's store); the comparison with the built-in one is below.
#[test]
fn the_kernels_conservative_runs_with_its_tunables() {
    for (tree, _) in trees() {
        let file = format!("{tree}/drivers/cpufreq/cpufreq_conservative.c");
        if !std::path::Path::new(&file).is_file() {
            eprintln!("not run: {file} is not in the tree");
            continue;
        }
        let w = "periodic:threads=4,run_us=6000,period_us=10000";
        let slow = decisions("skylake-e3-1240v5", &format!("kernel:{file},freq_step=2"), w, 2.0, 1);
        let fast = decisions("skylake-e3-1240v5", &format!("kernel:{file},freq_step=20"), w, 2.0, 1);
        let top = |d: &[Decision]| d.iter().map(|d| d.resolved_khz).max().unwrap_or(0);
        let first_at_top = |d: &[Decision]| d.iter().find(|x| x.resolved_khz == top(d)).map(|x| x.time_ns);
        // Bigger steps reach the busy CPUs' top sooner.
        assert!(top(&fast) >= top(&slow), "{} {}", top(&fast), top(&slow));
        assert!(first_at_top(&fast) < first_at_top(&slow) || top(&fast) > top(&slow));
    }
}

/// A later conservative rule a tree carries from a stable update the built-in does not know for
/// its series (conservative.rs names those it follows): no early stop at the policy's ends
/// (known from 6.1.178 and 6.12.97), or the steps lost to a long idle taken at low load only
/// (6.12.117). The reset on a limits change (`cs_limits`) is not looked for: the simulated
/// limits never change after the start, where both forms agree.
fn conservative_rule_of_an_unknown_update(text: &str, version: &str) -> Option<&'static str> {
    let v = KernelVersion::parse(version).expect("a modelled version");
    if !text.contains("requested_freq == policy->max")
        && !v.has_backport(&[KernelVersion(6, 1, 178), KernelVersion(6, 12, 97)])
    {
        return Some("no early stop at the policy's ends");
    }
    if text.contains("max_sample_load") && !v.has_backport(&[KernelVersion(6, 12, 117)]) {
        return Some("steps lost to a long idle taken at low load only");
    }
    None
}

/// conservative of a kernel tree against the built-in, decision for decision, at the tree's
/// own version: mainline's rules, and the stable updates' later ones where the built-in knows
/// the update that took them (Debian's 6.1.192 and 6.12.118: a limits change restarts the
/// request, no early stop at the policy's ends, and in 6.12.118 the steps lost to a long idle
/// taken at low load only; conservative.rs).
#[test]
fn the_kernels_conservative_decides_as_the_built_in_one() {
    const CS_CASES: &[(&str, &str, &str)] = &[
        ("skylake-e3-1240v5", "", "periodic:threads=2,run_us=8000,period_us=40000"),
        ("skylake-e3-1240v5", "freq_step=20", "dbench4:clients=2"),
        ("juno-r2", "", "periodic:threads=2,run_us=20000,period_us=100000"),
        ("pixel6", "down_threshold=40", "periodic:threads=3,run_us=5000,period_us=30000"),
    ];
    for (tree, version) in trees() {
        let file = format!("{tree}/drivers/cpufreq/cpufreq_conservative.c");
        let Ok(text) = std::fs::read_to_string(&file) else {
            eprintln!("not run: {file} is not in the tree");
            continue;
        };
        if let Some(rule) = conservative_rule_of_an_unknown_update(&text, &version) {
            eprintln!("{version}: {file}: {rule}, from a stable update the built-in does not know: not compared");
            continue;
        }
        let mut compared = 0;
        for (platform, keys, workload) in CS_CASES {
            let sep = if keys.is_empty() { "" } else { "," };
            let ours =
                choices(&decisions(platform, &format!("conservative:kernel={version}{sep}{keys}"), workload, 3.0, 1));
            let theirs = choices(&decisions(platform, &format!("kernel:{file}{sep}{keys}"), workload, 3.0, 1));
            assert!(ours.len() > 10, "{platform} {workload}: only {} decisions", ours.len());
            assert_eq!(ours, theirs, "{version} {platform} {keys} {workload}");
            compared += ours.len();
        }
        eprintln!("{version}: conservative, {compared} decisions compared, all equal");
    }
}
