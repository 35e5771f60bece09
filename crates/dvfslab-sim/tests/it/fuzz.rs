//! Property-based fuzzing of every parser that takes user input: spec strings (governor and
//! workload, built and run for a simulated millisecond), rt-app JSON, and platform presets.
//! rt-app documents run for a simulated millisecond too. Whatever the input, the answer is a value or an error: a panic fails the case.
//!
//! `PROPTEST_CASES` sets the number of cases per target (default 256, the same cases at every
//! test session); docs/robustness.md gives the command and result of a long run.

use crate::common;

use dvfslab_sim::spec::Knob;
use dvfslab_sim::workload::rtapp::RtApp;
use dvfslab_sim::{governor, workload, Platform, Sim, SimConfig};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};

const SMALL: &str = "skylake-e3-1240v5";

/// The cases of a test session are the same every time (a fixed seed), so a test run passes or
/// fails by the code alone; `PROPTEST_CASES` set (a long run) draws new ones each time, unless
/// `PROPTEST_RNG_SEED` fixes them.
fn config() -> Config {
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok());
    let rng_seed = match (cases, std::env::var("PROPTEST_RNG_SEED")) {
        (_, Ok(seed)) => RngSeed::Fixed(seed.parse().expect("PROPTEST_RNG_SEED: expected a number")),
        (Some(_), Err(_)) => RngSeed::Random,
        (None, Err(_)) => RngSeed::Fixed(0),
    };
    Config { cases: cases.unwrap_or(256), rng_seed, failure_persistence: None, ..Config::default() }
}

/// Run `governor` on `workload` for a simulated millisecond; an error is an answer, a panic not.
fn build_and_run(platform_json: &str, governor: &str, workload: &str) {
    let Ok(plat) = Platform::from_json(platform_json, "fuzz.json") else { return };
    let cfg = SimConfig {
        governor: governor.into(),
        workload: workload.into(),
        duration_ns: Some(1_000_000),
        ..SimConfig::default()
    };
    if let Ok(sim) = Sim::new(plat, &cfg) {
        let _ = sim.run();
    }
}

/// Values at and past every edge a knob can have.
fn edge_value() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec!["0", "-1", "1e-308", "1e-11", "1e308", "inf", "nan", "1.5", "", "0x10"])
            .prop_map(str::to_string),
        any::<f64>().prop_map(|v| v.to_string()),
        any::<i64>().prop_map(|v| v.to_string()),
        "[0-9.eE+-]{0,6}",
    ]
}

