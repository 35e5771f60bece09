//! A platform's layout as JSON, for `dvfslab platforms NAME`.

use serde_json::{json, Value};

use crate::governor::margins;
use crate::hw::driver::Driver;
use crate::hw::platform::Platform;
use crate::kernel::{default_transition_delay_us, KernelVersion};

pub fn describe(p: &Platform) -> Value {
    let f = &p.file;
    let driver = Driver::default_for(p).ok();
    let policies: Vec<Value> = p
        .policies
        .iter()
        .enumerate()
        .map(|(i, pol)| {
            let q = &p.cluster(pol.cluster).frequency;
            let latency = driver.and_then(|d| d.transition_latency_ns(p, pol.cluster));
            let table = driver.map_or_else(|| q.pstates_khz.clone(), |d| d.table_khz(p, pol.cluster));
            let cap = p.cpus[pol.cpus[0]].cap_orig;
            // schedutil's default rate limit for the default kernel and driver (kernel.rs).
            let rate_limit_us =
                driver.map(|d| default_transition_delay_us(KernelVersion::DEFAULT, d.transition_delay_us(), latency));
            // The margins series' default response_time_ms per PELT half-life (v2; margins.rs).
            let response: serde_json::Map<String, Value> = [(32, 0), (16, 1), (8, 2)]
                .iter()
                .map(|&(half_life_ms, lshift)| {
                    (half_life_ms.to_string(), json!(margins::default_response_time_ms(&table, cap, lshift)))
                })
                .collect();
            json!({
                "policy": i,
                "cpus": pol.cpus,
                "cluster": p.cluster(pol.cluster).id,
                "capacity": cap,
                "min_khz": q.min_khz,
                "base_khz": q.base_khz,
                "max_khz": q.max_khz,
                "frequencies_khz": driver.map(|d| d.table_khz(p, pol.cluster)),
                "cpuinfo_max_khz": driver.map(|d| d.cpuinfo_max_khz(p, pol.cluster, KernelVersion::DEFAULT)),
                "transition_latency_ns": latency,
                "rate_limit_us": rate_limit_us,
                "response_time_ms_default": response,
            })
        })
        .collect();
    let clusters: Vec<Value> = f
        .clusters
        .iter()
        .enumerate()
        .map(|(i, c)| {
            json!({
                "id": c.id,
                "cores_per_package": c.cores_per_package,
                "capacity_dmips_mhz": c.capacity_dmips_mhz,
                "turbo_limit_khz_by_active_cores": p.turbo_limit_khz[i],
                "idle_states": c.idle_states,
            })
        })
        .collect();
    json!({
        "id": f.id,
        "name": f.name,
        "description": f.description,
        "vendor": format!("{:?}", f.vendor).to_lowercase(),
        "packages": p.packages.len(),
        "cores": p.cores.len(),
        "cpus": p.ncpus(),
        "threads_per_core": f.topology.threads_per_core,
        "llcs": p.llcs.len(),
        "driver": f.defaults.driver,
        "hz": f.defaults.hz,
        "transition_latency": transition_latencies(p),
        "cpuid": f.cpuid.map(|id| format!("family {} model {}", id.family, id.model)),
        "cppc": f.cppc.map(|c| {
            let pref = if c.preferred_cores { ", preferred cores" } else { "" };
            format!("highest_perf {}, nominal_perf {}{pref}", c.highest_perf, c.nominal_perf)
        }),
        "clusters": clusters,
        "policies": policies,
        "uncertain": p.uncertain,
    })
}

/// The preset's transition latency per driver, as the drivers report it ("acpi-cpufreq 0 us,
/// amd-pstate 20 us"; acpi-cpufreq's is its `_PSS` value after the driver's 20 µs FFH cap).
fn transition_latencies(p: &Platform) -> String {
    let mut parts: Vec<String> = Vec::new();
    for (ci, c) in p.file.clusters.iter().enumerate() {
        for name in c.frequency.transition_latency_ns.keys() {
            let reported = match Driver::parse(name) {
                Ok(d) => d.transition_latency_ns(p, ci),
                Err(_) => p.transition_latency_ns(ci, name),
            };
            let text = match reported {
                Some(ns) => format!("{name} {} us", ns as f64 / 1000.0),
                None => format!("{name} unknown"),
            };
            if !parts.contains(&text) {
                parts.push(text);
            }
        }
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `dvfslab platforms epyc7742-2s` shows acpi-cpufreq's _PSS latency (0: the firmware gives
    /// none) and the CPPC values behind the AMD invariance reference.
    #[test]
    fn x86_presets_show_their_pss_latency_and_cppc() {
        let text = include_str!("../../../python/dvfslab/data/platforms/epyc7742-2s.json");
        let d = describe(&Platform::from_json(text, "epyc7742-2s").unwrap());
        assert_eq!(d["transition_latency"], json!("acpi-cpufreq 0 us, amd-pstate 20 us"));
        assert_eq!(d["cppc"], json!("highest_perf 166, nominal_perf 110"));
        assert_eq!(d["cpuid"], json!("family 23 model 49"));
        assert_eq!(d["policies"][0]["rate_limit_us"], json!(1000));
    }

    #[test]
    fn policies_keep_their_fields_and_gain_rate_limit_and_response_time() {
        let text = include_str!("../../../python/dvfslab/data/platforms/juno-r2.json");
        let d = describe(&Platform::from_json(text, "juno-r2").unwrap());
        // Policies are numbered in CPU order: policy0 is the LITTLE cluster's (CPU 0), policy1
        // the big one's (CPUs 1-2).
        let pol = &d["policies"][1];
        assert_eq!(pol["cpus"], json!([1, 2]));
        for key in ["policy", "cpus", "cluster", "capacity", "min_khz", "max_khz", "frequencies_khz"] {
            assert!(pol.get(key).is_some(), "{key}");
        }
        assert_eq!(d["transition_latency"], json!("scmi 1450 us"));
        // scmi reports 1450 µs: 1.5 × on the default kernel.
        assert_eq!(pol["rate_limit_us"], json!(2175));
        // Juno's big cluster: 1.0 / 1.2 GHz → capacity 853 at the second-highest OPP.
        assert_eq!(pol["response_time_ms_default"]["32"], json!(crate::sched::pelt::approximate_runtime_steps(854, 0)));
    }

    /// The declared constants appear with their pointer, value, range, source and integer flag,
    /// in document order.
    #[test]
    fn declared_constants_are_listed_in_document_order() {
        let text = include_str!("../../../python/dvfslab/data/platforms/epyc7742-2s.json");
        let d = describe(&Platform::from_json(text, "epyc7742-2s").unwrap());
        let list = d["uncertain"].as_array().unwrap();
        let paths: Vec<&str> = list.iter().map(|c| c["path"].as_str().unwrap()).collect();
        assert_eq!(paths[0], "/topology/smt_throughput");
        assert_eq!(paths[paths.len() - 2..], ["/cppc/nominal_perf", "/sched_costs/switch_cycles"]);
        let nominal = &list[paths.len() - 2];
        assert_eq!(
            (&nominal["value"], &nominal["range"], &nominal["integer"]),
            (&json!(110.0), &json!([100.0, 120.0]), &json!(true))
        );
        assert!(nominal["source"].as_str().unwrap().contains("100..120"));
    }
}
