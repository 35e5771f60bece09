//! End-to-end scenarios of the simulator (one binary, one module per scenario).

mod common;

#[test]
fn smoke() {
    let r = common::run("haswell-e5-2670v3-2s", "performance", "cpu-bound:threads=8", 2.0, 0);
    println!("{}", serde_json::to_string_pretty(&r.summary).unwrap());
}
