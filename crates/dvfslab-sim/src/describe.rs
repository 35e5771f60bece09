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
                "idle_states": c.idle_states.iter().map(|s| s.name.clone()).collect::<Vec<_>>(),
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
    fn pixel6_policies_carry_rate_limit_and_response_time_defaults() {
        let text = include_str!("../../../python/dvfslab/data/platforms/pixel6.json");
        let d = describe(&Platform::from_json(text, "pixel6").unwrap());
        let pols = d["policies"].as_array().unwrap();
        let caps: Vec<u64> = pols.iter().map(|p| p["capacity"].as_u64().unwrap()).collect();
        assert_eq!(caps, [160, 498, 1024]);
        assert_eq!(pols[1]["cpus"], json!([4, 5]));
        // cpufreq-dt reports 500 µs: 1.5 × latency on the default (6.18) kernel.
        assert!(pols.iter().all(|p| p["rate_limit_us"] == json!(750)));
        // §8.6, v2 defaults published for Pixel 6: 8/29/155 ms at 32 ms, 4/15/78 ms at 16 ms.
        let rt = |half: &str| -> Vec<u64> {
            pols.iter().map(|p| p["response_time_ms_default"][half].as_u64().unwrap()).collect()
        };
        assert_eq!(rt("32"), [8, 29, 155]);
        assert_eq!(rt("16"), [4, 15, 78]);
        assert_eq!(rt("8"), [2, 8, 39]);
        // The fields it had keep their place.
        for key in ["policy", "cluster", "min_khz", "max_khz", "frequencies_khz", "transition_latency_ns"] {
            assert!(pols[0].get(key).is_some(), "{key}");
        }
    }
}
