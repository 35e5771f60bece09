//! `cargo bench -p dvfslab-sim --bench speed`: the fixed speed scenarios of `dvfslab bench`,
//! without Python, as a table: the median of `DVFSLAB_BENCH_REPEAT` runs (default 3) of
//! `DVFSLAB_BENCH_SECONDS` simulated seconds each (default: the scenario's own), against the
//! scenario's goal. `DVFSLAB_BENCH_SCENARIO=NAME[,NAME]` runs only those.

use serde_json::Value;

fn main() {
    let seconds: Option<f64> = std::env::var("DVFSLAB_BENCH_SECONDS").ok().and_then(|s| s.parse().ok());
    let repeat: usize = std::env::var("DVFSLAB_BENCH_REPEAT").ok().and_then(|s| s.parse().ok()).unwrap_or(3).max(1);
    let only = std::env::var("DVFSLAB_BENCH_SCENARIO").ok();
    println!(
        "{:<12} {:>11} {:>8} {:>10} {:>12} {:>13}  goal",
        "scenario", "events", "sim s", "wall s", "events/s", "sim s/wall s"
    );
    for scenario in dvfslab_sim::bench::SCENARIOS {
        if only.as_deref().is_some_and(|o| !o.split(',').any(|n| n == scenario.name)) {
            continue;
        }
        let seconds = seconds.unwrap_or(scenario.default_seconds);
        let path =
            format!("{}/../../python/dvfslab/data/platforms/{}.json", env!("CARGO_MANIFEST_DIR"), scenario.platform);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let mut runs: Vec<Value> = (0..repeat)
            .map(|_| dvfslab_sim::bench::run(scenario, &text, seconds).expect("the scenario runs"))
            .collect();
        runs.sort_by(|a, b| a["wall_time_s"].as_f64().partial_cmp(&b["wall_time_s"].as_f64()).expect("finite"));
        let r = &runs[repeat / 2];
        let f = |key: &str| r[key].as_f64().unwrap_or(f64::NAN);
        let reached = if scenario.goal_unit == "events/s" { f("events_per_s") } else { f("sim_s_per_wall_s") };
        println!(
            "{:<12} {:>11} {:>8.3} {:>10.3} {:>11.2}M {:>13.3}  {} {} ({})",
            scenario.name,
            r["events"],
            f("sim_time_s"),
            f("wall_time_s"),
            f("events_per_s") / 1e6,
            f("sim_s_per_wall_s"),
            scenario.goal,
            scenario.goal_unit,
            if reached >= scenario.goal { "reached" } else { "not reached" },
        );
    }
}