/// `name:key=value,...` over a registry: its names and knobs, values near and past the ranges.
fn spec_string(entries: Vec<(&'static str, Vec<Knob>)>) -> impl Strategy<Value = String> {
    prop::sample::select(entries).prop_flat_map(|(name, knobs)| {
        let names: Vec<String> = knobs.iter().map(|k| k.name.to_string()).chain(["x".to_string()]).collect();
        let bounds: Vec<String> =
            knobs.iter().flat_map(|k| [k.min, k.max, (k.min + k.max) / 2.0]).map(|v| v.to_string()).collect();
        let value = prop_oneof![prop::sample::select(bounds), edge_value()];
        prop::collection::vec((prop::sample::select(names), value), 0..4).prop_map(move |pairs| {
            let kv: Vec<String> = pairs.iter().map(|(k, v)| format!("{k}={v}")).collect();
            if kv.is_empty() {
                name.to_string()
            } else {
                format!("{name}:{}", kv.join(","))
            }
        })
    })
}

fn workload_specs() -> impl Strategy<Value = String> {
    let entries = workload::REGISTRY
        .iter()
        .map(|w| (w.name, w.knobs.iter().chain(workload::COMMON_KNOBS).cloned().collect()))
        .collect();
    spec_string(entries)
}

fn governor_specs() -> impl Strategy<Value = String> {
    let entries = governor::REGISTRY
        .iter()
        .map(|g| (g.name, g.knobs.iter().chain(governor::SYSTEM_KNOBS).cloned().collect()))
        .collect();
    spec_string(entries)
}

/// rt-app documents: tasks with events from rt-app's vocabulary and values of every kind.
fn rtapp_text() -> impl Strategy<Value = String> {
    let key = prop::sample::select(vec![
        "run",
        "runtime",
        "sleep",
        "timer",
        "barrier",
        "lock",
        "unlock",
        "wait",
        "signal",
        "broadcast",
        "sync",
        "suspend",
        "resume",
        "fork",
        "yield",
        "instance",
        "loop",
        "cpus",
        "phases",
        "priority",
        "policy",
        "delay",
    ]);
    let value = prop_oneof![
        any::<i32>().prop_map(|v| v.to_string()),
        prop::sample::select(vec!["-1", "0", "15000", "100000000", "1e8", "0.5", "null", "[]", "{}", "[0, 99]"])
            .prop_map(str::to_string),
        prop::sample::select(vec!["\"a\"", "\"b\"", "\"m\"", "{\"ref\": \"t\", \"period\": 1000}"])
            .prop_map(str::to_string),
    ];
    let event = (key, value).prop_map(|(k, v)| format!("\"{k}\": {v}"));
    let task = prop::collection::vec(event, 0..6).prop_map(|evs| format!("{{{}}}", evs.join(", ")));
    (prop::collection::vec(task, 1..4), any::<bool>()).prop_map(|(tasks, global)| {
        let names = ["a", "b", "c"];
        let body: Vec<String> = tasks.iter().zip(names).map(|(t, n)| format!("\"{n}\": {t}")).collect();
        let global = if global { ", \"global\": {\"duration\": 1, \"calibration\": \"CPU0\"}" } else { "" };
        format!("{{\"tasks\": {{{}}}{global}}}", body.join(", "))
    })
}

/// A shipped preset with one field replaced by an odd value (or removed), as JSON text.
fn mutated_preset() -> impl Strategy<Value = String> {
    let presets = ["skylake-e3-1240v5", "juno-r2", "power8-powernv", "pixel6"];
    let odd = prop::sample::select(vec!["[]", "{}", "null", "\"\"", "0", "-1", "1e308", "-1e-9", "[0]", "true"]);
    (prop::sample::select(presets.to_vec()), any::<prop::sample::Index>(), odd, any::<bool>()).prop_map(
        |(id, at, odd, remove)| {
            let mut doc: serde_json::Value = serde_json::from_str(&common::preset(id)).unwrap();
            let paths = leaf_paths(&doc, "");
            let path = at.get(&paths).clone();
            let replacement = if remove { serde_json::Value::Null } else { serde_json::from_str(odd).unwrap() };
            if let Some(slot) = doc.pointer_mut(&path) {
                *slot = replacement;
            }
            doc.to_string()
        },
    )
}

/// JSON pointers to every value of `v` (arrays by their first three items).
fn leaf_paths(v: &serde_json::Value, at: &str) -> Vec<String> {
    let mut out = vec![at.to_string()];
    match v {
        serde_json::Value::Object(m) => m.iter().for_each(|(k, c)| out.extend(leaf_paths(c, &format!("{at}/{k}")))),
        serde_json::Value::Array(a) => {
            a.iter().take(3).enumerate().for_each(|(i, c)| out.extend(leaf_paths(c, &format!("{at}/{i}"))))
        }
        _ => {}
    }
    out
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn any_text_is_a_spec_or_an_error(text in "\\PC{0,40}") {
        let _ = dvfslab_sim::spec::Spec::parse(&text, "workload");
        build_and_run(&common::preset(SMALL), "performance", &text);
    }

    #[test]
    fn any_workload_spec_runs_or_is_refused(spec in workload_specs()) {
        build_and_run(&common::preset(SMALL), "schedutil", &spec);
    }

    #[test]
    fn any_governor_spec_runs_or_is_refused(spec in governor_specs()) {
        build_and_run(&common::preset(SMALL), &spec, "periodic:threads=2");
    }

    #[test]
    fn any_rtapp_document_runs_or_is_refused(text in rtapp_text()) {
        let cfg = SimConfig { governor: "schedutil".into(), duration_ns: Some(1_000_000), ..SimConfig::default() };
        let _ = workload::rtapp::simulate(&common::preset("juno-r2"), "juno-r2", &text, "fuzz.json", &cfg);
    }

    #[test]
    fn any_text_as_rtapp_json_is_refused_or_read(text in "[{}\\[\\]\":,0-9 a-z.\\-\\\\]{0,80}") {
        let _ = RtApp::parse(&text, "rt-app noise.json");
    }

    #[test]
    fn any_mutated_preset_is_read_or_refused(json in mutated_preset()) {
        build_and_run(&json, "schedutil", "periodic:threads=2");
    }
}
