//! Stamp the bindings with a digest of the simulator's sources (its Rust, and the C of the
//! kernel governors' shim), so that a results store never reuses runs made by a different
//! simulator (the run key includes `_core.version()`).

use std::path::{Path, PathBuf};

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs" || e == "c" || e == "h") {
            out.push(path);
        }
    }
}

fn main() {
    // Cargo's variable as it runs this script, not as it compiled it (`env!`): a compiled build
    // script is reused for a checkout elsewhere, whose sources the baked-in path would miss.
    let manifest_dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let sim = Path::new(&manifest_dir).join("../dvfslab-sim/src");
    println!("cargo:rerun-if-changed={}", sim.display());
    let mut files = Vec::new();
    sources(&sim, &mut files);
    files.sort();
    // A digest of no sources would stamp every build alike, and stores would reuse stale runs.
    assert!(!files.is_empty(), "no simulator sources under {}", sim.display());
    // FNV-1a over relative paths and contents: stable across machines and Rust versions.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut feed = |bytes: &[u8]| {
        for &b in bytes {
            hash ^= b as u64;
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    };
    for f in &files {
        feed(f.strip_prefix(&sim).unwrap_or(f).to_string_lossy().as_bytes());
        feed(&std::fs::read(f).unwrap_or_default());
    }
    println!("cargo:rustc-env=DVFSLAB_SIM_DIGEST={hash:016x}");
}
