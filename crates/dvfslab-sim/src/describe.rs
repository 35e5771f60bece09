//! A platform's layout as JSON, for `dvfslab platforms NAME`.

use serde_json::{json, Value};

use crate::driver::Driver;
use crate::governor::margins;
use crate::kernel::{default_transition_delay_us, KernelVersion};
use crate::platform::Platform;

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
            // schedutil's default rate limit for the default kernel and driver (§2.8).
            let rate_limit_us =
                driver.map(|d| default_transition_delay_us(KernelVersion::DEFAULT, d.transition_delay_us(), latency));
            // The margins series' default response_time_ms per PELT half-life (§8.6, v2).
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
        "clusters": clusters,
        "policies": policies,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
        // scmi reports 1450 µs: 1.5 × on the default kernel.
        assert_eq!(pol["rate_limit_us"], json!(2175));
        // Juno's big cluster: 1.0 / 1.2 GHz → capacity 853 at the second-highest OPP.
        assert_eq!(pol["response_time_ms_default"]["32"], json!(crate::pelt::approximate_runtime_steps(854, 0)));
    }
}
