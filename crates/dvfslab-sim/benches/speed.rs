//! `cargo bench -p dvfslab-sim`: the fixed speed scenario of `dvfslab bench`, without Python.

fn main() {
    let path = format!("{}/../../python/dvfslab/data/platforms/haswell-e5-2670v3-2s.json", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("the haswell preset");
    let seconds: f64 = std::env::var("DVFSLAB_BENCH_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(60.0);
    let r = dvfslab_sim::bench::run(&text, seconds).expect("the scenario runs");
    println!("{}", serde_json::to_string_pretty(&r).expect("json"));
}
