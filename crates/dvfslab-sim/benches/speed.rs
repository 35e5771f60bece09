//! `cargo bench -p dvfslab-sim`: the fixed speed scenarios of `dvfslab bench`, without Python.

fn main() {
    let seconds: Option<f64> = std::env::var("DVFSLAB_BENCH_SECONDS").ok().and_then(|s| s.parse().ok());
    for scenario in dvfslab_sim::bench::SCENARIOS {
        let seconds = seconds.unwrap_or(scenario.default_seconds);
        let path =
            format!("{}/../../python/dvfslab/data/platforms/{}.json", env!("CARGO_MANIFEST_DIR"), scenario.platform);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let r = dvfslab_sim::bench::run(scenario, &text, seconds).expect("the scenario runs");
        println!("{}", serde_json::to_string_pretty(&r).expect("json"));
    }
}
