//! Every estimated ([EST]) parameter of the workload models, in one place, each with its
//! source or the way to calibrate it (spec/workloads.md). Models read them from here; the
//! validation work calibrates them here, never inside a model.
//!
//! Costs are in cycles at the platform's base frequency (work), or nanoseconds (device and
//! wall times), so that one number serves every machine.

/// Kernel-side costs shared by many models (spec/workloads.md §1.1), at a ~3–4 GHz reference.
pub mod kernel {
    /// Context switch, charged to the task switched in: 1–3 µs.
    pub const CONTEXT_SWITCH_CYCLES: f64 = 2.0e-6 * 3.0e9;
    /// fork(): 40–120 µs.
    pub const FORK_CYCLES: f64 = 80e-6 * 3.0e9;
    /// execve + dynamic link + page faults of a small binary: 200–600 µs.
    pub const EXEC_CYCLES: f64 = 400e-6 * 3.0e9;
    /// exit + reap: 20–60 µs.
    pub const EXIT_CYCLES: f64 = 40e-6 * 3.0e9;
}

// --- network and IPC benchmarks (tbench, dbench, netperf, hackbench, pipe-test, pgbench) ---

// --- compute, I/O and interactive benchmarks (kernbench, gitsource, nas, fio, iozone, ycsb,
// --- ffmpeg, file reads, specpower, freq-response, step-load, speedometer, uibench) ---
