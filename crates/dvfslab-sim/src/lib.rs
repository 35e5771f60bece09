//! dvfslab-sim: a discrete-event simulator of how Linux picks CPU frequencies.
//!
//! One simulation is a platform preset, a governor configuration, a workload and a seed:
//!
//! ```no_run
//! use dvfslab_sim::{simulate, SimConfig};
//! let text = std::fs::read_to_string("haswell-e5-2670v3-2s.json").unwrap();
//! let cfg = SimConfig::new("performance", "cpu-bound:threads=8").duration_ns(Some(1_000_000_000));
//! let result = simulate(&text, "haswell", &cfg).unwrap();
//! println!("{}", result.summary.avg_package_w);
//! ```

// Index loops over CPUs, cores and domains mirror how the kernel walks them; keep them.
#![allow(clippy::needless_range_loop)]

pub mod bench;
pub mod describe;
pub mod engine;
pub mod error;
pub mod governor;
pub mod hw;
pub mod kernel;
pub mod machine;
pub mod observe;
pub mod result;
pub mod sched;
pub mod sim;
pub mod spec;
pub mod trace;
pub mod workload;

pub use error::{Result, SimError};
pub use hw::platform::Platform;
pub use result::SimResult;
pub use sim::{Sim, SimConfig};

/// Parse the platform preset `platform_json` (named `source` in errors) and run one simulation.
pub fn simulate(platform_json: &str, source: &str, cfg: &SimConfig) -> Result<SimResult> {
    let plat = Platform::from_json(platform_json, source)?;
    Sim::new(plat, cfg)?.run()
}
