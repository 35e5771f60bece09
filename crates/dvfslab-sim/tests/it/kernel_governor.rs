//! The kernel's own schedutil (`kernel:TREE`, built against the shim) against the built-in
//! one, decision for decision, where a kernel tree is at hand: DVFSLAB_KERNEL_SRC names one
//! or more trees (separated by ':'), each compared at its own version. Without it these tests
//! say so and check nothing: the repository ships no kernel source.

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
                makefile
                    .lines()
                    .find_map(|l| {
                        l.split_once('=').filter(|(k, _)| k.trim() == name).map(|(_, v)| v.trim().to_string())
                    })
                    .expect("VERSION and PATCHLEVEL")
            };
            (tree.to_string(), format!("{}.{}", field("VERSION"), field("PATCHLEVEL")))
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

#[test]
fn the_kernels_schedutil_decides_as_the_built_in_one() {
    for (tree, version) in trees() {
        let (mut compared, mut boosted) = (0, 0);
        for (platform, keys, workload) in CASES {
            let sep = if keys.is_empty() { "" } else { "," };
            let kernel = format!("kernel:{tree}{sep}{keys}");
            let builtin = format!("schedutil:kernel={version}{sep}{keys}");
            let ours = choices(&decisions(platform, &builtin, workload, 3.0, 1));
            let kernel_log = decisions(platform, &kernel, workload, 3.0, 1);
            boosted += kernel_log.iter().filter(|d| d.inputs.contains(&("iowait", 1.0))).count();
            let theirs = choices(&kernel_log);
            assert!(ours.len() > 20, "{platform} {workload}: only {} decisions", ours.len());
            if let Some(i) = (0..ours.len().max(theirs.len())).find(|&i| ours.get(i) != theirs.get(i)) {
                panic!(
                    "{version} {platform} {keys} {workload}: decision {i} differs: built-in {:?}, kernel {:?}",
                    ours.get(i),
                    theirs.get(i)
                );
            }
            compared += ours.len();
        }
        // The set exercises the iowait boost, not only the utilisation path.
        assert!(boosted > 0, "no decision followed an I/O wake-up");
        eprintln!("{version}: {compared} decisions compared, all equal ({boosted} after an I/O wake-up)");
    }
}
