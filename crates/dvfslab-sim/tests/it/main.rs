//! The simulator's integration tests, built as one binary with a module per area: one link of
//! the simulator instead of one per file. Run one area with a filter, e.g.
//! `cargo test --release -p dvfslab-sim --test it fuzz::`.

mod common;

mod driver_powernv;
mod eevdf;
mod fuzz;
mod governors_dbs;
mod governors_intel_pstate;
mod governors_schedutil;
mod groups;
mod hetero;
mod kernel_governor;
mod load_balance;
mod objects;
mod robustness;
mod rtapp;
mod scenarios;
mod sched_costs;
mod trace_read;
mod vcpu_pack;
mod vcpu_wake;
mod vm_exits;
mod wake_placement;
mod workloads_compute;
mod workloads_net;
