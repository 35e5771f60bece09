//! A platform's layout as JSON, for `dvfslab platforms NAME`.

use serde_json::{json, Value};

use crate::driver::Driver;
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
            json!({
                "policy": i,
                "cpus": pol.cpus,
                "cluster": p.cluster(pol.cluster).id,
                "capacity": p.cpus[pol.cpus[0]].cap_orig,
                "min_khz": q.min_khz,
                "base_khz": q.base_khz,
                "max_khz": q.max_khz,
                "frequencies_khz": driver.map(|d| d.table_khz(p, pol.cluster)),
                "transition_latency_ns": latency,
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
